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
  ``scipy.stats.quantile_test(...).confidence_interval()``;
- ``log_t``: the geometric-mean ratio exp(mean(log(a_i/b_i))) of paired positive values, with
  the t interval of the mean log ratio carried back by exp (a t interval on the logs);
- ``pitman_morgan``: var(a)/var(b) for paired samples (Pitman 1939; Morgan 1939): the ratio is
  θ exactly when a + √θ·b and a − √θ·b are uncorrelated, so the interval is every θ that the
  t test of that correlation (n − 2 degrees of freedom) keeps; in closed form
  F·(K ± √(K² − 1)), F = s_a²/s_b², K = 1 + 2(1 − r²)·t²/(n − 2), r = corr(a, b);
- ``pitman_morgan_hc4``: the same inversion with the correlation tested as the slope of
  a − √θ·b on a + √θ·b with Cribari-Neto's (2004) HC4 standard error, which keeps its level
  when the data are skewed or heavy-tailed (Wilcox 2015, "Comparing the variances of two
  dependent variables", J. Stat. Distrib. Appl. 2:7); found numerically;
- ``zou``: r(y, x1) − r(y, x2) for two correlations that share y (Zou 2007, "Toward using
  confidence intervals to compare correlations", Psychol. Methods 12:399–413, the overlapping
  case): from each r's Fisher z interval (l_k, u_k) and the correlation c between the two r's,
  L = r1 − r2 − √((r1 − l1)² + (u2 − r2)² − 2c(r1 − l1)(u2 − r2)) and
  U = r1 − r2 + √((u1 − r1)² + (r2 − l2)² − 2c(u1 − r1)(r2 − l2)).

``bonferroni_level`` gives the level of each of k intervals that hold together at ``level``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from llmdyn import LlmdynError
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
        d = a - ratio[..., None] * b  # [..., item]: residuals of the ratio
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


def bonferroni_level(comparisons: int, level: float = LEVEL) -> float:
    """Level of each of ``comparisons`` intervals that all cover together with ``level``."""
    if not isinstance(comparisons, int) or comparisons < 1:
        raise LlmdynError(f"comparisons must be a positive int, got {comparisons!r}")
    return 1 - (1 - level) / comparisons


def log_t(a: np.ndarray, b: np.ndarray, level: float = LEVEL) -> Interval:
    """Interval of the geometric-mean ratio exp(mean(log(a/b))), paired positive ``[..., item]``.

    The t interval of the per-unit log ratios, carried back by exp: exact when the log ratios
    are normal, and the ratio's interval is symmetric on a log scale.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not (np.all(a > 0) and np.all(b > 0)):
        raise LlmdynError("a geometric-mean ratio needs positive values on both sides; got "
                          f"{int(np.sum(a <= 0) + np.sum(b <= 0))} values <= 0 (or NaN): use a "
                          "difference for values that can be 0 or negative")
    lo, hi = t_mean(np.log(a) - np.log(b), level)
    return np.exp(lo), np.exp(hi)


def _correlation(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r over the last axis."""
    dx = x - x.mean(-1, keepdims=True)
    dy = y - y.mean(-1, keepdims=True)
    return (dx * dy).sum(-1) / np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))


def pitman_morgan(a: np.ndarray, b: np.ndarray, level: float = LEVEL) -> Interval:
    """Pitman–Morgan interval of var(a)/var(b) for paired ``[..., item]`` samples (n ≥ 3).

    Exact for bivariate normal data; its coverage falls with skewed or heavy-tailed data (see
    the coverage table), where `pitman_morgan_hc4` keeps it.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n = a.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = a.var(-1, ddof=1) / b.var(-1, ddof=1)
        r = _correlation(a, b)
        t = sps.t.ppf(_q(level), n - 2)
        k = 1 + 2 * (1 - r ** 2) * t ** 2 / (n - 2)
        root = np.sqrt(np.maximum(k ** 2 - 1, 0.0))
    return f * (k - root), f * (k + root)


def hc4_slope_t(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The t statistic of the OLS slope of y on x with the HC4 standard error, ``[..., item]``.

    HC4 (Cribari-Neto 2004) weighs each squared residual e_i² by (1 − h_i)^−δ_i,
    δ_i = min(4, n·h_i/2), h_i the leverage of a line's fit.
    """
    n = x.shape[-1]
    dx = x - x.mean(-1, keepdims=True)
    dy = y - y.mean(-1, keepdims=True)
    sxx = (dx * dx).sum(-1, keepdims=True)
    slope = (dx * dy).sum(-1, keepdims=True) / sxx
    resid = dy - slope * dx
    leverage = 1 / n + dx ** 2 / sxx
    delta = np.minimum(4.0, n * leverage / 2)
    var = (dx ** 2 * resid ** 2 / (1 - leverage) ** delta).sum(-1) / sxx[..., 0] ** 2
    return slope[..., 0] / np.sqrt(var)


