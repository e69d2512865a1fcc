"""Summaries of depth-coupling maps: per model, per prompt, and adjacency weights."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core.arrays import off_diagonal
from llmdyn.coupling.depth import DepthCoupling
from llmdyn.coupling.scores import (
    chance_strength,
    diagonal_share,
    mean_diagonal_share,
    offdiagonal_mean,
    strength,
)


def adjacency_weights(maps: Sequence, k: int) -> list[np.ndarray]:
    """Edge weights in [0, 1] for adjacency graphs of several m̃ maps on one shared scale.

    w = (c − c_chance) / (c_max − c_chance), clipped to [0, 1], where c = 1 − m̃, c_chance is
    :func:`chance_strength` and c_max the strongest off-diagonal pair over *all* maps given, so
    that a trained model and its untrained twin are drawn on the same scale (paper A Fig 1c–e).
    The diagonal (a layer with itself) is set to 0.

    Args:
        maps: m̃ maps, each ``[layer, layer]`` (mean over prompts).
        k: the number of singular vectors the maps used.

    Returns:
        One ``[layer, layer]`` weight matrix per map.
    """
    if not len(maps):
        raise LlmdynError("maps is empty; pass at least one [layer, layer] m̃ map")
    strengths = [strength(m) for m in maps]
    for c in strengths:
        if c.ndim != 2:
            raise LlmdynError(f"each map must be [layer, layer], got shape {c.shape}")
    chance = chance_strength(k)
    top = max(float(c[off_diagonal(len(c))].max()) for c in strengths)
    scale = max(top - chance, 1e-12)
    out = []
    for c in strengths:
        w = np.clip((c - chance) / scale, 0.0, 1.0)
        np.fill_diagonal(w, 0.0)
        out.append(w)
    return out


class DepthSummary(NamedTuple):
    """One model's depth coupling in three numbers, over pairs l ≠ l′ of the prompt-mean maps."""

    miscoupling: float  # mean miscoupling m̃(A) (paper A eq. 14)
    diagonal_share: float  # mean diagonal share 1 − m̃² (chance 1/k)
    authors: float  # mean authors'-code score ‖|A| − S_i‖_F / ‖s_i‖₂


def summarize_depth(couplings: Sequence[DepthCoupling]) -> DepthSummary:
    """Average :class:`llmdyn.coupling.DepthCoupling` results over prompts and pairs l ≠ l′."""
    if not len(couplings):
        raise LlmdynError("couplings is empty; pass one DepthCoupling per prompt")
    miscoupling = np.mean([c.miscoupling for c in couplings], 0)  # [layer, layer]
    share = np.mean([diagonal_share(c.miscoupling) for c in couplings], 0)
    authors = np.mean([c.authors for c in couplings], 0)
    return DepthSummary(offdiagonal_mean(miscoupling), offdiagonal_mean(share),
                        offdiagonal_mean(authors))


class PromptScores(NamedTuple):
    """Per-prompt depth-coupling scores over pairs l ≠ l′ (the samples a claim's interval uses)."""

    miscoupling: np.ndarray  # [prompt] mean m̃(A)
    diagonal_share: np.ndarray  # [prompt] mean diagonal share 1 − m̃²


def prompt_scores(couplings: Sequence[DepthCoupling]) -> PromptScores:
    """One value per prompt; their means over prompts equal :func:`summarize_depth`'s."""
    if not len(couplings):
        raise LlmdynError("couplings is empty; pass one DepthCoupling per prompt")
    return PromptScores(np.array([offdiagonal_mean(c.miscoupling) for c in couplings]),
                        np.array([mean_diagonal_share(c.miscoupling) for c in couplings]))
