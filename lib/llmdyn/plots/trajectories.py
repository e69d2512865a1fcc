"""Token trajectories in the plane of the top principal components (paper B Fig 1)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from llmdyn.plots.base import _as_numpy


def token_label(token: str) -> str:
    """A readable token: the tokenizers' space and newline markers (Ġ, ▁, Ċ) decoded, quoted."""
    return repr(token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\n"))


def pc_trajectories(
    proj,
    ax: Axes,
    *,
    tokens: Sequence[str],
    title: str,
    layers: tuple[int, int] | None = None,
    legend: bool = False,
) -> Axes:
    """Token trajectories in a 2-D principal-component plane (paper B Fig 1, paper A Fig 12).

    Each token's points x^first … x^last are joined in depth order from an open circle at
    x^first; the last token is black and on top, the others take a qualitative colour map.

    Args:
        proj: ``[tok, layer+1, 2]`` projected trajectories (``llmdyn.stats.pca.pca_projection``).
        ax: where to draw.
        tokens: the token strings, ``[tok]`` (legend labels).
        title: names the model, the prompt and the layers.
        layers: (first, last) layer indices drawn, both included (None: all).
        legend: add a legend of the tokens.

    Returns:
        The axes.
    """
    proj = _as_numpy(proj)
    n_tok = proj.shape[0]
    first, last = (0, proj.shape[1] - 1) if layers is None else layers
    cmap = plt.get_cmap("tab10" if n_tok <= 11 else "tab20")
    for i in range(n_tok):
        final = i == n_tok - 1
        color = "black" if final else cmap(i % cmap.N)
        pts = proj[i, first:last + 1]  # [points, 2]
        ax.plot(pts[:, 0], pts[:, 1], color=color, marker="o", markersize=2.5 if final else 2,
                linewidth=1.7 if final else 0.9, alpha=1.0 if final else 0.85,
                zorder=3 if final else 2, label=token_label(tokens[i]))
        ax.plot(pts[0, 0], pts[0, 1], marker="o", markersize=6, markerfacecolor="none",
                color=color, zorder=3 if final else 2)
    ax.xaxis.set_major_locator(plt.MaxNLocator(5))  # long tick labels must not overlap
    ax.set_xlabel("PC 1 of $X^L$")
    ax.set_ylabel("PC 2 of $X^L$")
    ax.set_title(title)
    if legend:
        ax.legend(fontsize=9, loc="best", ncol=1 if n_tok <= 12 else 2)
    return ax
