"""Claims as data: bootstrap intervals with known answers, every rule, verdicts, the renderer."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.claims.breaks import grade_breaks, read_glued, rule_breaks
from llmdyn.claims.claim import Claim, Measure, Rule, above, at_least, at_most, below, within
from llmdyn.claims.render import (
    RULE_ONCE,
    claims_table,
    glue_values,
    part_source,
    publish,
    scorecard_html,
)
from llmdyn.claims.review import review
from llmdyn.runner.build import REPO
from llmdyn.stats import bootstrap, intervals

# --- bootstrap: known answers ---------------------------------------------------------------

def test_constant_sample_has_a_point_interval():
    est = bootstrap.bootstrap(bootstrap.mean, np.full(7, 3.5))
    assert (est.value, est.lo, est.hi, est.n) == (3.5, 3.5, 3.5, 7)


def test_two_point_mean_covers_both_ends():
    # resampled means of [0, 1] are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4
    est = bootstrap.bootstrap(bootstrap.mean, [0.0, 1.0], n_resamples=4000)
    assert est.value == 0.5 and est.lo == 0.0 and est.hi == 1.0


def test_mean_interval_matches_normal_theory():
    x = np.random.default_rng(1).normal(10.0, 2.0, 400)
    est = bootstrap.bootstrap(bootstrap.mean, x, n_resamples=4000)
    half = 1.96 * x.std(ddof=1) / np.sqrt(x.size)
    assert est.lo == pytest.approx(x.mean() - half, abs=0.1 * half)
    assert est.hi == pytest.approx(x.mean() + half, abs=0.1 * half)


def test_seeded_and_reproducible():
    x = np.random.default_rng(2).normal(size=30)
    a = bootstrap.bootstrap(bootstrap.mean, x, seed=5)
    assert a == bootstrap.bootstrap(bootstrap.mean, x, seed=5)
    assert a != bootstrap.bootstrap(bootstrap.mean, x, seed=6)


def test_ratio_and_difference_of_means():
    a, b = np.array([2.0, 4, 6]), np.array([1.0, 1, 1])
    ratio = bootstrap.bootstrap(bootstrap.ratio_of_means, a, b)
    assert ratio.value == pytest.approx(4.0) and 2.0 <= ratio.lo <= ratio.hi <= 6.0
    diff = bootstrap.bootstrap(bootstrap.difference_of_means, a, a - 1.0)
    assert (diff.value, diff.lo, diff.hi) == pytest.approx((1.0, 1.0, 1.0))  # paired: exact


def test_unpaired_samples_may_differ_in_length():
    est = bootstrap.bootstrap(bootstrap.difference_of_means, [1.0, 1, 1], [0.0, 0],
                              paired=False)
    assert (est.value, est.lo, est.hi) == (1.0, 1.0, 1.0)
    with pytest.raises(LlmdynError, match="paired samples"):
        bootstrap.bootstrap(bootstrap.difference_of_means, [1.0, 1, 1], [0.0, 0])


def test_slope_and_r2_on_an_exact_line():
    x = np.arange(10.0)
    s = bootstrap.bootstrap(bootstrap.slope, x, 2 * x + 1)
    r = bootstrap.bootstrap(bootstrap.r2, x, 2 * x + 1)
    assert (s.value, s.lo, s.hi) == pytest.approx((2.0, 2.0, 2.0))
    assert (r.value, r.lo, r.hi) == pytest.approx((1.0, 1.0, 1.0))


def test_signed_r2_keeps_the_slope_sign():
    x = np.arange(10.0)
    assert bootstrap.signed_r2(x, 2 * x + 1) == pytest.approx(1.0)
    assert bootstrap.signed_r2(x, -3 * x) == pytest.approx(-1.0)
    y = np.array([0.0, 1, 0, 1])  # Pearson r = 1/sqrt(5) against 0..3
    assert bootstrap.signed_r2(np.arange(4.0), y) == pytest.approx(0.2)
    assert bootstrap.signed_r2(np.arange(4.0), -y) == pytest.approx(-0.2)


def test_medians_and_relative_iqr():
    a, b = np.array([[1.0, 2, 3, 4, 5]]), np.array([[0.0, 0, 1, 9, 9]])
    assert bootstrap.difference_of_medians(a, b)[0] == 2.0
    assert bootstrap.relative_iqr(a)[0] == pytest.approx((4 - 2) / 3)


def test_row_bootstrap_matches_the_vectorised_one():
    x = np.random.default_rng(3).normal(size=40)
    fast = bootstrap.bootstrap(bootstrap.mean, x, n_resamples=500, seed=4)
    rows = bootstrap.bootstrap_rows(np.mean, x, n_resamples=500, seed=4)
    assert (rows.value, rows.lo, rows.hi) == pytest.approx((fast.value, fast.lo, fast.hi))
    M = np.ones((6, 3)) * np.arange(6)[:, None]  # [prompt, layer]: row means 0..5
    est = bootstrap.bootstrap_rows(lambda a: a.std(0).mean(), M)
    assert est.value == pytest.approx(np.arange(6).std()) and est.lo <= est.hi


def test_one_item_gives_no_interval():
    est = bootstrap.bootstrap(bootstrap.mean, [4.0])
    assert est.value == 4.0 and not est.has_interval and est.n == 1


def test_bad_inputs_name_the_argument():
    with pytest.raises(LlmdynError, match="level"):
        bootstrap.bootstrap(bootstrap.mean, [1.0, 2.0], level=1.5)
    with pytest.raises(LlmdynError, match="at least one value"):
        bootstrap.bootstrap(bootstrap.mean, [])


# --- rules and verdicts -----------------------------------------------------------------------

def _claim(measure, rule=None, id="c"):
    return Claim(id, "A", "§5.1", "a statement", "paper says", measure, rule)


def _interval(value, lo, hi, n=20):
    """A measure with a given interval (the rules' tests need no sampling)."""
    return Measure("x", bootstrap.Estimate(value, lo, hi, n, method="t"), sampling_unit="prompt")


@pytest.mark.parametrize("rule, interval, grade", [
    (at_least(2), (3.0, 2.9, 3.1), "holds"),
    (at_least(2), (2.3, 1.5, 3.0), "inconclusive"),  # estimate clears, interval crosses 2
    (at_least(2), (1.6, 0.9, 2.3), "inconclusive"),  # estimate misses, interval crosses 2
    (at_least(2), (1.05, 0.9, 1.2), "does not hold"),
    (at_most(0.6), (0.32, 0.3, 0.35), "holds"),
    (at_most(0.6), (0.53, 0.1, 1.0), "inconclusive"),
    (at_most(0.6), (0.9, 0.8, 1.0), "does not hold"),
    (within(0.25, 0.1), (0.25, 0.24, 0.26), "holds"),
    (within(0.25, 0.1), (0.28, 0.05, 0.5), "inconclusive"),
    (within(0.25, 0.01), (0.35, -1.0, 2.0), "inconclusive"),  # both ends miss, band inside
    (within(0.25, 0.1), (0.65, 0.6, 0.7), "does not hold"),
    (above(0), (0.6, 0.5, 0.7), "holds"),
    (above(0), (0.2, -0.5, 0.9), "inconclusive"),
    (above(0), (0.0, 0.0, 0.0), "does not hold"),  # strict: equal is not above
    (below(0), (-0.6, -0.7, -0.5), "holds"),
    (below(0), (-0.2, -0.9, 0.5), "inconclusive"),
    (below(0), (0.0, 0.0, 0.0), "does not hold"),
])
def test_every_rule_grades_three_ways(rule, interval, grade):
    assert rule.judge(_interval(*interval).estimate)[0] == grade
    if interval[2] > interval[1]:  # a zero-width interval is not graded at all (below)
        assert _claim(_interval(*interval), rule).verdict.grade == grade


def test_an_n_without_a_covering_interval_gets_no_verdict_with_the_reason():
    # data/coverage.csv: below n = 3 nothing is tested; at n = 8 no ratio interval covers
    small = _claim(Measure.mean([3.0, 3.1], "x", sampling_unit="prompt"),
                   at_least(2)).verdict
    assert small.grade == "no verdict" and "below the smallest n" in small.reason
    ratio = _claim(Measure.ratio(np.arange(1.0, 9), np.ones(8), "r", sampling_unit="run"),
                   at_least(2)).verdict
    assert ratio.grade == "no verdict" and "coverage" in ratio.reason


def test_threshold_is_inclusive_and_nan_never_clears():
    assert at_least(2).clears(2.0) and at_most(2).clears(2.0) and within(1, 0.5).clears(1.5)
    assert not at_least(2).clears(float("nan"))
    assert not above(2).clears(2.0) and not below(2).clears(2.0) and below(2).clears(1.9)
    assert "lies < 0.000" in below(0).sentence(Measure.mean([1.0, 2], "d"))


def test_facts_are_judged_on_the_value_and_name_the_papers_case():
    fact = _claim(Measure.fact(True, "top token is London", fmt="yes/no",
                               case="the UK prompt, Fig 8"), at_least(1))
    assert fact.verdict.grade == "holds" and fact.measure.kind == "fact"
    assert fact.result_text() == "top token is London: yes (a fact about the UK prompt, Fig 8)"
    assert fact.rule_text.startswith("a fact: holds when")
    assert _claim(Measure.fact(0.2, "p", case="c"), at_least(0.5)).verdict.grade \
        == "does not hold"
    with pytest.raises(LlmdynError, match="needs case="):
        Measure.fact(1.0, "top token", case=" ")
    with pytest.raises(LlmdynError, match="Measure.fact only"):
        Measure(quantity="x", estimate=bootstrap.Estimate(1.0, 0.5, 1.5, 3), case="c")


@pytest.mark.parametrize("measure", [
    Measure.single(5.0, "ratio over one prompt"),
    Measure.single(0.01, "p of a coefficient", n=70),  # a statistic without an interval
])
@pytest.mark.parametrize("rule", [at_least(2), at_most(2)])  # cleared and not cleared
def test_an_estimate_without_interval_gets_no_verdict(measure, rule):
    verdict = _claim(measure, rule).verdict
    assert measure.kind == "estimate" and verdict.grade == "no verdict"
    assert f"an estimate with no interval (n = {measure.estimate.n})" == verdict.reason


def test_missing_measures_and_comparisons():
    untestable = _claim(Measure.not_testable("R²", "needs 40 models"), at_least(0.5))
    assert untestable.verdict.text() == "not testable offline (needs 40 models)"
    assert _claim(Measure.not_run("x", "no compare model"), at_least(1)).verdict.grade \
        == "not run"
    assert _claim(Measure.mean([1.0, 2], "x")).verdict.grade == "for comparison"
    assert _claim(Measure.mean([np.nan, 1.0], "x"), at_least(0)).verdict.grade == "not run"


def test_measure_constructors():
    assert Measure.fraction([True, True, False, True], "f").estimate.value == 0.75
    assert Measure.median([1.0, 2, 10], "m").estimate.value == 2.0
    assert Measure.difference([3.0, 4], [1.0, 1], "d").estimate.value == 2.5
    assert Measure.ratio([3.0, 3], [1.0, 1.0, 1.0], "r", paired=False).estimate.value == 3.0
    assert Measure.slope([0.0, 1, 2], [1.0, 3, 5], "s").estimate.value == pytest.approx(2.0)
    assert Measure.r2([0.0, 1, 2], [1.0, 3, 5], "r").estimate.value == pytest.approx(1.0)


def test_empty_sample_is_not_run_and_any_statistic_works():
    empty = _claim(Measure.ratio([], [1.0], "share ratio", unit="×"), at_least(2))
    assert empty.verdict.text() == "not run (no values to measure)"
    x = np.random.default_rng(0).normal(size=120)
    spread = Measure.of(lambda a: a.max(-1) - a.min(-1), x, quantity="range")
    assert spread.estimate.value == pytest.approx(np.ptp(x)) and spread.estimate.method == "bca"
    assert spread.estimate.lo <= spread.estimate.hi <= np.ptp(x) + 1e-12
    few = Measure.of(lambda a: a.max(-1) - a.min(-1), x[:20], quantity="range")
    assert few.missing == "no verdict" and not few.estimate.has_interval  # BCa undercovers


def test_rule_sentences():
    m = Measure.ratio([4.0, 5], [1.0, 1], "trained/untrained ratio", fmt=".0f", unit="×")
    assert at_least(2).sentence(m) == ("holds when the 95 % interval of the trained/untrained "
                                       "ratio lies ≥ 2×; does not hold when it lies wholly on the "
                                       "other side; inconclusive when it straddles")
    band = Measure.mean([0.2, 0.3], "peak position", fmt=".2f")
    assert "within 0.10 of 0.25" in within(0.25, 0.1).sentence(band)
    assert at_most(1).sentence(Measure.fact(0.5, "p", case="c")) == \
        "a fact: holds when the p is ≤ 1.000"


def test_bad_rules_and_claims_are_rejected():
    with pytest.raises(LlmdynError, match="op"):
        Rule("==", 1.0)
    with pytest.raises(LlmdynError, match="tolerance"):
        Rule("within", 1.0)
    with pytest.raises(LlmdynError, match="id"):
        _claim(Measure.single(1, "x"), id="Bad Id")
    with pytest.raises(LlmdynError, match="paper"):
        Claim("c", "C", "§1", "s", "p", Measure.single(1, "x"))


# --- rendering ----------------------------------------------------------------------------------

CLAIMS = [
    _claim(Measure.ratio(np.tile([4.0, 5, 6, 5], 4), np.ones(16), "share ratio", fmt=".1f",
                         unit="×", detail="k = 30", sampling_unit="prompt"), at_least(2),
           id="coupled"),
    _claim(Measure.not_testable("R²", "needs many models"), at_least(0.5), id="r2_scores"),
    _claim(Measure.mean([0.5, 0.7], "m̃ with |A| pipes"), id="variant"),
]


def test_claims_table_rows_and_escaping():
    rule, blank, *md = claims_table(CLAIMS).splitlines()
    assert rule == RULE_ONCE and blank == ""  # the rule once, then each row's bound
    assert md[0] == "| claim | paper | this run | verdict | rule |"
    assert len(md) == 2 + len(CLAIMS)
    assert "share ratio: 5.0× [4.6×, 5.4×] (n = 16 prompts, linearised t interval); k = 30" \
        in md[2]
    assert md[2].endswith("| **holds** | ≥ 2.0× |")
    assert "**not testable offline (needs many models)**" in md[3]
    assert md[4].endswith("| **for comparison** | — |")
    assert r"\|A\|" in md[4] and all(line.count(" | ") == 4 for line in md[2:])


def test_scorecard_html_escapes_and_classes_rows():
    page = scorecard_html(CLAIMS)
    assert page.count("<tr class=") == 3 and 'class="verdict-holds"' in page
    assert '<td><span class="chip chip-holds" title="holds">holds</span></td>' in page
    assert ('<span class="chip chip-not-testable-offline" title="not testable offline">not '
            "testable offline</span> (needs many models)") in page
    stand_in = scorecard_html([replace(CLAIMS[0], stand_in="a suite trained here")])
    assert ">holds · stand-in</span>" in stand_in
    assert "m̃ with |A| pipes" in page and "<td>" in page
    assert scorecard_html([_claim(Measure.single(1, "a<b"), id="x")]).count("a&lt;b") == 1


def test_publish_glues_every_number_and_the_table():
    glued = {}
    shown = publish(CLAIMS, glue=lambda k, v, display: glued.__setitem__(k, v))
    assert glued["coupled_value"] == pytest.approx(5.0)
    assert glued["coupled_verdict"] == "holds"
    assert math.isnan(glued["r2_scores_value"])
    seen = review(CLAIMS)
    assert glued["scorecard"].data == scorecard_html(CLAIMS, seen)
    assert shown.data == claims_table(CLAIMS, seen)
    basic = ("value", "lo", "hi", "verdict", "rule", "result", "kind", "op", "threshold",
             "tolerance", "n", "unit", "method", "units", "statistic", "coverage")
    assert set(glue_values(CLAIMS[0])) == {f"coupled_{s}" for s in basic}
    assert set(glue_values(CLAIMS[0], seen)) == {f"coupled_{s}" for s in (
        *basic, "holm", "holm_level", "holm_lo", "holm_hi", "holm_m", "robustness",
        "specifications")}
    assert glued["coupled_coverage"] == ("95 % interval; 93.2 % simulated coverage at n = 16 "
                                         "(data/coverage.csv)")  # the ratio row of the table
    assert (glued["coupled_holm"], glued["coupled_holm_m"], glued["coupled_robustness"]) == \
        ("holds", 1, "robust")
    assert (glued["coupled_n"], glued["coupled_unit"], glued["coupled_method"]) == \
        (16, "prompt", "delta_t")
    assert json.loads(glued["coupled_units"])["samples"][1] == [1.0] * 16
    assert (glued["coupled_op"], glued["coupled_threshold"]) == (">=", 2.0)
    assert (glued["coupled_kind"], glued["r2_scores_kind"]) == ("estimate", "none")


def test_grade_breaks_checks_the_holm_grade_against_its_own_interval():
    values = {k: v for k, v in glue_values(CLAIMS[0], review(CLAIMS)).items()}
    assert grade_breaks(values) == []
    wrong = {**values, "coupled_holm_lo": 1.5}  # [1.5, 5.39] straddles 2: not "holds"
    assert grade_breaks(wrong) == ["coupled: Holm grade 'holds', its 95 % interval "
                                   "[1.5, 5.389147665429075] against >= 2.0 gives 'inconclusive'"]
    low = {**values, "coupled_holm_level": 0.9}
    assert grade_breaks(low)[0].startswith("coupled: Holm grade 'holds' read at level 0.9")


def test_rule_breaks_finds_a_verdict_on_an_estimate_without_interval():
    fine = [CLAIMS[0], _claim(Measure.fact(1, "top token is Paris", case="France"),
                              at_least(1), id="fact"), _claim(Measure.single(3.0, "r"),
                                                              at_least(2), id="one")]
    values = {k: v for c in fine for k, v in glue_values(c).items()}
    assert rule_breaks(values) == []
    # a verdict typed on an estimate with no interval (as an old chapter glued it) is caught
    assert rule_breaks({**values, "one_verdict": "holds"}) == ["one"]
    assert rule_breaks({"old_verdict": "inconclusive (n = 1)", "old_lo": math.nan}) == ["old"]


def test_grade_breaks_finds_grades_their_interval_does_not_give():
    rows = [_claim(_interval(*iv), rule, id=cid) for cid, iv, rule in (
        ("holds", (3.0, 2.9, 3.1), at_least(2)), ("straddles", (1.6, 0.9, 2.3), at_least(2)),
        ("misses", (1.0, 0.9, 1.2), at_least(2)), ("band", (0.35, -1.0, 2.0), within(0.25, 0.01)))]
    rows.append(_claim(Measure.fact(0.2, "p", case="c"), at_least(0.5), id="fact"))
    values = {k: v for c in rows for k, v in glue_values(c).items()}
    assert grade_breaks(values) == []
    assert [values[f"{c}_verdict"].split(" (")[0] for c in ("straddles", "misses", "band")] == \
        ["inconclusive", "does not hold", "inconclusive"]
    # the old three-step grades are caught: "partly", and "does not hold" on a straddling interval
    broken = {**values, "holds_verdict": "partly", "straddles_verdict": "does not hold",
              "misses_verdict": "inconclusive", "fact_verdict": "holds"}
    found = grade_breaks(broken)
    assert [f.split(":")[0] for f in found] == ["holds", "straddles", "misses", "fact"]
    assert "'partly' is not one of" in found[0] and "gives 'inconclusive'" in found[1]
    assert grade_breaks({"old_verdict": "holds", "old_lo": 1.0}) == \
        ["old: graded 'holds' with no rule glued (_op is empty)"]


def test_read_glued_parses_an_executed_notebook(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    prefix = "application/papermill.record/"
    nb.cells = [nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output(
        "display_data", data={prefix + "text/plain": text},
        metadata={"scrapbook": {"name": name, "mime_prefix": prefix}})
        for name, text in (("c_lo", "nan"), ("c_hi", "0.25"), ("c_verdict", "'holds'"),
                           ("scorecard", "<IPython.core.display.HTML object>"))])]
    nbformat.write(nb, tmp_path / "ch.ipynb")
    values = read_glued(tmp_path / "ch.ipynb")
    assert math.isnan(values["c_lo"]) and values["c_hi"] == 0.25
    assert values["c_verdict"] == "holds" and rule_breaks(values) == ["c"]


