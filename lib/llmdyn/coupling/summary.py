"""Summaries of depth-coupling maps: per layer, per prompt, adjacency weights, authors' split."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from llmdyn import LlmdynError
from llmdyn.coupling import matrix
from llmdyn.coupling.depth import (
    DepthCoupling,
    diagonal_share,
    mean_diagonal_share,
    offdiagonal_mean,
)


def _maps(miscoupling, name: str = "miscoupling") -> np.ndarray:
    """``[..., layer, layer]`` float64 with at least two layers."""
    M = np.asarray(miscoupling, dtype=np.float64)
    if M.ndim < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] < 2:
        raise LlmdynError(f"{name} must be [..., layer, layer] with layer >= 2, got shape "
                          f"{M.shape}")
    return M


def strength(miscoupling) -> np.ndarray:
    """Coupling strength c(A) = 1 − m̃(A), paper A's coupling −m̃ (§4.3) shifted by one.

    ``[..., layer, layer] → [..., layer, layer]``: 0 for no diagonal at all, 1 for a diagonal A.
    """
    return 1.0 - _maps(miscoupling)


def chance_strength(k: int) -> float:
    """c(A) = 1 − sqrt(1 − 1/k) expected when two layers' top-k bases are unrelated.

    For unrelated bases each of the k² entries of A carries about the same energy, so the
    diagonal holds 1/k of ‖A‖_F² and m̃ ≈ sqrt(1 − 1/k) (0.017 for k = 30).
    """
    if not isinstance(k, int | np.integer) or k < 1:
        raise LlmdynError(f"k must be a positive int, got {k!r}")
    return float(1.0 - np.sqrt(1.0 - 1.0 / k))


def _off(n: int) -> np.ndarray:
    return ~np.eye(n, dtype=bool)


def layer_strength(miscoupling) -> np.ndarray:
    """How much each layer is coupled with all others (paper A Fig 15).

    c_l = mean over l′ ≠ l of [c(A^{l l′}) + c(A^{l′ l})] / 2, both directions of the pair.

    Args:
        miscoupling: m̃ maps ``[..., layer, layer]`` (row: Jacobian, column: singular vectors).

    Returns:
        ``[..., layer]``.
    """
    c = strength(miscoupling)
    sym = (c + np.swapaxes(c, -1, -2)) / 2  # (..., layer, layer)
    n = c.shape[-1]
    return np.where(_off(n), sym, 0.0).sum(-1) / (n - 1)


def mean_strength(miscoupling) -> np.ndarray:
    """Mean depth-wise coupling of a prompt: mean of c(A^{l l′}) over l ≠ l′ (paper A Fig 9).

    ``[..., layer, layer] → [...]``.
    """
    c = strength(miscoupling)
    return c[..., _off(c.shape[-1])].mean(-1)


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
    top = max(float(c[_off(len(c))].max()) for c in strengths)
    scale = max(top - chance, 1e-12)
    out = []
    for c in strengths:
        w = np.clip((c - chance) / scale, 0.0, 1.0)
        np.fill_diagonal(w, 0.0)
        out.append(w)
    return out


class AuthorsSplit(NamedTuple):
    """The two parts of the authors'-code score: authors² = offdiagonal² + diagonal²."""

    offdiagonal: np.ndarray  # [..., layer, layer]  ‖A − Diag A‖_F / ‖s_i‖₂
    diagonal: np.ndarray  # [..., layer, layer]  ‖|diag A| − s_i‖₂ / ‖s_i‖₂


def authors_split(A, S) -> AuthorsSplit:
    """Split ‖|A| − diag(s_i)‖_F / ‖s_i‖₂ (authors' code) into off-diagonal and diagonal parts.

    The off-diagonal entries of |A| − diag(s_i) are the |A_ab|, its diagonal is |A_aa| − s_ia, so
    the squared score is the sum of the two squared parts. The paper's m̃ (eq. 14) sees only the
    first, relative to ‖A‖_F; the second penalises a diagonal whose magnitudes differ from J_i's
    own singular values, even when A is exactly diagonal.

    Args:
        A: coupling matrices ``[..., layer, layer, k, k]`` (tile (i, j) = U_j^T J_i V_j).
        S: top-k singular values of each J_i, ``[..., layer, k]``.

    Returns:
        Both parts, ``[..., layer, layer]``.
    """
    A = np.asarray(A, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    if A.ndim < 4 or A.shape[-1] != A.shape[-2] or A.shape[-3] != A.shape[-4]:
        raise LlmdynError(f"A must be [..., layer, layer, k, k], got shape {A.shape}")
    if S.shape != A.shape[:-3] + A.shape[-1:]:
        raise LlmdynError(f"S must be [..., layer, k] = {A.shape[:-3] + A.shape[-1:]}, got "
                          f"{S.shape}")
    diag = np.diagonal(A, axis1=-2, axis2=-1)  # (..., layer, layer, k)
    s = S[..., :, None, :]  # (..., layer, 1, k): J_i's own values for every reference j
    norm = np.linalg.norm(S, axis=-1)[..., :, None]  # (..., layer, 1)
    off = matrix.offdiagonal_norm(A).numpy()  # ||A - Diag A||_F (eq 13), exactly 0 for diagonal A
    return AuthorsSplit(off / norm, np.linalg.norm(np.abs(diag) - s, axis=-1) / norm)


class DepthSummary(NamedTuple):
    """One model's depth coupling in three numbers, over pairs l ≠ l′ of the prompt-mean maps."""

    miscoupling: float  # mean miscoupling m̃(A) (paper A eq. 14)
    diagonal_share: float  # mean diagonal share 1 − m̃² (chance 1/k)
    authors: float  # mean authors'-code score ‖|A| − S_i‖_F / ‖s_i‖₂


def summarize_depth(couplings: Sequence[DepthCoupling]) -> DepthSummary:
    """Average :class:`llmdyn.coupling.DepthCoupling` results over prompts and pairs l ≠ l′."""
    if not len(couplings):
        raise LlmdynError("couplings is empty; pass one DepthCoupling per prompt")
    miscoupling = np.mean([c.miscoupling for c in couplings], 0)  # (layer, layer)
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
