"""Paper B's Thought/Fixation contrast: split per-layer measurements at a boundary (Table 1)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from llmdyn import LlmdynError
from llmdyn.phases import PhaseSplit, as_split

__all__ = ["PAPER_TABLE1", "alignment_profile", "pair_phase_means", "phase_means"]

Phase = Literal["Thought", "Fixation"]

# Paper B Table 1: the phase in which each property is stronger ("MORE"), and what we measure.
PAPER_TABLE1: dict[str, tuple[Phase, str]] = {
    "LINEAR": ("Fixation", "windowed LSS (lower = more linear)"),
    "EQUISPACED": ("Fixation", "windowed equidistance (lower = more equispaced)"),
    "ALIGNED": ("Thought", "r(A_{i,j,K}) within the phase, i ≠ j (lower = more aligned)"),
    "CONFIDENT": ("Fixation", "logit-lens entropy, nats (lower = more confident)"),
}


def phase_means(values: np.ndarray, boundary: PhaseSplit | int) -> tuple[float, float]:
    """Mean of a per-layer measurement over the Thought layers and over the Fixation layers.

    At a boundary ``b``, layers ``1 … b-1`` are Thought and ``b … L`` Fixation; layer 0 (the
    embedding) is in neither (see :class:`llmdyn.phases.PhaseSplit`). NaN entries (e.g.
    windows that do not fit at the ends) are ignored; a phase with no finite entry gives NaN.

    Args:
        values: ``[prompt, layer+1]`` or ``[layer+1]``.
        boundary: the split, or the first Fixation layer in 2 … L.

    Returns:
        (Thought mean, Fixation mean) over prompts and layers.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[None]
    if values.ndim != 2 or values.shape[1] < 2:
        raise LlmdynError(f"values must be [prompt, layer+1] or [layer+1], got {values.shape}")
    thought, fixation = as_split(boundary, values.shape[1] - 1).masks()
    return _nanmean(values[:, thought]), _nanmean(values[:, fixation])


def pair_phase_means(M: np.ndarray, boundary: PhaseSplit | int) -> tuple[float, float]:
    """Mean of a block × block score over pairs i ≠ j that both lie in one phase.

    Row/column b is block b, which produces layer b + 1 (the paper's depth l = b + 1); it
    belongs to the phase that holds layer b + 1.

    Args:
        M: ``[layer, layer]``, e.g. r(A_{i,j,K}) (paper B Fig. 6).
        boundary: the split, or the first Fixation layer in 2 … L.

    Returns:
        (Thought mean, Fixation mean); NaN for a phase with fewer than two blocks.
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise LlmdynError(f"M must be [layer, layer] with layer >= 2, got {M.shape}")
    n = M.shape[0]
    off = ~np.eye(n, dtype=bool)
    means = []
    for layers in as_split(boundary, n).masks():
        in_phase = layers[1:]  # (layer,): block b produces layer b + 1
        mask = off & in_phase[:, None] & in_phase[None, :]
        means.append(_nanmean(M[mask]) if mask.any() else float("nan"))
    return means[0], means[1]


def _nanmean(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.mean(x[np.isfinite(x)])) if np.isfinite(x).any() else float("nan")


def alignment_profile(ratio: np.ndarray) -> np.ndarray:
    """How well the other blocks' singular vectors diagonalise each block: ``[layer]``.

    Row mean of r(A_{i,j,K}) over j ≠ i (paper B Fig. 6 read row by row); low where block i
    is aligned with the rest of the network.

    Args:
        ratio: ``[layer, layer]`` r(A_{i,j,K}) (row i: the Jacobian J_i, column j: the basis).
    """
    ratio = np.asarray(ratio, dtype=float)
    if ratio.ndim != 2 or ratio.shape[0] != ratio.shape[1] or ratio.shape[0] < 2:
        raise LlmdynError(f"ratio must be [layer, layer] with layer >= 2, got {ratio.shape}")
    off = ~np.eye(ratio.shape[0], dtype=bool)
    return np.array([row[mask].mean() for row, mask in zip(ratio, off, strict=True)])