def test_renderer_rejects_duplicates_and_non_claims():
    with pytest.raises(LlmdynError, match="unique"):
        claims_table([CLAIMS[0], CLAIMS[0]])
    with pytest.raises(LlmdynError, match="Claim objects"):
        claims_table(["holds"])
    with pytest.raises(LlmdynError, match="empty"):
        scorecard_html([])


def test_part_source_pastes_from_its_own_chapter():
    text = part_source("Coupling across depth", "05_depth_coupling")
    assert "```{glue} scorecard\n:doc: executed/05_depth_coupling.ipynb\n```" in text
    assert not any(g in text for g in ("holds", "inconclusive", "does not hold"))


# --- the scorecard paste, end to end (papermill + Jupyter Book) --------------------------------

CHAPTER_CELL = """
from llmdyn.claims.claim import Claim, Measure, at_least
from llmdyn.claims.render import publish
publish([Claim("coupled", "A", "§5.1", "Blocks couple", "diagonal tiles",
               Measure.ratio({a}, [1.0] * len({a}), "share ratio", unit="×",
                             sampling_unit="prompt"), at_least(2))])
"""


def _mini_book(root, values):
    """A two-page book: one executed chapter gluing a claim, one page pasting its table."""
    import nbformat

    from llmdyn.runner.build import build_html, run_chapter

    (root / "book" / "parts").mkdir(parents=True)
    (root / "_config.yml").write_text('title: t\nonly_build_toc_files: true\nexecute:\n'
                                      '  execute_notebooks: "off"\n'
                                      'exclude_patterns: ["book/parts/*", "notebooks/*"]\n')
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/score\nparts:\n  - caption: c\n"
                                   "    chapters:\n      - file: book/executed/ch\n")
    (root / "book" / "score.md").write_text("# Score\n\n## Paper A\n\n```{include} parts/ch.md\n"
                                            "```\n")
    (root / "book" / "parts" / "ch.md").write_text(part_source("Depth", "ch"))
    (root / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "llmdyn", "display_name": "llmdyn",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Chapter"),
                nbformat.v4.new_code_cell(CHAPTER_CELL.format(a=values))]
    nbformat.write(nb, root / "notebooks" / "ch.ipynb")
    run_chapter("ch", root / "book" / "executed", {}, root=root, cwd=root)
    return (build_html(root) / "book" / "score.html").read_text()


