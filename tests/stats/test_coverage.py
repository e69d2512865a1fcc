"""Intervals with known answers (against scipy's own), and the coverage table that picks them.

The coverage test recomputes every row of ``data/coverage.csv`` (1,000 simulated samples per
bootstrap row, 10,000 per closed-form row, seed 2029; about 80 s of one core) and checks that the
committed table, the copy in ``book/methods.md`` and the library's choices all follow from it.
A method is used at (kind, n) only where its coverage is within the margin of 95 % (three
binomial standard errors over 1,000 draws, 2.1 points) or above it (conservative).
"""

from __future__ import annotations

import csv
import importlib.util

import numpy as np
import pytest
from scipy import stats as sps

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
