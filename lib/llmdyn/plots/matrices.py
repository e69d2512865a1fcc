"""Coupling matrices and layer × layer maps: |A| grids, heatmaps and adjacency graphs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

from llmdyn.plots.base import _as_numpy


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
    """Heatmap of a layer × layer quantity such as miscoupling (paper B Fig 6).

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
    xy = np.stack([np.cos(angle), np.sin(angle)], 1)  # [layer, 2]
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


def token_coupling_grid(
    A,
    ax: Axes,
    *,
    labels: Sequence[str],
    title: str,
    row_label: str,
    col_label: str,
    normalize: bool = True,
    vmax: float | None = None,
) -> Axes:
    """Grid of |A| tiles over token pairs at fixed layers l, l′ (paper A Figs 4, 17–19, 21–23).

    Jacobians of different tokens differ in scale by orders of magnitude (the first token is
    often an attention sink), so by default each tile is divided by its Frobenius norm: the
    colours then show where a tile's mass lies, which is what m̃(A) scores.

    Args:
        A: ``[tok, tok, k, k]``; tile (i, j) expresses row i's Jacobian at layer l in the top-k
            singular vectors of column j's Jacobian at layer l′.
        ax: where to draw.
        labels: one label per row and column (tokens or token pairs).
        title: names the model, the prompt, the layers and the kind of coupling.
        row_label: what varies along the rows (e.g. "t (Jacobian $J^l_{tt}$)").
        col_label: what varies along the columns (e.g. "t′ (singular vectors of $J^{l'}_{t't'}$)").
        normalize: show |A| / ‖A‖_F per tile (all-zero tiles stay 0).
        vmax: colour-scale maximum (default: the 99th percentile of the shown values).

    Returns:
        The axes.
    """
    A = np.abs(_as_numpy(A)).astype(float)  # [tok, tok, k, k]
    if normalize:
        norm = np.linalg.norm(A, axis=(-2, -1), keepdims=True)  # [tok, tok, 1, 1]
        A = np.divide(A, norm, out=np.zeros_like(A), where=norm > 0)
    coupling_grid(A, ax, labels=list(labels), title=title, vmax=vmax,  # type: ignore[arg-type]
                  cbar=False)
    ax.figure.colorbar(ax.images[-1], ax=ax, shrink=0.8,
                       label=r"$|A| \,/\, \|A\|_F$ per tile" if normalize else "|A| entry")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    ax.tick_params(axis="y", labelsize=7)
    return ax
