"""Intervals with known answers (against scipy's own), and the coverage table that picks them.

The coverage test recomputes every row of ``data/coverage.csv`` (1,000 simulated samples per
bootstrap row, 2,000 per HC4 Pitman–Morgan row, 10,000 per closed-form row, seed 2029; about
45 CPU seconds) and checks that the committed table, the copy in ``book/methods.md`` and the
library's choices all follow from it.
A method is used at (kind, n) only where its coverage is within the margin of 95 % (three
binomial standard errors over 1,000 draws, 2.1 points) or above it (conservative).
"""

from __future__ import annotations

import csv
import importlib.util

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps

from llmdyn import LlmdynError
from llmdyn.claims.claim import Measure
from llmdyn.runner.build import REPO
from llmdyn.stats import coverage, intervals

RNG = np.random.default_rng(29)  # every assertion below holds for any draw


# --- each interval equals the textbook one (scipy's where scipy has it) -----------------------

def test_t_intervals_match_scipy():
    x, y = RNG.gamma(4.0, size=9), RNG.gamma(4.0, size=13)
    ci = sps.ttest_1samp(x, 0).confidence_interval()
    assert intervals.t_mean(x) == pytest.approx((ci.low, ci.high), rel=1e-10)
    welch = sps.ttest_ind(x, y, equal_var=False).confidence_interval()
    assert intervals.t_difference(x, y, paired=False) == pytest.approx((welch.low, welch.high))
    paired = sps.ttest_rel(x, x[::-1] + 1).confidence_interval()
    assert intervals.t_difference(x, x[::-1] + 1) == pytest.approx((paired.low, paired.high))


def test_ols_t_matches_linregress():
    x = RNG.uniform(size=20)
    assert intervals.ols_t(x, 1 + 2 * x) == pytest.approx((2.0, 2.0))  # an exact line
    y = 1 + 2 * x + RNG.normal(0, 0.5, 20)
    fit = sps.linregress(x, y)
    half = sps.t.ppf(0.975, 18) * fit.stderr
    assert intervals.ols_t(x, y) == pytest.approx((fit.slope - half, fit.slope + half))


def test_fisher_z_matches_pearsonr_and_squares_it():
    x = RNG.normal(size=27)
    y = 2 * x + RNG.normal(size=27)  # r near 0.9: its interval is well above 0 for any draw
    ci = sps.pearsonr(x, y).confidence_interval()  # scipy's Fisher z interval of r
    assert intervals.fisher_z(x, y, signed=True) == pytest.approx(
        (ci.low * abs(ci.low), ci.high * abs(ci.high)))
    lo, hi = intervals.fisher_z(x, y)
    assert (lo, hi) == pytest.approx((ci.low ** 2, ci.high ** 2)) and lo > 0
    noise = RNG.normal(size=27)
    dx = x - x.mean()
    unrelated = noise - dx * (dx @ noise) / (dx @ dx)  # r = 0: its interval contains 0
    lo, hi = intervals.fisher_z(x, unrelated)
    assert lo == 0.0 and hi == pytest.approx(np.tanh(1.96 / np.sqrt(24)) ** 2, rel=1e-3)


def test_exact_intervals_match_scipy():
    passed = np.array([1, 1, 0, 1, 1, 1, 0, 1, 1, 1], dtype=float)
    ci = sps.binomtest(8, 10).proportion_ci(method="exact")
    assert intervals.clopper_pearson(passed) == pytest.approx((ci.low, ci.high))
    assert intervals.clopper_pearson(np.ones(6)) == pytest.approx(
        (sps.binomtest(6, 6).proportion_ci(method="exact").low, 1.0))
    x = RNG.gamma(4.0, size=16)
    ci = sps.quantile_test(x, q=np.median(x), p=0.5).confidence_interval()
    assert intervals.order_median(x) == pytest.approx((ci.low, ci.high))
    assert np.isnan(intervals.order_median(x[:5])).all()  # 5 values cannot reach 95 %


def test_delta_t_is_exact_on_a_constant_ratio_and_t_on_unit_denominators():
    b = RNG.gamma(4.0, size=12)
    assert intervals.delta_t(3 * b, b) == pytest.approx((3.0, 3.0))
    a = RNG.gamma(4.0, size=12)
    assert intervals.delta_t(a, np.ones(12)) == pytest.approx(intervals.t_mean(a))


