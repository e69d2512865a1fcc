"""Estimates with seeded percentile-bootstrap intervals over prompts (or seeds).

A statistic here is vectorised: it takes one or two ``[resample, item]`` arrays and returns
``[resample]``. The bootstrap draws items with replacement (the same draws for every sample when
the samples are paired, e.g. trained and untrained on the same prompts), evaluates the statistic
on each draw and reports the percentile interval (Efron & Tibshirani 1993, §13.3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from llmdyn import LlmdynError

N_RESAMPLES = 2000  # bootstrap draws: the percentile ends move by < 1 % between seeds at n ≥ 10
LEVEL = 0.95  # two-sided coverage of every interval in the book
MIN_ITEMS = 2  # fewer items than this give an estimate without an interval

Statistic = Callable[..., np.ndarray]  # ([resample, item], ...) -> [resample]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its percentile-bootstrap interval.

    Attributes:
        value: the statistic on the full sample.
        lo: lower end of the interval (NaN when there is none).
        hi: upper end of the interval (NaN when there is none).
        n: number of items (prompts, seeds, layer pairs) the statistic uses.
        level: two-sided coverage of [lo, hi].
        exact: True when the value is a single fact (one named prompt), not a sample estimate.
    """

    value: float
    lo: float
    hi: float
    n: int
    level: float = LEVEL
    exact: bool = False

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


def bootstrap(statistic: Statistic, *samples, paired: bool = True, seed: int = 0,
              n_resamples: int = N_RESAMPLES, level: float = LEVEL) -> Estimate:
    """Estimate ``statistic(*samples)`` with a seeded percentile-bootstrap interval.

    Args:
        statistic: vectorised, ``([resample, item], ...) -> [resample]``.
        *samples: one or more 1-d samples, ``[item]`` each.
        paired: resample the same item indices in every sample (equal lengths required);
            False resamples each sample on its own.
        seed: seed of the draws, so a rerun gives the same interval.
        n_resamples: number of bootstrap draws.
        level: two-sided coverage, in (0, 1).

    Returns:
        The estimate on the full samples and the (1 − level)/2, (1 + level)/2 percentiles of
        the resampled statistic; no interval (NaN ends) with fewer than ``MIN_ITEMS`` items.
    """
    if not 0 < level < 1:
        raise LlmdynError(f"level must be in (0, 1), got {level}")
    if n_resamples < 100:
        raise LlmdynError(f"n_resamples must be at least 100, got {n_resamples}")
    arrays = _samples(samples, paired)
    value = float(statistic(*[a[None] for a in arrays])[0])
    n = min(a.size for a in arrays)
    if n < MIN_ITEMS:
        return Estimate(value, float("nan"), float("nan"), n, level)
    rng = np.random.default_rng(seed)
    if paired:
        idx = rng.integers(0, n, size=(n_resamples, n))  # (resample, item)
        draws = [a[idx] for a in arrays]
    else:
        draws = [a[rng.integers(0, a.size, size=(n_resamples, a.size))] for a in arrays]
    with np.errstate(divide="ignore", invalid="ignore"):
        stats = np.asarray(statistic(*draws), dtype=np.float64)  # (resample,)
    return _percentile_interval(value, stats, n, n_resamples, level)


def bootstrap_rows(statistic: Callable[..., float], *samples, paired: bool = True,
                   seed: int = 0, n_resamples: int = N_RESAMPLES,
                   level: float = LEVEL) -> Estimate:
    """Like :func:`bootstrap` for statistics of whole ``[item, ...]`` arrays (not vectorised).

    Resamples rows (the first axis, e.g. prompts of a ``[prompt, layer+1]`` array) and calls
    ``statistic(*arrays)`` once per draw: for statistics such as the spread over prompts of a
    per-layer curve, averaged over a phase.

    Args:
        statistic: ``([item, ...], ...) -> float``.
        *samples: arrays with items on the first axis.
        paired: the same row draws for every sample (equal first dimensions required).
        seed: seed of the draws.
        n_resamples: number of bootstrap draws.
        level: two-sided coverage, in (0, 1).
    """
    if not 0 < level < 1:
        raise LlmdynError(f"level must be in (0, 1), got {level}")
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
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples)  # (resample,)
    with np.errstate(divide="ignore", invalid="ignore"):
        for r in range(n_resamples):
            if paired:
                idx = rng.integers(0, n, n)
                stats[r] = statistic(*[a[idx] for a in arrays])
            else:
                stats[r] = statistic(*[a[rng.integers(0, len(a), len(a))] for a in arrays])
    return _percentile_interval(value, stats, n, n_resamples, level)


def _percentile_interval(value: float, stats: np.ndarray, n: int, n_resamples: int,
                         level: float) -> Estimate:
    """The estimate with the percentile interval of the finite resampled statistics.

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
    return Estimate(value, float(lo), float(hi), n, level)


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