@pytest.mark.slow
def test_each_staged_book_pastes_its_own_results(tmp_path):
    first = _mini_book(tmp_path / "one", [4.0, 5, 6, 5] * 4)
    second = _mini_book(tmp_path / "two", [1.0, 1.5, 1.2, 1.3] * 4)
    assert "share ratio: 5.000× [4.611×, 5.389×] (n = 16 prompts, linearised t interval)" \
        in first
    assert ">holds</span> (Holm over 1 test: holds at 95 %" in first and "5.000×" not in second
    assert ">does not hold</span>" in second


# --- the scorecard: every verdict comes from a Claim -------------------------------------------

PARTS = REPO / "book" / "scorecard_parts"
VERDICT_WORDS = ("holds", "inconclusive", "does not hold", "not testable", "not run", "agrees")


def _outside_glue_blocks(text: str) -> str:
    """The part's text without its ```{glue} ...``` pastes (the generated blocks)."""
    return re.sub(r"```\{glue\}.*?```", "", text, flags=re.S)


@pytest.mark.parametrize("part", sorted(PARTS.glob("*.md")), ids=lambda p: p.stem)
def test_scorecard_parts_state_no_verdict_or_result(part):
    text = part.read_text()
    prose = _outside_glue_blocks(text).lower()
    assert not [w for w in VERDICT_WORDS if re.search(rf"\b{w}\b", prose)], part.name
    assert "{glue:text}" not in text  # numbers come only inside the pasted claim tables
    assert re.search(r"```\{glue\} \w+\n:doc: executed/\d\d_\w+\.ipynb\n```", text), part.name


