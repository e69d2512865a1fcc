"""Regressions and correlations (statsmodels, scipy): OLS, confidence band, exponential fit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy import stats as scipy_stats

from llmdyn import LlmdynError


def _pair(x, y, min_n: int) -> tuple[np.ndarray, np.ndarray]:
    """Flattened float64 x and y of equal length, finite, at least ``min_n`` points."""
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise LlmdynError(f"x and y must have the same number of points, got {x.size} and "
                          f"{y.size}")
    if x.size < min_n:
        raise LlmdynError(f"need at least {min_n} points, got {x.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise LlmdynError("x and y must be finite; drop NaN/inf points before fitting")
    if np.ptp(x) == 0:
        raise LlmdynError(f"x is constant ({x[0]}); a slope cannot be fitted")
    return x, y


@dataclass(frozen=True)
class LinearFit:
    """Ordinary least squares y = intercept + slope·x.

    Attributes:
        slope: fitted slope.
        intercept: fitted intercept.
        r2: coefficient of determination R².
        p: two-sided p-value of the t-test of slope = 0.
        slope_stderr: standard error of the slope.
        n: number of points.
        cov: ``[2, 2]`` covariance of (intercept, slope).
        df_resid: residual degrees of freedom, n − 2.
    """

    slope: float
    intercept: float
    r2: float
    p: float
    slope_stderr: float
    n: int
    cov: np.ndarray
    df_resid: float

    def predict(self, x) -> np.ndarray:
        """Fitted values at ``x`` (any shape)."""
        return self.intercept + self.slope * np.asarray(x, dtype=np.float64)

    def band(self, x, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise confidence band of the fitted mean at ``x``: (lower, upper).

        ŷ(x) ± t_{(1+level)/2, n−2} · sqrt([1, x] Cov [1, x]ᵀ), the band statsmodels'
        ``get_prediction(...).conf_int()`` gives for the mean.
        """
        if not 0 < level < 1:
            raise LlmdynError(f"level must be in (0, 1), got {level}")
        x = np.asarray(x, dtype=np.float64)
        design = np.stack([np.ones_like(x), x], -1)  # [..., 2]
        se = np.sqrt(np.einsum("...a,ab,...b->...", design, self.cov, design))
        half = scipy_stats.t.ppf((1 + level) / 2, self.df_resid) * se
        mid = self.predict(x)
        return mid - half, mid + half

    def summary(self) -> str:
        """One line: slope, R², p and n."""
        return f"slope {self.slope:.3g}, R² = {self.r2:.2f}, p = {self.p:.2g}, n = {self.n}"


def ols(x, y) -> LinearFit:
    """Fit y = a + b·x by ordinary least squares (statsmodels), as in paper A's R² and p-values.

    Args:
        x: predictor, any shape (flattened), not constant.
        y: response, same number of points as ``x``; at least 3 points.

    Returns:
        The fit with slope, intercept, R², p-value of the slope and its covariance.
    """
    import statsmodels.api as sm

    x, y = _pair(x, y, 3)
    result = sm.OLS(y, sm.add_constant(x, has_constant="add")).fit()
    return LinearFit(slope=float(result.params[1]), intercept=float(result.params[0]),
                     r2=float(result.rsquared), p=float(result.pvalues[1]),
                     slope_stderr=float(result.bse[1]), n=int(x.size),
                     cov=np.asarray(result.cov_params()), df_resid=float(result.df_resid))


