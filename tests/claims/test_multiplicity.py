"""Holm over a chapter's claims, read from each claim's own intervals (known answers)."""

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from llmdyn import LlmdynError
from llmdyn.claims.claim import Claim, Measure, above, at_least, below, within
from llmdyn.claims.multiplicity import holm, interval_at, level_text, replayable


def _claim(values, rule, cid):
    return Claim(cid, "A", "§1", "s", "p", Measure.mean(values, "x", sampling_unit="prompt"),
                 rule)


SHIFTS = (0.35, 0.5, 0.6, 0.9, -0.55, 0.05)  # two-sided t p-values from 0.0001 to 0.7


def _family():
    rng = np.random.default_rng(3)
    base = rng.standard_normal(20)
    base = (base - base.mean()) / base.std(ddof=1)  # mean 0, sd 1 exactly
    return [_claim(base + d, above(0), f"c{i}") for i, d in enumerate(SHIFTS)]


def test_holm_grades_match_statsmodels_on_t_test_p_values():
    claims = _family()
    p = [sps.ttest_1samp(np.asarray(c.measure.samples[0]), 0).pvalue for c in claims]
    rejected = multipletests(p, alpha=0.05, method="holm")[0]
    adjusted = holm(claims, family="chapter 01")
    for c, p_i, r in zip(claims, p, rejected, strict=True):
        unadjusted = c.verdict.grade
        assert (unadjusted in ("holds", "does not hold")) == (p_i < 0.05)
        assert adjusted[c.id].grade == (unadjusted if r else "inconclusive"), (c.id, p_i)
        assert adjusted[c.id].unadjusted == unadjusted and adjusted[c.id].m == len(claims)
    # the family's decided rows at 95 % (p < 0.05) include one Holm does not keep (p = 0.03)
    assert sum(c.verdict.grade != "inconclusive" for c in claims) > sum(rejected)


def test_each_adjusted_grade_is_its_interval_at_the_stated_level():
    claims = _family()
    for c in claims:
        adj = holm(claims, family="f")[c.id]
        lo, hi = interval_at(c, adj.level)
        assert (lo, hi) == pytest.approx((adj.lo, adj.hi), rel=1e-12)
        t = sps.t.ppf(0.5 + adj.level / 2, 19) * np.std(c.measure.samples[0], ddof=1) / 20 ** .5
        mean = np.mean(c.measure.samples[0])
        assert (adj.lo, adj.hi) == pytest.approx((mean - t, mean + t), rel=1e-9)  # the t route


def test_bootstrap_interval_replays_at_95_and_nests_above():
    values = np.random.default_rng(0).gamma(4, 1, 30)
    claim = Claim("m", "A", "§1", "s", "p", Measure.median(
        values, "x", sampling_unit="prompt", method="bca"), at_least(3))  # calibrated at 27
    assert claim.measure.estimate.method == "bca" and replayable(claim) == ""
    lo95, hi95 = interval_at(claim, 0.95)
    lo99, hi99 = interval_at(claim, 0.99)
    assert lo99 <= lo95 and hi99 >= hi95  # the same draws: wider at a higher level


def test_facts_unreplayable_rows_and_bands():
    fact = Claim("f", "B", "§1", "s", "p", Measure.fact(1, "top token", case="France"),
                 at_least(1))
    elsewhere = Claim("e", "A", "§1", "s", "p", Measure.from_interval(
        0.5, 0.2, 0.8, 27, "slope", kind="slope", method="ols_t", sampling_unit="model"),
        above(0))
    band = _claim(np.linspace(0.2, 0.3, 20), within(0.25, 0.1), "b")
    out = holm([fact, elsewhere, band], family="f")
    assert "f" not in out  # a fact is judged on its value: no test in the family
    assert out["e"].reason.startswith("no per-unit values or interval method kept")
    assert out["b"].m == 1 and out["b"].grade == "holds" and out["b"].level == 0.95
    with pytest.raises(LlmdynError, match="alpha"):
        holm([band], family="f", alpha=1.5)


def test_level_text():
    assert level_text(0.95) == "95 %" and level_text(1 - 0.05 / 4) == "98.75 %"
    assert level_text(1 - 0.05 / 7) == "99.286 %"
    assert math.isclose(holm([_claim([1.0, 2, 3], below(9), "x")], family="f")["x"].level, 0.95)
