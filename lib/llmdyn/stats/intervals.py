"""Closed-form and exact intervals, for the n and statistics where the bootstrap does not cover.

Every function takes samples with items on the last axis and any leading batch axes (the
coverage simulation passes thousands of samples at once) and returns ``(lo, hi)`` arrays of the
batch shape. The quantiles come from ``scipy.stats``; each method is the textbook one:

- ``t_mean``: x̄ ± t_{n−1, (1+level)/2} · s/√n (Student's t interval of a mean);
- ``t_difference``: the t interval of the mean paired difference a − b, or Welch's interval
  with Welch–Satterthwaite degrees of freedom for independent samples;
- ``delta_t``: the ratio of means R = ā/b̄ ± t_{n−1} · s_d/(√n · b̄), s_d the standard
  deviation of d_i = a_i − R·b_i (the linearised ratio estimator, Cochran 1977, §6.4), for
  paired samples;
- ``ols_t``: the OLS slope b = S_xy/S_xx ± t_{n−2} · √(RSS/(n−2)/S_xx);
- ``fisher_z``: r's interval tanh(atanh r ± z/√(n−3)) (Fisher 1921), carried to R² = r² (and
  to the signed R² r·|r|, which is monotone in r);
- ``clopper_pearson``: the exact binomial interval of a fraction from beta quantiles
  (Clopper & Pearson 1934), as ``scipy.stats.binomtest(...).proportion_ci("exact")``;
- ``order_median``: the distribution-free interval of a median between two order statistics
  x_(j) and x_(n+1−j), j the largest with P(Bin(n, ½) < j) ≤ (1 − level)/2, as
  ``scipy.stats.quantile_test(...).confidence_interval()``.
"""

# llmdyn: outside the code hash (no stored array depends on this module; see core/store.py)

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from llmdyn.stats.bootstrap import LEVEL

Interval = tuple[np.ndarray, np.ndarray]


def _q(level: float) -> float:
    return (1 + level) / 2


def t_mean(x: np.ndarray, level: float = LEVEL) -> Interval:
    """Student's t interval of the mean, ``x: [..., item]`` (n ≥ 2)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    half = sps.t.ppf(_q(level), n - 1) * x.std(-1, ddof=1) / np.sqrt(n)
    m = x.mean(-1)
    return m - half, m + half


def t_difference(a: np.ndarray, b: np.ndarray, *, paired: bool = True,
                 level: float = LEVEL) -> Interval:
    """Student's t interval of mean(a) − mean(b): paired (of a − b), or Welch's for independent."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if paired:
        return t_mean(a - b, level)
    na, nb = a.shape[-1], b.shape[-1]
    va, vb = a.var(-1, ddof=1) / na, b.var(-1, ddof=1) / nb
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))  # Welch–Satterthwaite
    half = sps.t.ppf(_q(level), df) * np.sqrt(va + vb)
    d = a.mean(-1) - b.mean(-1)
    return d - half, d + half


def delta_t(a: np.ndarray, b: np.ndarray, level: float = LEVEL) -> Interval:
    """Linearised (delta-method) t interval of mean(a)/mean(b), paired ``[..., item]`` samples."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n = a.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = a.mean(-1) / b.mean(-1)
        d = a - ratio[..., None] * b  # (..., item): residuals of the ratio
        half = (sps.t.ppf(_q(level), n - 1) * d.std(-1, ddof=1)
                / (np.sqrt(n) * np.abs(b.mean(-1))))
    return ratio - half, ratio + half


def ols_t(x: np.ndarray, y: np.ndarray, level: float = LEVEL) -> Interval:
    """The OLS slope's t interval with n − 2 degrees of freedom, ``x, y: [..., item]`` (n ≥ 3)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = x.shape[-1]
    dx = x - x.mean(-1, keepdims=True)
    dy = y - y.mean(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        sxx, sxy, syy = (dx * dx).sum(-1), (dx * dy).sum(-1), (dy * dy).sum(-1)
        b = sxy / sxx
        rss = np.maximum(syy - b * sxy, 0.0)
        half = sps.t.ppf(_q(level), n - 2) * np.sqrt(rss / (n - 2) / sxx)
    return b - half, b + half


def fisher_z(x: np.ndarray, y: np.ndarray, *, signed: bool = False,
             level: float = LEVEL) -> Interval:
    """Interval of R² (or of the signed R² r·|r|) from Fisher's z interval of Pearson r (n ≥ 4).

    R² = r² is not monotone in r: when r's interval contains 0, R²'s runs from 0 to the larger
    square of its ends.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = x.shape[-1]
    dx = x - x.mean(-1, keepdims=True)
    dy = y - y.mean(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (dx * dy).sum(-1) / np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))
        z = np.arctanh(np.clip(r, -1 + 1e-15, 1 - 1e-15))
        half = sps.norm.ppf(_q(level)) / np.sqrt(n - 3)
    r_lo, r_hi = np.tanh(z - half), np.tanh(z + half)
    if signed:
        return r_lo * np.abs(r_lo), r_hi * np.abs(r_hi)
    straddles = (r_lo < 0) & (r_hi > 0)
    lo = np.where(straddles, 0.0, np.minimum(r_lo ** 2, r_hi ** 2))
    return lo, np.maximum(r_lo ** 2, r_hi ** 2)


def clopper_pearson(passed: np.ndarray, level: float = LEVEL) -> Interval:
    """Exact binomial interval of the fraction of items that pass, ``passed: [..., item]`` 0/1."""
    passed = np.asarray(passed, dtype=np.float64)
    n, k = passed.shape[-1], passed.sum(-1)
    alpha = 1 - level
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(k > 0, sps.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        hi = np.where(k < n, sps.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return lo, hi


def order_median(x: np.ndarray, level: float = LEVEL) -> Interval:
    """Distribution-free interval of the median between two order statistics (NaN if n too small).

    Its coverage is at least ``level`` for any continuous distribution; with n ≤ 5 no pair of
    order statistics reaches 95 % (n = 5 gives 1 − 2/32 = 93.8 %), so it has no interval there.
    """
    x = np.sort(np.asarray(x, dtype=np.float64), axis=-1)
    n = x.shape[-1]
    j = int(sps.binom.ppf((1 - level) / 2, n, 0.5))  # P(Bin ≤ j) ≥ α/2 at this j
    if sps.binom.cdf(j, n, 0.5) > (1 - level) / 2:
        j -= 1  # the largest j with P(Bin(n, ½) ≤ j) ≤ α/2: x_(j+1) is the lower end
    if j < 0:
        nan = np.full(x.shape[:-1], np.nan)
        return nan, nan
    return x[..., j], x[..., n - 1 - j]
