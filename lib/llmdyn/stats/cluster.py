"""Cluster bootstrap: resample whole clusters (runs, models) when rows within one are dependent.

Checkpoints of one training run, or prompts of one model, are not independent draws: they share
initial weights and data. A bootstrap that resamples rows treats them as independent and gives
intervals that are too narrow. Resampling clusters with replacement, and keeping each drawn
cluster's rows together, gives the interval over the independent unit (Field & Welsh 2007;
Cameron, Gelbach & Miller 2008).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from llmdyn import LlmdynError
from llmdyn.stats.bootstrap import LEVEL, MIN_ITEMS, N_RESAMPLES, Estimate, _percentile_interval


def cluster_bootstrap(statistic: Callable[..., float], *samples, clusters, seed: int = 0,
                      n_resamples: int = N_RESAMPLES, level: float = LEVEL) -> Estimate:
    """``statistic(*samples)`` with a percentile interval from resampling whole clusters.

    Args:
        statistic: ``([row], ...) -> float`` on 1-d samples (e.g. an R² of y on x).
        *samples: 1-d arrays ``[row]`` of equal length.
        clusters: ``[row]`` labels; rows with one label are drawn together.
        seed: seed of the draws.
        n_resamples: number of draws.
        level: two-sided coverage.

    Returns:
        The estimate with ``n`` = the number of clusters (the independent units).
    """
    arrays = [np.asarray(s, dtype=np.float64).ravel() for s in samples]
    labels = np.asarray(clusters).ravel()
    if not arrays or any(a.size != labels.size for a in arrays):
        raise LlmdynError(f"samples and clusters must have equal lengths, got "
                          f"{[a.size for a in arrays]} and {labels.size}")
    if not 0 < level < 1:
        raise LlmdynError(f"level must be in (0, 1), got {level}")
    groups = [np.flatnonzero(labels == g) for g in dict.fromkeys(labels.tolist())]
    value = float(statistic(*arrays))
    if len(groups) < MIN_ITEMS:
        return Estimate(value, float("nan"), float("nan"), len(groups), level)
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples)  # [resample]
    with np.errstate(divide="ignore", invalid="ignore"):
        for r in range(n_resamples):
            rows = np.concatenate([groups[i] for i in rng.integers(0, len(groups), len(groups))])
            stats[r] = statistic(*[a[rows] for a in arrays])
    return _percentile_interval(value, stats, len(groups), n_resamples, level)
