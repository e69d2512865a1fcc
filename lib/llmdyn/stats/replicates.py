"""Bootstrap of a designed grid: resample the replicates within each cell, keep the design.

In a grid of cells (e.g. stochastic-depth rate × weight decay) the cells are chosen, not drawn:
the independent random units are the replicates of a cell (its seeds, each an independently
initialised and trained model). A draw therefore keeps every cell and its size, and picks that
cell's replicates with replacement, whole (all of a replicate's columns together), as the
stratified bootstrap does with strata (Davison & Hinkley, 1997, §3.7). The statistic is then
computed on the drawn grid, and the interval is the percentile interval of the draws.

With n replicates per cell, the draws' spread of a cell mean is (n − 1)/n of the usual
variance estimate's: with 2 seeds the interval is too narrow by a factor of about √2 in
standard deviation. Callers say so beside the interval.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from llmdyn import LlmdynError
from llmdyn.stats.bootstrap import LEVEL, N_RESAMPLES, Estimate, _percentile_interval


def within_cell_draws(cells, *, seed: int = 0, n_resamples: int = N_RESAMPLES) -> np.ndarray:
    """Row indices of ``n_resamples`` draws that resample each cell's rows within the cell.

    Args:
        cells: ``[item]`` cell labels (items of one cell are its replicates).
        seed: seed of the draws.
        n_resamples: number of draws.

    Returns:
        ``[resample, item]`` indices: position i of every draw holds a row of item i's cell.
    """
    labels = np.array([str(c) for c in list(cells)])  # [item]
    if labels.size == 0:
        raise LlmdynError("cells is empty: nothing to resample")
    rng = np.random.default_rng(seed)
    draws = np.empty((n_resamples, labels.size), dtype=np.int64)  # [resample, item]
    for label in dict.fromkeys(labels):
        rows = np.flatnonzero(labels == label)  # [replicate]
        draws[:, rows] = rows[rng.integers(0, rows.size, size=(n_resamples, rows.size))]
    return draws


def bootstrap_within_cells(statistic: Callable[..., float], *samples, cells, seed: int = 0,
                           n_resamples: int = N_RESAMPLES, level: float = LEVEL) -> Estimate:
    """``statistic(*samples)`` with a percentile interval from within-cell draws of the rows.

    Args:
        statistic: ``([item, ...], ...) -> float``, called on the full samples and on each draw
            (rows reordered within cells, so anything keyed by row position, e.g. a cell's SD
            rate, stays aligned when passed as one of the samples).
        *samples: arrays with items on the first axis, all of the same length.
        cells: ``[item]`` cell labels.
        seed: seed of the draws.
        n_resamples: number of draws (at least 100).
        level: two-sided coverage, in (0, 1).

    Returns:
        The estimate and its interval; no interval (NaN ends) when no cell has two replicates
        or fewer than half the draws give a finite statistic. ``n`` is the number of items.
    """
    if not 0 < level < 1:
        raise LlmdynError(f"level must be in (0, 1), got {level}")
    if n_resamples < 100:
        raise LlmdynError(f"n_resamples must be at least 100, got {n_resamples}")
    arrays = [np.asarray(s) for s in samples]
    n = len(list(cells))
    if not arrays or any(a.ndim == 0 or len(a) != n for a in arrays):
        raise LlmdynError(f"every sample needs one row per cell label ({n}), got "
                          f"{[len(a) if a.ndim else 0 for a in arrays]}")
    value = float(statistic(*arrays))
    if len(set(map(str, cells))) == n:  # one replicate per cell: nothing varies
        return Estimate(value, float("nan"), float("nan"), n, level)
    draws = within_cell_draws(cells, seed=seed, n_resamples=n_resamples)
    stats = np.empty(n_resamples)  # [resample]
    with np.errstate(divide="ignore", invalid="ignore"):
        for r, idx in enumerate(draws):
            stats[r] = statistic(*[a[idx] for a in arrays])
    return _percentile_interval(value, stats, n, n_resamples, level)