def test_every_part_pastes_a_table_its_chapter_publishes():
    import nbformat

    for part in PARTS.glob("*.md"):
        key, doc = re.search(r"```\{glue\} (\w+)\n:doc: executed/(\w+)\.ipynb", part.read_text()
                             ).groups()
        source = "\n".join(c.source for c in nbformat.read(REPO / "notebooks" / f"{doc}.ipynb",
                                                           as_version=4).cells)
        published = [_call_key(source, m.end()) for m in re.finditer(r"^publish\(", source, re.M)]
        assert key in published, (part.name, published)


def _call_key(source: str, start: int) -> str:
    """The ``key=`` of the call whose arguments start at ``start`` ("scorecard" without one)."""
    depth, end = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(source[end], 0)
        end += 1
    found = re.search(r'\bkey="(\w+)"', source[start:end])
    return found.group(1) if found else "scorecard"


def test_notebooks_are_thin():
    """No rule, glue or function defined in a chapter, and no code cell over 40 lines."""
    import nbformat

    for path in (REPO / "notebooks").glob("*.ipynb"):
        cells = [c.source for c in nbformat.read(path, as_version=4).cells
                 if c.cell_type == "code"]
        source = "\n".join(cells)
        assert "myst_nb import glue" not in source, path.name
        assert not re.search(r"^\s*def \w+\(", source, flags=re.M), path.name
        assert max(len(c.splitlines()) for c in cells) <= 40, path.name


