"""The logit lens: entropy per layer and top-k tables (paper B Figs 5, 8–11)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

from llmdyn.plots.base import TRAINED_COLOR, _as_numpy


def entropy_lines(
    E,
    ax: Axes,
    *,
    title: str,
    log_vocab: float,
    labels: Sequence[str] | None = None,
    color: str | None = TRAINED_COLOR,
    alpha: float = 0.35,
    x=None,
) -> Axes:
    """Logit-lens entropy of the last token per layer, one line per prompt (paper B Figs 5, 8).

    Args:
        E: ``[prompt, layer+1]`` entropies in nats.
        ax: where to draw.
        title: names the model and the prompt set.
        log_vocab: ln(vocab), drawn as a dashed line (the entropy of the uniform distribution).
        labels: one legend label per prompt (None: no legend entries, one shared colour).
        color: line colour (None with labels: the colour cycle).
        alpha: line opacity.
        x: x positions ``[layer+1]`` (default 0 … L); pass relative depth to compare models.

    Returns:
        The axes.
    """
    E = _as_numpy(E)
    x = np.arange(E.shape[1]) if x is None else _as_numpy(x)
    for i, row in enumerate(E):
        if labels is None:
            ax.plot(x, row, color=color, alpha=alpha, linewidth=1)
        else:
            ax.plot(x, row, color=color, alpha=alpha, linewidth=1.6, label=labels[i],
                    marker="o", markersize=2.5)
    ax.axhline(log_vocab, color="grey", linestyle="--", linewidth=1,
               label=f"ln(vocab) = {log_vocab:.2f}")
    ax.set_ylim(-0.2, log_vocab * 1.06)
    ax.set_xlabel("layer l (0 = embedding)")
    ax.set_ylabel("entropy S(Pˡ) of the next token (nats)")
    if x is None:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    return ax


def topk_table(
    tokens: Sequence[Sequence[str]],
    probs,
    ax: Axes,
    *,
    layers: Sequence[int],
    title: str,
    entropy=None,
) -> Axes:
    """Top-k next tokens with their probabilities at selected layers (paper B Figs 9–11).

    Each row is a layer, each column a rank; a cell shows the token and its probability and is
    shaded by the probability.

    Args:
        tokens: ``[layer][k]`` decoded tokens, one row per entry of ``layers``.
        probs: ``[layer, k]`` their probabilities.
        ax: where to draw.
        layers: the layer numbers of the rows (0 = embedding).
        title: names the model and the prompt.
        entropy: ``[layer]`` entropies to print beside the layer numbers (optional).

    Returns:
        The axes.
    """
    probs = _as_numpy(probs)
    n, k = probs.shape
    image = ax.imshow(probs, cmap="Greens", vmin=0, vmax=1, aspect="auto",
                      interpolation="nearest")
    for r in range(n):
        for c in range(k):
            text = repr(tokens[r][c])[1:-1]  # shows spaces and newlines unambiguously
            text = (text[:11] + "…") if len(text) > 12 else text
            ax.text(c, r, f"‘{text}’\n{probs[r, c]:.3f}", ha="center", va="center",
                    fontsize=8, color="white" if probs[r, c] > 0.6 else "black")
    rows = [f"l = {layer}" + ("" if entropy is None else f"\nS = {float(entropy[i]):.2f}")
            for i, layer in enumerate(layers)]
    ax.set_yticks(range(n), rows, fontsize=8)
    ax.set_xticks(range(k), [f"#{c + 1}" for c in range(k)])
    ax.set_xlabel("rank of the next-token prediction")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label="probability Pˡ(token)")
    return ax
