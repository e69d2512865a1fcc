"""Estimates with seeded bootstrap intervals over prompts (or seeds), by ``scipy.stats.bootstrap``.

A statistic here is vectorised: it takes one or two ``[resample, item]`` arrays and returns
``[resample]``. ``scipy.stats.bootstrap`` draws items with replacement (the same draws for every
sample when the samples are paired, e.g. trained and untrained on the same prompts) and reports
the bias-corrected and accelerated (BCa) interval (Efron & Tibshirani 1993, §14.3; DiCiccio &
Efron 1996). Where BCa is undefined (every draw gives the same value, or some draws give no
value, e.g. a peak position on a flat curve) the interval is the percentile interval of the
finite draws, and none when fewer than half of the draws are finite.

Which method judges which statistic at which n (BCa, a t interval, an exact interval, or none)
is not decided here: `llmdyn.stats.coverage` reads it from the coverage table.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from llmdyn import LlmdynError

N_RESAMPLES = 2000  # bootstrap draws: the interval ends move by < 1 % between seeds at n ≥ 10
LEVEL = 0.95  # two-sided coverage of every interval in the book
MIN_ITEMS = 2  # fewer items than this give an estimate without an interval
BATCH = 250  # draws evaluated at once: bounds memory at [batch, ..., item]

Statistic = Callable[..., np.ndarray]  # ([resample, item], ...) -> [resample]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval.

    Attributes:
        value: the statistic on the full sample.
        lo: lower end of the interval (NaN when there is none).
        hi: upper end of the interval (NaN when there is none).
        n: number of items (prompts, seeds, layer pairs) the statistic uses.
        level: two-sided coverage of [lo, hi].
        exact: True when the value is a single fact (one named prompt), not a sample estimate.
        method: how [lo, hi] was computed ("bca", "percentile", "t", "ols_t", "fisher_z",
            "exact", "order", "log_t", "pitman_morgan_hc4", "zou", ...; see
            `llmdyn.stats.coverage.METHODS`); "" without an interval.
    """

    value: float
    lo: float
    hi: float
    n: int
    level: float = LEVEL
    exact: bool = False
    method: str = ""

    @property
    def has_interval(self) -> bool:
        """Whether [lo, hi] exists (enough items, a sample estimate)."""
        return not self.exact and bool(np.isfinite(self.lo) and np.isfinite(self.hi))


def exact(value: float) -> Estimate:
    """A single fact about one named input (e.g. the France prompt's top token): no interval."""
    return Estimate(float(value), float("nan"), float("nan"), 1, exact=True)


def _samples(samples: Sequence, paired: bool) -> list[np.ndarray]:
    """Flattened float64 samples; paired ones must have equal lengths."""
    arrays = [np.asarray(s, dtype=np.float64).ravel() for s in samples]
    if not arrays or any(a.size == 0 for a in arrays):
        raise LlmdynError(f"every sample needs at least one value, got sizes "
                          f"{[a.size for a in arrays]}")
    if paired and len({a.size for a in arrays}) > 1:
        raise LlmdynError(f"paired samples must have equal lengths, got "
                          f"{[a.size for a in arrays]}; pass paired=False for independent ones")
    return arrays


def _check(level: float, n_resamples: int) -> None:
    if not 0 < level < 1:
        raise LlmdynError(f"level must be in (0, 1), got {level}")
    if n_resamples < 100:
        raise LlmdynError(f"n_resamples must be at least 100, got {n_resamples}")


