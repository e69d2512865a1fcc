import numpy as np
import pytest
import statsmodels.api as sm

from llmdyn import LlmdynError
from llmdyn.stats.regression import (
    exponential_fit,
    ols,
    ols_or_none,
    paired_difference,
    pearson,
    spearman,
)


def test_ols_recovers_an_exact_line():
    x = np.arange(10.0)
    fit = ols(x, 3.0 - 2.0 * x)
    assert fit.slope == pytest.approx(-2.0) and fit.intercept == pytest.approx(3.0)
    assert fit.r2 == pytest.approx(1.0) and fit.p < 1e-12 and fit.n == 10


def test_ols_matches_statsmodels_and_its_band():
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = 0.5 * x + rng.normal(size=40)
    fit = ols(x, y)
    ref = sm.OLS(y, sm.add_constant(x)).fit()
    assert fit.r2 == pytest.approx(ref.rsquared) and fit.p == pytest.approx(ref.pvalues[1])
    grid = np.linspace(-2, 2, 5)
    lo, hi = fit.band(grid)
    want = ref.get_prediction(sm.add_constant(grid)).conf_int(alpha=0.05)
    assert np.allclose(lo, want[:, 0]) and np.allclose(hi, want[:, 1])
    assert (hi > fit.predict(grid)).all() and (lo < fit.predict(grid)).all()


def test_ols_rejects_constant_x_and_mismatch():
    with pytest.raises(LlmdynError, match="constant"):
        ols([1, 1, 1], [1, 2, 3])
    with pytest.raises(LlmdynError, match="same number"):
        ols([1, 2, 3], [1, 2])
    assert ols_or_none([2, 2, 2], [1, 2, 3]) is None
    assert ols_or_none([1, 2], [1, 2]) is None
    assert ols_or_none([1, 2, 3], [1, 2, 4]) is not None


def test_exponential_fit_recovers_rate_and_amplitude():
    x = np.linspace(0, 3, 8)
    fit = exponential_fit(x, 2.5 * np.exp(-0.7 * x))
    assert fit.amplitude == pytest.approx(2.5) and fit.rate == pytest.approx(-0.7)
    assert fit.r2 == pytest.approx(1.0)
    assert np.allclose(fit.predict(x), 2.5 * np.exp(-0.7 * x))
    with pytest.raises(LlmdynError, match="y > 0"):
        exponential_fit(x, x - 1)


def test_correlations_known_answers():
    x = np.arange(6.0)
    assert pearson(x, 2 * x + 1).r == pytest.approx(1.0)
    assert spearman(x, x**3).r == pytest.approx(1.0)  # monotone: rank correlation 1
    assert spearman(x, -np.exp(x)).r == pytest.approx(-1.0)


def test_paired_difference():
    a = np.array([1.0, 2.0, 3.0])
    out = paired_difference(a, a + np.array([0.19, 0.2, 0.21]))
    assert out.mean == pytest.approx(0.2) and out.n == 3 and out.p < 0.05
    assert np.isnan(paired_difference([1.0], [2.0]).p)