def test_log_t_is_the_t_interval_of_the_log_ratios_carried_back():
    b = RNG.gamma(4.0, size=4)
    a = b * RNG.lognormal(np.log(2), 0.5, size=4)  # 4 runs
    ci = sps.ttest_1samp(np.log(a / b), 0).confidence_interval()
    assert intervals.log_t(a, b) == pytest.approx((np.exp(ci.low), np.exp(ci.high)))
    assert intervals.log_t(3 * b, b) == pytest.approx((3.0, 3.0))  # a constant ratio
    with pytest.raises(LlmdynError, match="positive values"):
        intervals.log_t(a - a.max(), b)


def test_pitman_morgan_on_a_hand_computed_case():
    # s_a² = 20/3, s_b² = 5/3: F = 4; Σ da·db = 8 over √(20·5) = 10: r = 0.8; n − 2 = 2
    a, b = np.array([2.0, 4, 6, 8]), np.array([1.0, 3, 2, 4])
    t2 = sps.t.ppf(0.975, 2) ** 2
    k = 1 + 2 * (1 - 0.64) * t2 / 2
    assert intervals.pitman_morgan(a, b) == pytest.approx(
        (4 * (k - np.sqrt(k * k - 1)), 4 * (k + np.sqrt(k * k - 1))))
    assert intervals.pitman_morgan(a, b)[0] == pytest.approx(0.26206, abs=1e-5)


def test_pitman_morgan_ends_are_where_scipys_correlation_test_reaches_its_level():
    b = RNG.normal(size=20)
    a = 1.5 * (0.6 * b + 0.8 * RNG.normal(size=20))
    lo, hi = intervals.pitman_morgan(a, b)
    for theta in (lo, hi):  # u = a ± √θ·b are uncorrelated exactly when θ = var(a)/var(b)
        c = np.sqrt(theta)
        assert sps.pearsonr(a + c * b, a - c * b).pvalue == pytest.approx(0.05, rel=1e-8)
    f = a.var(ddof=1) / b.var(ddof=1)
    assert lo < f < hi and np.sqrt(lo * hi) == pytest.approx(f)  # symmetric on a log scale


def test_hc4_slope_t_matches_the_sandwich_from_statsmodels_pieces():
    x, y = RNG.gamma(4.0, size=12), RNG.gamma(4.0, size=12)
    fit = sm.OLS(y, sm.add_constant(x)).fit()
    h = fit.get_influence().hat_matrix_diag
    delta = np.minimum(4.0, 12 * h / 2)  # Cribari-Neto (2004): h_i over its mean 2/n
    bread = np.linalg.inv(fit.model.exog.T @ fit.model.exog)
    meat = fit.model.exog.T @ np.diag(fit.resid ** 2 / (1 - h) ** delta) @ fit.model.exog
    se = np.sqrt((bread @ meat @ bread)[1, 1])
    assert intervals.hc4_slope_t(x, y) == pytest.approx(fit.params[1] / se, rel=1e-10)


def test_pitman_morgan_hc4_inverts_its_test_around_the_sample_ratio():
    b = RNG.gamma(4.0, size=20)
    a = 2 * (b + RNG.gamma(4.0, size=20))
    lo, hi = intervals.pitman_morgan_hc4(a, b)
    crit = sps.t.ppf(0.975, 18)
    for theta in (lo, hi):
        c = np.sqrt(theta)
        assert abs(intervals.hc4_slope_t(a + c * b, a - c * b)) == pytest.approx(crit, rel=1e-6)
    assert lo < a.var(ddof=1) / b.var(ddof=1) < hi
    assert np.isnan(intervals.pitman_morgan_hc4(a, np.ones(20))).all()  # no ratio to a constant


def _with_correlations(r: np.ndarray, n: int) -> np.ndarray:
    """``[3, n]`` values whose sample correlation matrix is exactly ``r``."""
    z = RNG.normal(size=(n, 3))
    z -= z.mean(0)
    z = z @ np.linalg.inv(np.linalg.cholesky(np.cov(z.T)).T)  # sample covariance = identity
    return (z @ np.linalg.cholesky(r).T).T


def test_zou_reproduces_zou_2007s_overlapping_example():
    # Zou (2007), overlapping correlations: r12 = .396, r13 = .179, r23 = .088, n = 66 gives
    # the 95 % interval (−.093, .517) of r12 − r13
    r = np.array([[1, 0.396, 0.179], [0.396, 1, 0.088], [0.179, 0.088, 1]])
    y, x1, x2 = _with_correlations(r, 66)
    lo, hi = intervals.zou(y, x1, x2)
    assert (round(float(lo), 3), round(float(hi), 3)) == (-0.093, 0.517)
    assert intervals.zou_from_r(0.396, 0.179, 0.088, 66) == pytest.approx((lo, hi))
    wide = intervals.zou(y, x1, x2, level=intervals.bonferroni_level(4))
    assert wide[0] < lo and wide[1] > hi and intervals.bonferroni_level(4) == 1 - 0.05 / 4


