"""Singular values along depth and fitted lines with their bands (paper A Figs 9, 33, 34)."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from llmdyn.plots.base import TRAINED_COLOR, _as_numpy
from llmdyn.plots.depth import band


def spectrum(
    S,
    ax: Axes,
    *,
    title: str,
    n_top: int = 5,
    first_layer: int = 1,
    color: str = TRAINED_COLOR,
    label: str = "",
) -> Axes:
    """Top singular values of the block Jacobians against depth (paper A Figs 33–34).

    Args:
        S: singular values, descending, ``[prompt, layer, k]``.
        ax: where to draw (log-scale y).
        title: names the model and the prompts.
        n_top: how many singular values to draw: σ₁ bold with its IQR over prompts, σ₂ … fading.
        first_layer: the paper's number of row 0 (l = block + 1).
        color: line colour.
        label: legend prefix (e.g. "trained").

    Returns:
        The axes.
    """
    S = _as_numpy(S)
    depth = np.arange(first_layer, first_layer + S.shape[1])
    for r in range(min(n_top, S.shape[2]) - 1, -1, -1):
        mid = np.median(S[:, :, r], 0)
        if r == 0:
            band(depth, S[:, :, 0], ax, label=f"{label} σ₁".strip(), color=color)
        else:
            ax.plot(depth, mid, color=color, linewidth=0.8, alpha=0.25 + 0.5 / (r + 1),
                    label=f"{label} σ₂…σ{n_top}".strip() if r == 1 else None)
    ax.set_yscale("log")
    ax.set_xlabel("layer l")
    ax.set_ylabel("singular value of $J^l$ (median over prompts)")
    ax.set_title(title)
    return ax


def fit_scatter(
    x,
    y,
    fit,
    ax: Axes,
    *,
    label: str,
    color: str = TRAINED_COLOR,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
) -> Axes:
    """Points, their OLS line and its 95 % confidence band, the fit summarised in the legend.

    Args:
        x: predictor values ``[n]``.
        y: response values ``[n]``.
        fit: an :class:`llmdyn.stats.LinearFit` of y on x, or None to draw the points only.
        ax: where to draw.
        label: legend label of the points; the fit's slope, R² and p are appended.
        color: colour of points, line and band.
        xlabel: x-axis label.
        ylabel: y-axis label.
        title: axes title.

    Returns:
        The axes.
    """
    x, y = _as_numpy(x).ravel(), _as_numpy(y).ravel()
    if fit is None:
        ax.scatter(x, y, s=18, color=color, alpha=0.7, label=f"{label} (no fit: x constant)")
    else:
        ax.scatter(x, y, s=18, color=color, alpha=0.7,
                   label=f"{label}: slope {fit.slope:.3g}, R² = {fit.r2:.2f}, p = {fit.p:.2g}")
        grid = np.linspace(x.min(), x.max(), 100)
        lo, hi = fit.band(grid)
        ax.plot(grid, fit.predict(grid), color=color, linewidth=1.2)
        ax.fill_between(grid, lo, hi, color=color, alpha=0.15, linewidth=0)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax
