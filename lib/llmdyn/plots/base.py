"""Colours, the book's style and the helpers every figure family shares."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

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


def _series_color(name: str, i: int) -> str:
    """The papers' colours: series named "untrained …" blue, "trained …" black, others cycle."""
    if name.startswith("untrained"):
        return UNTRAINED_COLOR
    return TRAINED_COLOR if name.startswith("trained") else f"C{(i + 1) % 10}"