# --- units: one number per independent unit ---------------------------------------------------

def test_an_interval_without_a_declared_unit_is_not_graded():
    values = np.linspace(3.0, 4.0, 16)
    bare = _claim(Measure.mean(values, "x"), at_least(2)).verdict
    assert bare.grade == "no verdict" and "no independent unit" in bare.reason
    assert _claim(Measure.mean(values, "x", sampling_unit="prompt"), at_least(2)).verdict.grade \
        == "holds"


@pytest.mark.parametrize("sub_item", ["token", "tokens", "tile", "noise draw", "passage",
                                      "checkpoint", "layer"])
def test_sub_items_are_refused_as_units(sub_item):
    with pytest.raises(LlmdynError, match="not an independent unit: summarise"):
        Measure.mean([1.0, 2.0], "x", sampling_unit=sub_item)
    with pytest.raises(LlmdynError, match="sampling_unit must be one of"):
        Measure.mean([1.0, 2.0], "x", sampling_unit="prompts please")


def test_units_that_do_not_vary_are_not_graded_and_narrow_ones_are():
    # 16 prompts that agree to 1e-8 (float32's precision): one number computed 16 times
    flat = Measure.mean(0.74 + 1e-9 * np.arange(16), "x", fmt=".3f", sampling_unit="prompt")
    assert flat.zero_width()
    verdict = _claim(flat, at_least(0.5)).verdict
    assert verdict.grade == "no verdict" and "the units do not vary" in verdict.reason
    # 16 prompts that agree to 1e-5 do vary: 0.7400 [0.7400, 0.7400] at .4f, graded from the
    # unrounded interval (t = 0.74 ± 2.13 · 4.76e-6 / 4)
    narrow = Measure.mean(0.74 + 1e-6 * np.arange(16), "x", fmt=".3f", sampling_unit="prompt")
    assert not narrow.zero_width()
    assert narrow.estimate.hi - narrow.estimate.lo == pytest.approx(
        2 * 2.1314 * np.std(1e-6 * np.arange(16), ddof=1) / 4, rel=1e-3)
    assert _claim(narrow, at_least(0.5)).verdict.grade == "holds"
    assert _claim(narrow, at_least(0.7400076)).verdict.grade == "inconclusive"
    # the referee's example: -8.6e-5 [-1.04e-4, -6.8e-5] excludes 0 and is graded
    tiny = Measure.mean(-8.6e-5 + 4e-5 * np.linspace(-1, 1, 20), "x", fmt=".2f",
                        sampling_unit="prompt")
    assert _claim(tiny, below(0)).verdict.grade == "holds"
    # a difference of two 5-nat entropies that varies by 1e-9: the inputs' precision decides
    same = Measure.difference(5.0 + 1e-9 * np.arange(8), np.full(8, 4.9996), "d",
                              sampling_unit="prompt")
    assert same.zero_width() and same.estimate.value == pytest.approx(4e-4, rel=1e-4)


