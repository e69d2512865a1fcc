"""Between/within-cell ANOVA and the bootstrap that redraws replicates within cells."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llmdyn import LlmdynError
from llmdyn.stats import bootstrap
from llmdyn.stats.anova import cell_summary, min_detectable_ratio, one_way_anova
from llmdyn.stats.replicates import bootstrap_within_cells, within_cell_draws


def test_anova_by_hand():
    """Cells {1, 2, 3} and {4, 5, 6}: means 2 and 5 about 3.5, so MS_between = 3·(1.5² + 1.5²)
    / 1 = 13.5; MS_within = (2 + 2) / 4 = 1; F = 13.5 and θ̂ = (F − 1) / n₀ = 12.5 / 3."""
    a = one_way_anova([1, 2, 3, 4, 5, 6], ["a", "a", "a", "b", "b", "b"])
    assert (a.df_between, a.df_within) == (1, 4)
    assert a.ms_between == pytest.approx(13.5) and a.ms_within == pytest.approx(1.0)
    assert a.f == pytest.approx(13.5) and a.ratio == pytest.approx(12.5 / 3)
    assert a.p == pytest.approx(scipy_stats.f.sf(13.5, 1, 4)) and a.differs()
    assert a.ratio_lo <= a.ratio <= a.ratio_hi


def test_anova_matches_scipy_unbalanced():
    rng = np.random.default_rng(0)
    groups = [rng.normal(m, 1, n) for m, n in [(0, 2), (0.5, 3), (2, 2), (1, 4)]]
    a = one_way_anova(np.concatenate(groups), np.repeat(np.arange(4), [2, 3, 2, 4]))
    ref = scipy_stats.f_oneway(*groups)
    assert a.f == pytest.approx(ref.statistic, rel=1e-12)
    assert a.p == pytest.approx(ref.pvalue, rel=1e-10)
    assert a.n0 == pytest.approx((11 - (4 + 9 + 4 + 16) / 11) / 3)


def _grid(effects, rng, seeds=2):
    """A grid's outcomes: cell effects plus unit-variance seed noise, ``[cell * seed]``."""
    y = np.asarray(effects)[:, None] + rng.normal(size=(len(effects), seeds))
    return y.ravel(), np.repeat(np.arange(len(effects)), seeds)


def test_identical_cells_pass_at_the_nominal_rate():
    """16 identical cells × 2 seeds: "cells differ" must come out in about 5 % of grids.
    600 grids: binomial sd of the rate 0.009, so [0.02, 0.08] is a ±3.3 sd band."""
    rng = np.random.default_rng(1)
    rate = np.mean([one_way_anova(*_grid(np.zeros(16), rng)).differs() for _ in range(600)])
    assert 0.02 <= rate <= 0.08


