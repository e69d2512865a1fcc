"""Figure grids the chapters share: trained/untrained twins side by side, one panel per model."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from llmdyn import LlmdynError
from llmdyn.plots.matrices import token_coupling_grid
from llmdyn.plots.trajectories import pc_trajectories

TWINS = ("untrained", "trained")  # the papers draw initialisation on the left


def twins(*, figsize: tuple[float, float] = (12.5, 6.2)) -> tuple[Figure, dict[str, Axes]]:
    """One row of two panels: the untrained twin on the left, the trained model on the right.

    Returns:
        The figure and its axes by state, ``{"untrained": ax, "trained": ax}``.
    """
    fig, axes = plt.subplots(1, 2, figsize=figsize)
    return fig, dict(zip(TWINS, axes, strict=True))


def per_model(names: Sequence[str], *, rows: int = 1, width: float = 6.2,
              height: float = 4.4) -> tuple[Figure, dict[str, list[Axes]]]:
    """One column per model, ``rows`` panels each (e.g. LSS above equidistance).

    Args:
        names: the models, one column each, in order.
        rows: panels per model.
        width: width of one panel (inches).
        height: height of one panel (inches).

    Returns:
        The figure and each model's column of axes, top to bottom.
    """
    if not names:
        raise LlmdynError("names is empty; pass the models to draw, one column each")
    fig, axes = plt.subplots(rows, len(names), figsize=(width * len(names), height * rows),
                             squeeze=False)
    return fig, {name: list(axes[:, j]) for j, name in enumerate(names)}


def token_coupling_twins(grids: dict[str, object], *, titles: dict[str, str],
                         labels: list[str], row_label: str, col_label: str) -> Figure:
    """The untrained twin's token-coupling grid beside the trained model's (paper A Figs 4, 18).

    Args:
        grids: ``{"untrained": A, "trained": A}``, each ``[tok, tok, k, k]``.
        titles: a title per state.
        labels: token labels of the rows/columns.
        row_label: what the rows index.
        col_label: what the columns index.

    Returns:
        The figure (call ``plt.show()``).
    """
    fig, axes = twins()
    for state, ax in axes.items():
        token_coupling_grid(grids[state], ax, labels=labels, row_label=row_label,
                            col_label=col_label, title=titles[state])
    return fig


def trajectory_grid(panels: dict[str, dict], *, title: str) -> Figure:
    """Paper B Fig 1 for several models: one column each; rows all layers, shallow, deep.

    Args:
        panels: column title (e.g. "smollm2-135m (trained)") -> a dict with ``proj``
            (``[tok, layer+1, 2]``), ``tokens``, ``n_layers`` and ``windows`` (``{"shallow":
            (a, b), "deep": (a, b)}`` layer ranges).
        title: the figure's title.

    Returns:
        The figure (call ``plt.show()``).
    """
    fig, axes = per_model(list(panels), rows=3, width=5.2, height=13 / 3)
    for name, r in panels.items():
        rows = [("all layers", (0, r["n_layers"])), ("shallow", r["windows"]["shallow"]),
                ("deep", r["windows"]["deep"])]
        for i, (what, (a, b)) in enumerate(rows):
            pc_trajectories(r["proj"], axes[name][i], tokens=r["tokens"], layers=(a, b),
                            legend=i == 0,
                            title=f"{name}\n{what}: layers {a}–{b} of {r['n_layers']}")
    fig.suptitle(title)
    return fig