def bca(statistic: Statistic, *samples: np.ndarray, paired: bool = True, seed: int = 0,
        n_resamples: int = N_RESAMPLES, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """BCa interval ends of ``statistic`` for samples with leading batch axes.

    Args:
        statistic: vectorised, ``([..., item], ...) -> [...]``.
        *samples: ``[..., item]`` arrays (one batch shape; a simulation passes many samples).
        paired: the same draws of items in every sample.
        seed: seed of the draws.
        n_resamples: number of draws.
        level: two-sided coverage.

    Returns:
        ``(lo, hi)``, each of the batch shape; where BCa is undefined, the percentile interval
        of the finite draws (NaN when fewer than half are finite).
    """
    lo, hi, _ = bca_or_percentile(statistic, *samples, paired=paired, seed=seed,
                                  n_resamples=n_resamples, level=level)
    return lo, hi


def bca_or_percentile(statistic: Statistic, *samples, paired: bool = True, seed: int = 0,
                      n_resamples: int = N_RESAMPLES, level: float = LEVEL
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`bca`'s ends and where they are the percentile fallback (BCa undefined there).

    Returns:
        ``(lo, hi, percentile)``: ``percentile`` is True where BCa is undefined (every draw
        gives one value, or some none) and the ends are the percentile interval's.
    """
    def stat(*a, axis=-1):
        return statistic(*a)

    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")  # degenerate or undefined draws: handled below
        res = sps.bootstrap(samples, stat, n_resamples=n_resamples, batch=BATCH,
                            vectorized=True, paired=paired, axis=-1, confidence_level=level,
                            method="BCa", rng=np.random.default_rng(seed))
    lo = np.array(res.confidence_interval.low, dtype=np.float64)
    hi = np.array(res.confidence_interval.high, dtype=np.float64)
    bad = ~(np.isfinite(lo) & np.isfinite(hi))
    if bad.any():
        draws = np.moveaxis(np.asarray(res.bootstrap_distribution, dtype=np.float64), -1, 0)
        p_lo, p_hi = _percentiles(draws, level)  # draws [draw, ...] → [...] each
        lo, hi = np.where(bad, p_lo, lo), np.where(bad, p_hi, hi)
    return lo, hi, bad


def _percentiles(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile ends of ``[resample, ...]`` draws over their finite values (NaN if < half)."""
    draws = np.where(np.isfinite(draws), draws, np.nan)
    enough = np.isfinite(draws).sum(0) >= draws.shape[0] // 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: no interval
        lo, hi = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return np.where(enough, lo, np.nan), np.where(enough, hi, np.nan)


def bootstrap(statistic: Statistic, *samples, paired: bool = True, seed: int = 0,
              n_resamples: int = N_RESAMPLES, level: float = LEVEL) -> Estimate:
    """Estimate ``statistic(*samples)`` with a seeded BCa interval (``scipy.stats.bootstrap``).

    Args:
        statistic: vectorised, ``([resample, item], ...) -> [resample]``.
        *samples: one or more 1-d samples, ``[item]`` each.
        paired: resample the same item indices in every sample (equal lengths required);
            False resamples each sample on its own.
        seed: seed of the draws, so a rerun gives the same interval.
        n_resamples: number of bootstrap draws.
        level: two-sided coverage, in (0, 1).

    Returns:
        The estimate on the full samples and its BCa interval (the percentile interval where
        BCa is undefined, and then its method says "percentile"); no interval (NaN ends) with
        fewer than ``MIN_ITEMS`` items.
    """
    _check(level, n_resamples)
    arrays = _samples(samples, paired)
    value = float(statistic(*[a[None] for a in arrays])[0])
    n = min(a.size for a in arrays)
    if n < MIN_ITEMS:
        return Estimate(value, float("nan"), float("nan"), n, level)
    lo, hi, fallback = bca_or_percentile(statistic, *arrays, paired=paired, seed=seed,
                                         n_resamples=n_resamples, level=level)
    return _estimate(value, float(lo), float(hi), n, level, bool(fallback))


def _estimate(value: float, lo: float, hi: float, n: int, level: float,
              fallback: bool) -> Estimate:
    """An Estimate whose method says "bca", or "percentile" for the fallback (NaN: none)."""
    ok = np.isfinite(lo) and np.isfinite(hi)
    return Estimate(value, lo, hi, n, level,
                    method=("percentile" if fallback else "bca") if ok else "")


def bootstrap_rows(statistic: Callable[..., float], *samples, paired: bool = True,
                   seed: int = 0, n_resamples: int = N_RESAMPLES,
                   level: float = LEVEL) -> Estimate:
    """Like :func:`bootstrap` for statistics of whole ``[item, ...]`` arrays (not vectorised).

    Resamples rows (the first axis, e.g. prompts of a ``[prompt, layer+1]`` array) and calls
    ``statistic(*arrays)`` once per draw: for statistics such as the spread over prompts of a
    per-layer curve, averaged over a phase. ``scipy.stats.bootstrap`` resamples the row
    indices (BCa, with its jackknife over rows).

    Args:
        statistic: ``([item, ...], ...) -> float``.
        *samples: arrays with items on the first axis.
        paired: the same row draws for every sample (equal first dimensions required).
        seed: seed of the draws.
        n_resamples: number of bootstrap draws.
        level: two-sided coverage, in (0, 1).
    """
    _check(level, n_resamples)
    arrays = [np.asarray(s, dtype=np.float64) for s in samples]
    if not arrays or any(a.ndim == 0 or len(a) == 0 for a in arrays):
        raise LlmdynError("every sample needs at least one row")
    if paired and len({len(a) for a in arrays}) > 1:
        raise LlmdynError(f"paired samples must have equal first dimensions, got "
                          f"{[len(a) for a in arrays]}")
    value = float(statistic(*arrays))
    n = min(len(a) for a in arrays)
    if n < MIN_ITEMS:
        return Estimate(value, float("nan"), float("nan"), n, level)

    def on_rows(*index: np.ndarray) -> np.ndarray:
        """The statistic on each draw of row indices, ``[resample, item]`` -> ``[resample]``."""
        index = [np.asarray(i).astype(np.int64) for i in index]
        if paired:
            index = index * len(arrays)
        flat = [i.reshape(-1, i.shape[-1]) for i in index]  # [draw, item] each
        out = np.array([statistic(*[a[i] for a, i in zip(arrays, draw, strict=True)])
                        for draw in zip(*flat, strict=True)], dtype=np.float64)
        return out.reshape(index[0].shape[:-1])

    index = [np.arange(n, dtype=np.float64)] if paired else \
        [np.arange(len(a), dtype=np.float64) for a in arrays]
    lo, hi, fallback = bca_or_percentile(on_rows, *index, paired=paired, seed=seed,
                                         n_resamples=n_resamples, level=level)
    return _estimate(value, float(lo), float(hi), n, level, bool(fallback))


def _percentile_interval(value: float, stats: np.ndarray, n: int, n_resamples: int,
                         level: float) -> Estimate:
    """The estimate with the percentile interval of the finite resampled statistics.

    For the resamplers scipy has no equivalent of (clusters, replicates within cells).

    Args:
        value: the statistic on the full sample.
        stats: ``[resample]`` the statistic on each draw (NaN or inf where it is undefined).
        n: number of items.
        n_resamples: number of draws; fewer than half of them finite gives no interval.
        level: two-sided coverage.
    """
    stats = stats[np.isfinite(stats)]
    if stats.size < n_resamples // 2:
        return Estimate(value, float("nan"), float("nan"), n, level)
    lo, hi = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return Estimate(value, float(lo), float(hi), n, level, method="percentile")


# Vectorised statistics: each takes [resample, item] arrays and returns [resample].

def mean(a: np.ndarray) -> np.ndarray:
    """Mean over items."""
    return a.mean(-1)


def median(a: np.ndarray) -> np.ndarray:
    """Median over items."""
    return np.median(a, -1)


def ratio_of_means(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """mean(a) / mean(b), e.g. trained over untrained."""
    return a.mean(-1) / b.mean(-1)


def difference_of_means(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """mean(a) − mean(b)."""
    return a.mean(-1) - b.mean(-1)


def slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """OLS slope of y on x: cov(x, y) / var(x) (NaN where a draw has constant x)."""
    dx = x - x.mean(-1, keepdims=True)
    dy = y - y.mean(-1, keepdims=True)
    return (dx * dy).sum(-1) / (dx * dx).sum(-1)


def r2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """R² of the OLS line of y on x: the squared Pearson correlation."""
    dx = x - x.mean(-1, keepdims=True)
    dy = y - y.mean(-1, keepdims=True)
    return (dx * dy).sum(-1) ** 2 / ((dx * dx).sum(-1) * (dy * dy).sum(-1))


def signed_r2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """R² of the OLS line of y on x with the sign of its slope: in [−1, 1], r·|r| for Pearson r.

    A claim that y *rises* with x needs both a good fit and a positive slope; plain R² is high
    for a falling line too.
    """
    dx = x - x.mean(-1, keepdims=True)
    dy = y - y.mean(-1, keepdims=True)
    return np.sign((dx * dy).sum(-1)) * r2(x, y)


def difference_of_medians(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """median(a) − median(b)."""
    return np.median(a, -1) - np.median(b, -1)


def relative_iqr(a: np.ndarray) -> np.ndarray:
    """Inter-quartile range over median: the spread of a sample relative to its size."""
    q75, q50, q25 = np.percentile(a, [75, 50, 25], axis=-1)
    return (q75 - q25) / q50


def fraction_true(a: np.ndarray) -> np.ndarray:
    """Fraction of items that pass (1.0 = pass, 0.0 = fail)."""
    return a.mean(-1)


def geometric_mean_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """exp(mean(log(a/b))): the geometric mean of paired positive ratios (e.g. over runs)."""
    return np.exp((np.log(a) - np.log(b)).mean(-1))


def variance_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """var(a) / var(b) (sample variances), e.g. the spread over prompts in two phases."""
    return a.var(-1, ddof=1) / b.var(-1, ddof=1)


def correlation_difference(y: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """r(y, x1) − r(y, x2): how much better x1 correlates with y than x2 does (Pearson r)."""
    def r(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        du = u - u.mean(-1, keepdims=True)
        dv = v - v.mean(-1, keepdims=True)
        return (du * dv).sum(-1) / np.sqrt((du * du).sum(-1) * (dv * dv).sum(-1))

    return r(y, x1) - r(y, x2)