def ols_or_none(x, y) -> LinearFit | None:
    """:func:`ols`, or None when there is nothing to fit (x constant or fewer than 3 points)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size < 3 or np.ptp(x) == 0:
        return None
    return ols(x, y)


@dataclass(frozen=True)
class ExponentialFit:
    """y = amplitude · exp(rate · x), fitted by OLS of ln y on x (paper A Fig 7).

    Attributes:
        amplitude: e^intercept of the log-scale fit.
        rate: slope of ln y against x.
        r2: R² of the log-scale fit.
        p: p-value of rate = 0.
        log_fit: the underlying linear fit of ln y.
    """

    amplitude: float
    rate: float
    r2: float
    p: float
    log_fit: LinearFit

    def predict(self, x) -> np.ndarray:
        """Fitted values amplitude · exp(rate · x)."""
        return np.exp(self.log_fit.predict(x))

    def band(self, x, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """The log-scale confidence band mapped back through exp."""
        lo, hi = self.log_fit.band(x, level)
        return np.exp(lo), np.exp(hi)


def exponential_fit(x, y) -> ExponentialFit:
    """Fit y = A·e^{b x} by OLS of ln y on x; y must be positive.

    Args:
        x: predictor, not constant.
        y: positive response, at least 3 points.

    Returns:
        The exponential fit, with R² and p on the log scale.
    """
    x, y = _pair(x, y, 3)
    if (y <= 0).any():
        raise LlmdynError(f"exponential_fit needs y > 0, got {int((y <= 0).sum())} value(s) "
                          "<= 0; shift or drop them first")
    fit = ols(x, np.log(y))
    return ExponentialFit(amplitude=float(np.exp(fit.intercept)), rate=fit.slope, r2=fit.r2,
                          p=fit.p, log_fit=fit)


class Correlation(NamedTuple):
    """A correlation coefficient with its two-sided p-value."""

    r: float  # Pearson r or Spearman ρ
    p: float  # two-sided p-value of r = 0
    n: int  # number of points


def pearson(x, y) -> Correlation:
    """Pearson correlation of two samples (flattened)."""
    x, y = _pair(x, y, 3)
    result = scipy_stats.pearsonr(x, y)
    return Correlation(float(result.statistic), float(result.pvalue), int(x.size))


def spearman(x, y) -> Correlation:
    """Spearman rank correlation of two samples (flattened)."""
    x, y = _pair(x, y, 3)
    result = scipy_stats.spearmanr(x, y)
    return Correlation(float(result.statistic), float(result.pvalue), int(x.size))


class PairedDifference(NamedTuple):
    """Mean paired difference with the p-value of a paired t-test."""

    mean: float  # mean of b − a
    p: float  # two-sided p-value of mean = 0 (NaN with fewer than 2 pairs)
    n: int  # number of pairs


def paired_difference(a, b) -> PairedDifference:
    """Mean of b − a over paired samples and the p-value of a paired t-test.

    Args:
        a: first condition, ``[prompt]``.
        b: second condition, same prompts in the same order.

    Returns:
        The mean difference, its p-value and the number of pairs.
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape or a.size == 0:
        raise LlmdynError(f"a and b must be non-empty and paired, got {a.size} and {b.size}")
    p = float(scipy_stats.ttest_rel(b, a).pvalue) if a.size >= 2 else float("nan")
    return PairedDifference(float((b - a).mean()), p, int(a.size))


@dataclass(frozen=True)
class PartialFit:
    """OLS of y on several named predictors (statsmodels), with one predictor singled out.

    Attributes:
        names: the predictors, in order.
        coef: ``[predictor]`` fitted coefficients (intercept excluded).
        p: ``[predictor]`` two-sided p-values of coefficient = 0.
        stderr: ``[predictor]`` standard errors.
        r2: R² of the full model.
        n: number of points.
    """

    names: tuple[str, ...]
    coef: np.ndarray
    p: np.ndarray
    stderr: np.ndarray
    r2: float
    n: int

    def of(self, name: str) -> tuple[float, float]:
        """(coefficient, p-value) of one predictor."""
        if name not in self.names:
            raise LlmdynError(f"no predictor {name!r}; predictors: {self.names}")
        i = self.names.index(name)
        return float(self.coef[i]), float(self.p[i])


def partial_regression(y, predictors: dict[str, Any]) -> PartialFit:
    """Fit y ~ intercept + Σ b_j x_j by OLS: does one predictor explain y beyond the others?

    Args:
        y: response ``[n]``.
        predictors: name → values ``[n]``; none constant, all finite, n > predictors + 1.
    """
    import statsmodels.api as sm

    y = np.asarray(y, dtype=np.float64).ravel()
    names = tuple(predictors)
    X = np.stack([np.asarray(predictors[k], dtype=np.float64).ravel() for k in names], 1)
    if X.shape[0] != y.size or X.shape[0] < len(names) + 2:
        raise LlmdynError(f"need matching lengths and more than {len(names) + 1} points, got "
                          f"y {y.size} and predictors {X.shape}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise LlmdynError("y and the predictors must be finite; drop NaN/inf points first")
    constant = [k for k, col in zip(names, X.T, strict=True) if np.ptp(col) == 0]
    if constant:
        raise LlmdynError(f"predictors {constant} are constant; a coefficient is undefined")
    result = sm.OLS(y, sm.add_constant(X, has_constant="add")).fit()
    return PartialFit(names, np.asarray(result.params[1:]), np.asarray(result.pvalues[1:]),
                      np.asarray(result.bse[1:]), float(result.rsquared), int(y.size))
