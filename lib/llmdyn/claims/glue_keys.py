"""The glue keys of one claim: its numbers, its units, its interval's coverage, its review.

`llmdyn.claims.render` documents the keys (its module docstring) and glues them at publish;
the summary pages and the referee's recomputation (``tools/referee.py``) read them back.
"""

from __future__ import annotations

import json
import math

from llmdyn.claims.claim import Claim
from llmdyn.claims.review import Review
from llmdyn.claims.robustness import moved_rules
from llmdyn.stats import coverage


def glue_values(claim: Claim, seen: Review | None = None) -> dict[str, float | str]:
    """The glue keys of one claim and their values (numbers as floats, text as str)."""
    est = claim.measure.estimate
    nan = float("nan")
    return {**_basic(claim, est, nan), **(_reviewed(claim, seen) if seen is not None else {})}


def _basic(claim: Claim, est, nan: float) -> dict[str, float | str]:
    """The glue keys every claim has (see the module docstring)."""
    recipe = claim.measure.recipe
    return {f"{claim.id}_value": est.value if est else nan,
            f"{claim.id}_lo": est.lo if est else nan,
            f"{claim.id}_hi": est.hi if est else nan,
            f"{claim.id}_verdict": claim.verdict.text(),
            f"{claim.id}_rule": claim.rule_text,
            f"{claim.id}_result": claim.result_text(),
            f"{claim.id}_kind": claim.measure.kind if est else "none",
            f"{claim.id}_op": claim.rule.op if claim.rule else "",
            f"{claim.id}_threshold": claim.rule.threshold if claim.rule else nan,
            f"{claim.id}_tolerance": claim.rule.tolerance if claim.rule else nan,
            f"{claim.id}_n": est.n if est else 0,
            f"{claim.id}_unit": claim.measure.sampling_unit,
            f"{claim.id}_method": est.method if est else "",
            f"{claim.id}_units": json.dumps({"ids": list(claim.measure.unit_ids),
                                             "samples": [list(x) for x in claim.measure.samples]},
                                            allow_nan=False) if _finite(claim) else "{}",
            f"{claim.id}_statistic": json.dumps({"kind": recipe.kind, "paired": recipe.paired,
                                                 "signed": recipe.signed})
            if recipe is not None else "{}",
            f"{claim.id}_coverage": coverage_text(claim)}


def coverage_text(claim: Claim) -> str:
    """"95 % interval; 93.5 % simulated coverage at n = 20 (data/coverage.csv)", or ""."""
    est, recipe = claim.measure.estimate, claim.measure.recipe
    if est is None or not est.has_interval:
        return ""
    level = f"{round(100 * est.level)} % interval"
    kind = _coverage_kind(claim) if recipe is not None else None
    found = coverage.simulated(kind, est.n, est.method) if kind else None
    if found is None:
        return f"{level}; its coverage at this n was not simulated"
    size = max(s for s in coverage.SIZES if s <= est.n)
    return (f"{level}; {100 * found:.1f} % simulated coverage at n = {size} "
            "(data/coverage.csv)")


def _coverage_kind(claim: Claim) -> str:
    """The coverage table's kind of a claim's statistic (as `interval_estimate` maps it)."""
    recipe = claim.measure.recipe
    if recipe.kind == "difference" and not recipe.paired:
        return "independent_difference"
    return recipe.kind


def _reviewed(claim: Claim, seen: Review) -> dict[str, float | str]:
    """The Holm and robustness glue keys of one claim (see the module docstring)."""
    out: dict[str, float | str] = {}
    adj = seen.adjusted.get(claim.id)
    if adj is not None and not adj.reason:
        out.update({f"{claim.id}_holm": adj.grade, f"{claim.id}_holm_level": adj.level,
                    f"{claim.id}_holm_lo": adj.lo, f"{claim.id}_holm_hi": adj.hi,
                    f"{claim.id}_holm_m": adj.m})
    rob = seen.robustness.get(claim.id)
    if rob is not None:
        out[f"{claim.id}_robustness"] = rob.text()
        out[f"{claim.id}_specifications"] = json.dumps(
            _specifications(claim, seen), allow_nan=True)
    return out


def _specifications(claim: Claim, seen: Review) -> list[dict[str, object]]:
    """Each specification as data: its name, grade, rule and, for a variant, its values."""
    rob = seen.robustness[claim.id]
    out: list[dict[str, object]] = [{"name": name, "op": rule.op, "threshold": rule.threshold,
                                     "tolerance": rule.tolerance}
                                    for name, rule in moved_rules(claim)
                                    if claim.measure.kind == "estimate"]
    for name, variant in seen.variants.get(claim.id, {}).items():
        values = _basic(variant, variant.measure.estimate, float("nan"))
        out.append({"name": name, "id": variant.id,
                    **{k.removeprefix(f"{variant.id}_"): values[k] for k in values
                       if k.endswith(("_op", "_threshold", "_tolerance", "_lo", "_hi",
                                      "_value", "_kind", "_method", "_units", "_statistic",
                                      "_n"))}})
    grades = {s.name: s.grade for s in rob.specifications}
    for spec in out:
        spec["grade"] = grades[spec["name"]]
    if rob.by_construction:
        out.append({"name": "not identified", "reason": rob.by_construction})
    return out


def _finite(claim: Claim) -> bool:
    """Whether a claim's per-unit values can be written as JSON (all finite)."""
    return all(math.isfinite(x) for sample in claim.measure.samples for x in sample)
