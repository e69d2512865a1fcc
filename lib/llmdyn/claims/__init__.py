"""A paper's claim as data (measure, rule, interval, verdict), its rendering, and twin-seed spreads.

May import: ``stats``, ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["breaks", "claim", "findings", "glue_keys", "headlines", "measure", "multiplicity",
                "pages", "render", "review", "robustness", "twin_seeds", "units"],
    submod_attrs={
        "claim": ["Grade", "GRADES", "JUDGED", "PAPERS", "Measure", "Op", "Rule",
                  "at_least", "above", "below", "at_most", "within", "Verdict", "slug", "Claim"],
        "measure": ["Kind", "STATISTIC_KINDS", "interval_estimate"],
        "render": ["COLUMNS", "SCORECARD_KEY", "claims_table", "scorecard_html", "glue_values",
                   "publish", "part_source",
                   "split_grid", "split_flips", "refuse_broken"],
        "breaks": ["read_glued", "rule_breaks", "grade_breaks", "guard_breaks"],
        "units": ["UNITS", "keyed", "per_cluster"],
        "review": ["Review", "review"],
        "robustness": ["across", "split_identified"],
        "multiplicity": ["holm"],
        "twin_seeds": ["T", "spread_indices", "spread_picks", "SeedSpread", "rule_text",
                       "seed_table"],
    },
)
