"""The papers' figure types in one consistent style; each helper draws on an Axes and returns it."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

TRAINED_COLOR = "black"
UNTRAINED_COLOR = "tab:blue"  # the papers draw initialisation in blue


def style() -> None:
    """Readable defaults for every chapter: sizes tuned for the book's column width."""
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 110, "font.size": 12, "axes.titlesize": 12,
        "axes.labelsize": 12, "xtick.labelsize": 11, "ytick.labelsize": 11,
        "legend.fontsize": 11, "figure.constrained_layout.use": True,
    })


def _as_numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def coupling_grid(
    A,
    ax: Axes,
    *,
    labels: Sequence[int],
    title: str,
    vmax: float | None = None,
    cbar: bool = True,
) -> Axes:
    """Grid of |A_{i,j}| matrices, one k×k tile per (block i, block j) (paper A Fig 3, B Fig 7).

    Args:
        A: coupling matrices ``[layer, layer, k, k]``; tile (i, j) shows ``|U_j^T J_i V_j|``.
        ax: where to draw.
        labels: the paper's layer numbers for the rows/columns (l = block + 1).
        title: names the model, prompt and token.
        vmax: colour-scale maximum (default: the 99th percentile, so one large singular
            value does not wash out the rest).
        cbar: draw a colour bar.

    Returns:
        The axes.
    """
    A = np.abs(_as_numpy(A))
    n, _, k, _ = A.shape
    gap = max(1, k // 10)
    size = n * k + (n - 1) * gap
    canvas = np.full((size, size), np.nan)
    for i in range(n):
        for j in range(n):
            r, c = i * (k + gap), j * (k + gap)
            canvas[r:r + k, c:c + k] = A[i, j]
    vmax = vmax if vmax is not None else float(np.nanpercentile(A, 99))
    image = ax.imshow(canvas, cmap="magma", vmin=0, vmax=vmax, interpolation="nearest")
    centres = [i * (k + gap) + k / 2 - 0.5 for i in range(n)]
    ax.set_xticks(centres, [str(v) for v in labels])
    ax.set_yticks(centres, [str(v) for v in labels])
    ax.set_xlabel("reference layer l′ (its top-k singular vectors U, V)")
    ax.set_ylabel("layer l (its Jacobian J)")
    ax.set_title(title)
    if cbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8, label="|A| entry")
    return ax


def layer_heatmap(
    M,
    ax: Axes,
    *,
    title: str,
    label: str,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "RdYlBu",
    first_layer: int = 1,
) -> Axes:
    """Heatmap of a layer × layer quantity such as normalised mis-coupling (paper B Fig 6).

    Args:
        M: ``[layer, layer]``; ``M[i, j]`` compares the Jacobian of layer i with the singular
            vectors of layer j.
        ax: where to draw.
        title: names the model and prompt set.
        label: colour-bar label (the quantity and its direction, e.g. "lower = coupled").
        vmin: colour-scale minimum.
        vmax: colour-scale maximum.
        cmap: colour map (red = low = strong coupling by default, as in paper B).
        first_layer: the paper's number of row 0 (1: paper layers l = block + 1).

    Returns:
        The axes.
    """
    M = _as_numpy(M)
    n = M.shape[0]
    extent = (first_layer - 0.5, first_layer + n - 0.5, first_layer + n - 0.5, first_layer - 0.5)
    image = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax, extent=extent,
                      interpolation="nearest")
    ax.set_xlabel("layer j (singular vectors)")
    ax.set_ylabel("layer i (Jacobian)")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label=label)
    return ax


def band(
    x,
    values,
    ax: Axes,
    *,
    label: str,
    color: str = TRAINED_COLOR,
    center: str = "median",
    spread: str = "iqr",
) -> Axes:
    """A centre line with a band over prompts (median+IQR in paper A, mean+min/max in paper B).

    Args:
        x: positions along the x axis, ``[n]``.
        values: ``[prompt, n]``; NaN entries are ignored.
        ax: where to draw.
        label: legend label.
        color: line and band colour.
        center: ``"median"`` or ``"mean"``.
        spread: ``"iqr"`` (25–75 %) or ``"minmax"``.

    Returns:
        The axes.
    """
    values = _as_numpy(values)
    mid = np.nanmedian(values, 0) if center == "median" else np.nanmean(values, 0)
    if spread == "iqr":
        lo, hi = np.nanpercentile(values, 25, 0), np.nanpercentile(values, 75, 0)
    else:
        lo, hi = np.nanmin(values, 0), np.nanmax(values, 0)
    ax.plot(x, mid, color=color, label=label)
    ax.fill_between(x, lo, hi, color=color, alpha=0.2, linewidth=0)
    return ax


def adjacency(
    W,
    ax: Axes,
    *,
    title: str,
    first_layer: int = 1,
    color: str = "tab:red",
) -> Axes:
    """Layers on a circle, edges weighted by coupling strength (paper A Fig 1c–e).

    Args:
        W: ``[layer, layer]`` non-negative coupling strengths, already normalised over the
            depth pairs to [0, 1]; edge (i, j) uses the mean of W[i, j] and W[j, i].
        ax: where to draw.
        title: names the model.
        first_layer: the paper's number of node 0.
        color: edge colour.

    Returns:
        The axes.
    """
    W = _as_numpy(W)
    n = W.shape[0]
    angle = np.linspace(0, 2 * np.pi, n, endpoint=False)
    xy = np.stack([np.cos(angle), np.sin(angle)], 1)  # (layer, 2)
    sym = (W + W.T) / 2
    for i in range(n):
        for j in range(i + 1, n):
            w = float(np.clip(sym[i, j], 0, 1))
            ax.plot(*xy[[i, j]].T, color=color, alpha=w ** 2, linewidth=0.3 + 2.5 * w)
    ax.scatter(*xy.T, s=60, color="white", edgecolor="black", zorder=3)
    for i in range(n):
        if n <= 12 or i % max(1, n // 10) == 0:
            ax.annotate(str(i + first_layer), 1.13 * xy[i], ha="center", va="center",
                        fontsize=8)
    ax.set_aspect("equal")
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-1.3, 1.3)
    ax.axis("off")
    ax.set_title(title)
    return ax