def test_an_interval_narrower_than_one_digit_prints_one_digit_finer_never_two():
    # 20 prompts spread over 0.38–0.40: the t interval spans ~0.005, under .2f's 0.01
    spread = Measure.mean(0.38 + 0.001 * np.arange(20), "x", fmt=".2f", sampling_unit="prompt")
    assert spread.printed_fmt == ".3f" and not spread.zero_width()
    assert _claim(spread, at_most(0.75)).result_text() == ("x: 0.390 [0.387, 0.392] "
                                                           "(n = 20 prompts, t interval)")
    assert _claim(spread, at_most(0.75)).verdict.grade == "holds"
    # agreement to 1e-5 is below a tenth of .3f's digit: one digit finer, still printed
    # zero-width (the grade reads the unrounded ends)
    flat = Measure.mean(0.74 + 1e-6 * np.arange(16), "x", fmt=".3f", sampling_unit="prompt")
    assert flat.printed_fmt == ".4f" and not flat.zero_width()
    wide = Measure.mean(0.74 + 1e-2 * np.arange(16), "x", fmt=".2f", sampling_unit="prompt")
    assert wide.printed_fmt == ".2f"


@pytest.mark.parametrize("fmt, x, step", [(".3f", 5.0, 1e-3), (".1%", 0.5, 1e-3),
                                          (".2e", 1234.0, 10.0), (".3g", 0.0123, 1e-4),
                                          ("yes/no", 1.0, 0.0)])
