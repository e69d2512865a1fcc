"""Statistics of per-layer curves whose windowed values are NaN where no window fits.

A windowed LSS or equidistance (paper B Figs 3–4) has a value only at the layers where the
whole window fits, so its ``[prompt, layer+1]`` array is NaN in the first and last
``window // 2`` columns. NumPy's ``nan*`` reductions warn on such all-NaN columns ("Mean of
empty slice", "All-NaN slice", "Degrees of freedom <= 0"). These functions reduce only the
columns that hold a value, through an explicit mask, and leave the others NaN: the same numbers,
no warning, and nothing hidden by a warning filter.
"""

from __future__ import annotations

import numpy as np

from llmdyn import LlmdynError

__all__ = ["columns", "finite_mean"]

_REDUCE = {
    "mean": np.nanmean,
    "std": np.nanstd,
    "median": np.nanmedian,
    "min": np.nanmin,
    "max": np.nanmax,
}


def columns(values, reduce: str, *, q: float | None = None) -> np.ndarray:
    """Reduce ``values: [item, column]`` over items, column by column, ignoring NaN.

    Args:
        values: ``[item, column]``, e.g. ``[prompt, layer+1]`` windowed LSS.
        reduce: "mean", "std" (ddof 0), "median", "min", "max" or "percentile" (with ``q``).
        q: the percentile, 0 … 100, for ``reduce="percentile"``.

    Returns:
        ``[column]``; NaN where the column has no finite value.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise LlmdynError(f"values must be [item, column], got shape {v.shape}")
    if reduce == "percentile":
        if q is None or not 0 <= q <= 100:
            raise LlmdynError(f"reduce='percentile' needs q in 0 … 100, got {q!r}")
        fn = lambda x, axis: np.nanpercentile(x, q, axis=axis)  # noqa: E731
    elif reduce in _REDUCE:
        fn = _REDUCE[reduce]
    else:
        raise LlmdynError(f"reduce must be one of {sorted(_REDUCE) + ['percentile']}, "
                          f"got {reduce!r}")
    out = np.full(v.shape[1], np.nan)
    valid = np.isfinite(v).any(0)  # [column]: columns where at least one window fits
    if valid.any():
        out[valid] = fn(v[:, valid], axis=0)
    return out


def finite_mean(values, axis: int | None = None) -> np.ndarray | float:
    """Mean of the finite entries (along ``axis``); NaN where there is none, without a warning.

    Args:
        values: any array.
        axis: None for one number, or the axis to average over.
    """
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    total = np.where(finite, v, 0.0).sum(axis=axis)
    count = finite.sum(axis=axis)
    mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return float(mean) if np.ndim(mean) == 0 else mean