SEARCH_STEPS = 0.01 * 2.0 ** np.arange(20)  # offsets of log θ tried outward from log F
BISECTIONS = 36  # halvings of the bracketing step: each end to 2^-36 of it on log θ


def pitman_morgan_hc4(a: np.ndarray, b: np.ndarray, level: float = LEVEL) -> Interval:
    """Pitman–Morgan interval of var(a)/var(b) with the HC4 test, paired ``[..., item]`` (n ≥ 3).

    For each θ, u = a − √θ·b and v = a + √θ·b; cov(u, v) = var(a) − θ·var(b) is 0 at the true
    ratio, and at θ = F = s_a²/s_b² in the sample. The interval is the run of θ around F where
    `hc4_slope_t` of u on v stays within ±t_{n−2}: each end is the first crossing of the
    critical value found stepping out from F (``SEARCH_STEPS`` on log θ), then bisected.
    An end past the last step (θ beyond F·exp(±5,243)) is 0 or inf.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n = a.shape[-1]
    crit = sps.t.ppf(_q(level), n - 2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_f = np.log(a.var(-1, ddof=1)) - np.log(b.var(-1, ddof=1))

        def outside(offset: np.ndarray) -> np.ndarray:  # offset: [...] on log θ
            c = np.exp((log_f + offset) / 2)[..., None]
            return np.abs(hc4_slope_t(a + c * b, a - c * b)) > crit

        ends = []
        for sign in (-1.0, 1.0):
            inner = np.zeros(log_f.shape)
            outer = np.full(log_f.shape, np.inf)
            for step in SEARCH_STEPS:  # the first step that leaves the acceptance run
                found = np.isinf(outer) & outside(np.full(log_f.shape, sign * step))
                outer = np.where(found, step, outer)
                inner = np.where(np.isinf(outer), step, inner)
            for _ in range(BISECTIONS):
                mid = np.where(np.isinf(outer), inner, (inner + outer) / 2)
                out = outside(sign * mid)
                outer = np.where(out & np.isfinite(outer), mid, outer)
                inner = np.where(~out & np.isfinite(outer), mid, inner)
            ends.append(np.where(np.isinf(outer), sign * np.inf, sign * (inner + outer) / 2))
        lo, hi = np.exp(log_f + ends[0]), np.exp(log_f + ends[1])
    bad = ~np.isfinite(log_f)  # a constant sample: no ratio
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def zou(y: np.ndarray, x1: np.ndarray, x2: np.ndarray, level: float = LEVEL) -> Interval:
    """Zou's (2007) interval of r(y, x1) − r(y, x2), two correlations sharing y (n ≥ 4).

    Args:
        y: ``[..., item]``, the variable both correlations share.
        x1: ``[..., item]``, the same units: r(y, x1) comes first in the difference.
        x2: ``[..., item]``, the same units: its rival.
        level: two-sided coverage of this one interval; for k rivals judged together pass
            ``bonferroni_level(k)``.
    """
    y, x1, x2 = (np.asarray(s, dtype=np.float64) for s in (y, x1, x2))
    with np.errstate(divide="ignore", invalid="ignore"):
        r1, r2, r12 = _correlation(y, x1), _correlation(y, x2), _correlation(x1, x2)
        return zou_from_r(r1, r2, r12, y.shape[-1], level)


def zou_from_r(r1, r2, r12, n: int, level: float = LEVEL) -> Interval:
    """`zou` from the correlations: r1 = r(y, x1), r2 = r(y, x2), r12 = r(x1, x2), n units."""
    r1, r2, r12 = (np.asarray(r, dtype=np.float64) for r in (r1, r2, r12))
    half = sps.norm.ppf(_q(level)) / np.sqrt(n - 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        z1, z2 = np.arctanh(np.clip(r1, -1 + 1e-15, 1 - 1e-15)), \
            np.arctanh(np.clip(r2, -1 + 1e-15, 1 - 1e-15))
        l1, u1, l2, u2 = np.tanh(z1 - half), np.tanh(z1 + half), np.tanh(z2 - half), \
            np.tanh(z2 + half)
        # the large-sample correlation between r1 and r2 (Zou 2007, overlapping case)
        c = (((r12 - r1 * r2 / 2) * (1 - r1 ** 2 - r2 ** 2 - r12 ** 2) + r12 ** 3)
             / ((1 - r1 ** 2) * (1 - r2 ** 2)))
        d = r1 - r2
        lo = d - np.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2 - 2 * c * (r1 - l1) * (u2 - r2))
        hi = d + np.sqrt((u1 - r1) ** 2 + (r2 - l2) ** 2 - 2 * c * (u1 - r1) * (r2 - l2))
    return lo, hi