def test_resolution_is_one_unit_of_the_last_printed_digit(fmt, x, step):
    assert Measure("q", None, fmt=fmt).resolution(x) == pytest.approx(step)


def test_keyed_samples_pair_by_unit_id_not_position():
    a = {"p1": 2.0, "p2": 4.0, "p3": 6.0, "p4": 8.0}
    b = {"p4": 4.0, "p3": 3.0, "p2": 2.0, "p1": 1.0}  # another order: paired by id
    m = Measure.ratio(a, b, "r", sampling_unit="prompt")
    assert m.estimate.value == pytest.approx(2.0) and m.unit_ids == ("p1", "p2", "p3", "p4")
    assert m.samples == ((2.0, 4.0, 6.0, 8.0), (1.0, 2.0, 3.0, 4.0))
    with pytest.raises(LlmdynError, match="same units; missing \\['p4'\\]"):
        Measure.ratio(a, {k: v for k, v in b.items() if k != "p4"}, "r", sampling_unit="prompt")
    with pytest.raises(LlmdynError, match="not a mix"):
        Measure.difference(a, [1.0, 2, 3, 4], "d", sampling_unit="prompt")


def test_independent_groups_take_welchs_interval_and_keep_every_units_id():
    a = {f"a{i}": 1.0 + 0.1 * i for i in range(8)}  # two groups of different prompts
    b = {f"b{i}": 0.5 + 0.3 * i for i in range(6)}
    m = Measure.difference(a, b, "d", paired=False, sampling_unit="prompt")
    lo, hi = intervals.t_difference(list(a.values()), list(b.values()), paired=False)
    assert (m.estimate.lo, m.estimate.hi) == pytest.approx((lo, hi))
    assert m.estimate.method == "welch" and "Welch t interval" in m.interval_text()
    assert m.unit_ids == (*a, *b)