def test_zou_covers_at_the_bonferroni_level_of_four_rivals():
    level, sims = intervals.bonferroni_level(4), 10_000
    rng = np.random.default_rng([coverage.SEED, 4])
    (y, x1, x2), truth = coverage.simulate("correlation_difference", 27, sims, rng)
    lo, hi = intervals.zou(y, x1, x2, level=level)
    covered = np.mean((lo <= truth) & (truth <= hi))
    assert abs(covered - level) <= coverage.margin(sims, level)  # 98.75 % ± 0.33 points


def test_simulated_populations_have_their_stated_parameters():
    rng = np.random.default_rng(3)
    (a, b), truth = coverage.simulate("log_ratio", 400_000, 1, rng)
    assert np.exp(np.log(a / b).mean()) == pytest.approx(truth, rel=2e-3)
    (a, b), truth = coverage.simulate("variance_ratio", 400_000, 1, rng)
    assert a.var() / b.var() == pytest.approx(truth, rel=0.02)
    assert sps.skew(b[0]) == pytest.approx(1.0, abs=0.05)  # Gamma(4)-shaped margins
    (y, x1, x2), truth = coverage.simulate("correlation_difference", 400_000, 1, rng)
    assert np.corrcoef([y[0], x1[0], x2[0]]) == pytest.approx(coverage.CORRELATIONS, abs=0.01)
    assert truth == pytest.approx(0.3) and sps.skew(y[0]) == pytest.approx(1.0, abs=0.05)


def test_the_paired_kinds_refuse_unpaired_samples():
    with pytest.raises(LlmdynError, match="paired"):
        coverage.interval("variance_ratio", "pitman_morgan", np.ones(5), np.ones(6),
                          paired=False)


# --- the coverage table ---------------------------------------------------------------------

def _committed() -> list[dict]:
    with coverage.TABLE.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _tool():
    spec = importlib.util.spec_from_file_location("coverage_tool", REPO / "tools" / "coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_coverage_table_is_what_the_simulation_gives():
    fresh = coverage.rows()
    assert [{k: str(v) for k, v in r.items()} for r in fresh] == _committed()
    page = (REPO / "book" / "methods.md").read_text(encoding="utf-8")
    assert _tool().page_with_table(page, fresh) == page  # the methods page shows this table
    for r in fresh:
        assert r["status"] == coverage.status(r["coverage"])
        assert not (r["method"] == "bca" and r["n"] < coverage.BOOTSTRAP_MIN_N)
    assert coverage.MARGIN == pytest.approx(3 * np.sqrt(0.95 * 0.05 / 1000))


@pytest.mark.parametrize("kind", coverage.KINDS)
def test_every_method_used_covers_and_other_ns_get_no_verdict(kind):
    status = {(r["kind"], int(r["n"]), r["method"]): r["status"] for r in _committed()}
    for n in (3, *coverage.SIZES, 5, 9, 21, 50):
        method, reason = coverage.choose(kind, n)
        size = max((s for s in coverage.SIZES if s <= n), default=None)
        if method is None:
            assert reason and "coverage" in reason
            assert size is None or not any(status.get((kind, size, m)) in coverage.USABLE
                                           for m in coverage.METHODS[kind])
        else:
            assert status[(kind, size, method)] in coverage.USABLE
            assert not (method == "bca" and n <= 5)


def test_measure_applies_the_table():
    x = RNG.gamma(4.0, size=20)
    y = 2 * x + RNG.normal(size=20)
    assert Measure.mean(x, "m").estimate.method == coverage.choose("mean", 20)[0] == "t"
    assert Measure.slope(x, y, "s", method="ols_t").estimate.method == "ols_t"
    boot = Measure.slope(x, y, "s", method="bca")  # BCa undercovers slopes at n = 16
    assert boot.missing == "no verdict" and "the bca interval" in boot.reason
    assert Measure.signed_r2(x, -y, "r").estimate.hi < 0
    assert Measure.mean(x[:4], "runs").estimate.method == "t"  # 4 runs: t, never the bootstrap
    ols = Measure.from_interval(1.0, 0.5, 1.5, 24, "slope", kind="slope", method="ols_t")
    assert ols.estimate.has_interval and not ols.missing
    boot = Measure.from_interval(1.0, 0.5, 1.5, 24, "slope", kind="slope", method="bca")
    assert boot.missing == "no verdict" and not boot.estimate.has_interval
    few = Measure.per_unit([0.3, 0.5], "lag", labels=["s", "m"], fmt=".1f")
    assert few.missing == "no verdict" and "s: 0.3; m: 0.5" in few.detail