def test_differing_cells_are_found_and_the_ratio_interval_covers():
    """Cells spread with θ = Σa²/(k − 1) = 1.5 over seed variance 1: the exact interval (the
    noncentral F inverted) covers θ in about 95 % of 300 grids (sd 0.013; band ±3.5 sd), and
    with min_detectable_ratio(16, 2) ≈ 1.17 < 1.5 the test rejects in more than 80 %."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=16)
    a = (a - a.mean()) / a.std(ddof=1) * np.sqrt(1.5)  # Σa²/15 = 1.5 exactly
    fits = [one_way_anova(*_grid(a, rng)) for _ in range(300)]
    cover = np.mean([f.ratio_lo <= 1.5 <= f.ratio_hi for f in fits])
    power = np.mean([f.differs() for f in fits])
    assert 0.90 <= cover <= 0.99 and power > 0.8
    assert min_detectable_ratio(16, 2) == pytest.approx(1.17, abs=0.01)


def test_min_detectable_ratio_has_the_stated_power():
    theta = min_detectable_ratio(4, 3)
    lam, crit = theta * 3 * 3, scipy_stats.f.isf(0.05, 3, 8)
    assert scipy_stats.ncf.sf(crit, 3, 8, lam) == pytest.approx(0.8, abs=1e-6)


def test_anova_refuses_what_it_cannot_judge():
    with pytest.raises(LlmdynError, match="at least 2 seeds per cell"):
        one_way_anova([1.0, 2.0, 3.0], ["a", "b", "c"])
    with pytest.raises(LlmdynError, match="at least 2 cells"):
        one_way_anova([1.0, 2.0], ["a", "a"])
    with pytest.raises(LlmdynError, match="one entry per item"):
        one_way_anova([1.0, 2.0, 3.0], ["a", "b"])
    with pytest.raises(LlmdynError, match="identical"):
        one_way_anova([1.0, 1.0, 2.0, 2.0], ["a", "a", "b", "b"])


def test_cell_summary():
    means, half = cell_summary([1.0, 3.0, 10.0, 10.5], ["x", "x", "y", "y"])
    np.testing.assert_allclose(means, [2.0, 10.25])
    np.testing.assert_allclose(half, [1.0, 0.25])


def test_draws_stay_within_their_cells():
    cells = np.array(["a", "b", "a", "b", "b", "c", "c"])
    draws = within_cell_draws(cells, seed=0, n_resamples=500)
    assert draws.shape == (500, 7)
    assert (cells[draws] == cells[None]).all()  # every drawn row is from the same cell
    assert set(np.unique(draws[:, 1])) == {1, 3, 4}  # and every replicate is drawn


def test_bootstrap_within_cells_of_a_mean_has_the_known_spread():
    """The mean over 50 cells × 2 seeds where seed noise is ±1 (each cell's two values are c ± 1):
    a draw's cell mean is c − 1, c or c + 1 with probabilities 1/4, 1/2, 1/4 (variance 1/2),
    so the grand mean's draws have sd sqrt(0.5 / 50) = 0.1; between-cell spread (c) adds none.
    The 95 % interval is about ±1.96 · 0.1; 2,000 draws pin its width to a few per cent."""
    c = np.repeat(np.linspace(-5, 5, 50), 2)
    y = c + np.tile([-1.0, 1.0], 50)
    est = bootstrap_within_cells(np.mean, y, cells=c)
    assert est.value == pytest.approx(0.0, abs=1e-12)
    assert (est.hi - est.lo) / 2 == pytest.approx(1.96 * 0.1, rel=0.1)


def test_bootstrap_within_cells_without_replicates_gives_no_interval():
    est = bootstrap_within_cells(np.mean, np.arange(4.0), cells=["a", "b", "c", "d"])
    assert est.value == 1.5 and not est.has_interval
    with pytest.raises(LlmdynError, match="one row per cell label"):
        bootstrap_within_cells(np.mean, np.arange(3.0), cells=["a", "b"])


def test_bootstrap_within_cells_is_paired_across_columns():
    """A statistic of two columns sees whole rows: x − y is 0 in every row, so in every draw."""
    x = np.arange(8.0)
    est = bootstrap_within_cells(lambda a, b: float(np.abs(a - b).max()), x, x.copy(),
                                 cells=np.repeat([0, 1], 4))
    assert est.value == est.lo == est.hi == 0.0
    slope = bootstrap_within_cells(lambda a, b: float(bootstrap.slope(a[None], b[None])[0]),
                                   x, 2 * x, cells=np.repeat([0, 1], 4))
    assert slope.lo == pytest.approx(2.0) and slope.hi == pytest.approx(2.0)


def test_ratio_text_never_prints_a_negative_ratio_with_an_empty_interval():
    """Cell means that scatter far less than seeds (F ≈ 0.02): θ̂ < 0 and no θ ≥ 0 fits, which
    the text says instead of "−0.49 [0.00, 0.00]"."""
    values = np.tile([0.0, 1.0], 12) + np.repeat(np.linspace(0, 0.01, 12), 2)
    a = one_way_anova(values, np.repeat(np.arange(12), 2))
    assert a.ratio < 0 and a.ratio_hi == 0
    assert a.ratio_text().startswith("0 (F < 1") and "[0.00, 0.00]" not in a.summary()
    mild = one_way_anova([0.0, 1.0, 0.2, 1.1, 0.4, 1.0], ["a", "a", "b", "b", "c", "c"])
    assert 0 < mild.f < 1 and mild.ratio_hi > 0
    assert mild.ratio_text().startswith(f"0 [0, {mild.ratio_hi:.2f}] (F < 1")
    big = one_way_anova([0.0, 0.1, 5.0, 5.1], ["a", "a", "b", "b"])
    assert big.ratio_text() == f"{big.ratio:.2f} [{big.ratio_lo:.2f}, {big.ratio_hi:.2f}]"