def test_every_shown_number_names_its_units_and_interval_method():
    m = Measure.mean(np.linspace(1.0, 2.0, 20), "x", fmt=".2f", sampling_unit="prompt")
    claim = _claim(m, at_least(0))
    assert "(n = 20 prompts, t interval)" in claim.result_text()
    from llmdyn.claims.findings import short
    assert short(claim) == "1.50 [1.35, 1.65] (n = 20 prompts, t interval)"
    one = Measure.per_unit([0.3, 0.35, 0.29], "share", sampling_unit="run")
    assert "3 runs shown one by one" in one.reason and one.unit_ids == ("1", "2", "3")


class _OldLateTrendRule(Rule):
    """Chapter 08's rule before the unit audit: "holds" unless the interval lies wholly below 0."""

    def judge(self, est):
        return ("does not hold", "") if est.hi < 0 else ("holds", "")


def test_publish_refuses_a_rule_that_grades_holds_on_a_straddling_interval():
    straddling = _interval(0.0126, -0.0080, 0.0333)
    late = _claim(straddling, _OldLateTrendRule(">=", 0.0), id="train_coupling_persistent")
    assert late.verdict.grade == "holds"  # the old rule's reading ...
    with pytest.raises(LlmdynError, match="train_coupling_persistent: graded 'holds'.*"
                                          "gives 'inconclusive'"):
        publish([late], glue=lambda *a, **k: None)  # ... which the build now refuses


def test_split_flips_shows_a_row_under_every_split_that_grades_it_otherwise():
    from llmdyn.claims import split_flips

    def row(cid, lo, hi):
        return _claim(_interval((lo + hi) / 2, lo, hi), below(0), id=cid)

    grid = {"consensus": [row("linear_consensus", -0.3, -0.1), row("aligned_consensus", -2, -1)],
            "thirds": [row("linear_thirds", -0.3, 0.2), row("aligned_thirds", -2, -1.5)],
            "lss_peak": [row("linear_lss_peak", 0.1, 0.2), row("aligned_lss_peak", -3, -1)]}
    shown = [c.id for c in split_flips(grid, "consensus")]
    assert shown == ["linear_consensus", "linear_thirds", "linear_lss_peak", "aligned_consensus"]
    with pytest.raises(LlmdynError, match="chosen split 'entropy'"):
        split_flips(grid, "entropy")


def test_keyed_gives_one_value_per_unit_id_and_refuses_a_mismatch():
    from llmdyn.claims import keyed

    assert keyed(["p1", "p2"], np.array([0.5, 1.5])) == {"p1": 0.5, "p2": 1.5}
    with pytest.raises(LlmdynError, match="one value per unit id, got 3 values for 2 ids"):
        keyed(["p1", "p2"], [1.0, 2.0, 3.0])


def test_a_tied_position_is_judged_as_the_share_of_units_on_the_papers_side():
    # every prompt peaks at 0.53: the median's interval is [0.53, 0.53]; the share keeps width
    m = Measure.share_on_side([0.53] * 20 + [math.nan], within(0.25, 0.1), "share",
                              sampling_unit="prompt", detail="median 0.53")
    assert (m.estimate.value, m.estimate.n, m.estimate.method) == (0.0, 20, "exact")
    assert m.estimate.hi == pytest.approx(0.1684, abs=1e-4) and not m.zero_width()
    assert m.detail == "a majority (0.5) is the book's own threshold; median 0.53"
    assert _claim(m, above(0.5)).verdict.grade == "does not hold"
