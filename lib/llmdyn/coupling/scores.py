"""How far a coupling matrix A lies from diagonal: paper A's m̃ family and paper B's r(A).

The one home of m(A), m̃(A), 1 − m̃, 1 − m̃², their means over layer pairs l ≠ l′, r(A) and the
authors'-code variant with its split; every other module and notebook calls these
(tests/coupling/test_scores.py checks that no other module computes them). Shapes:
``[..., k, k]`` for coupling matrices A, ``[..., layer, layer]`` for maps of a score over layer
pairs (row l: the Jacobian J_l, column l′: the singular vectors of J_l′), ``[...]`` for what is
left.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from llmdyn import LlmdynError
from llmdyn.core.arrays import ArrayLike, checked_tensor, off_diagonal

# Convention: scores of A take torch tensors or numpy arrays and return torch tensors in A's
# floating dtype (integer input becomes float64); functions of a score map take and return numpy.


def checked_coupling(A: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    """A as a finite tensor ``[..., k, k]`` and its diagonal ``[..., k]``; raises if not square."""
    A = checked_tensor(A, "A", 2, "[..., k, k]")
    if A.shape[-1] != A.shape[-2]:
        raise LlmdynError(f"A: got shape {tuple(A.shape)}; expected square [..., k, k]")
    return A, torch.diagonal(A, dim1=-2, dim2=-1)  # [..., k, k], [..., k]


def offdiagonal_norm(A: ArrayLike) -> torch.Tensor:
    """Paper A's (unnormalised) miscoupling m(A) = ‖A − Diag(A)‖_F (§3.1 eq. 13).

    ``[..., k, k] → [...]``. The name says what it is; :func:`miscoupling` is the normalised m̃.
    """
    A, d = checked_coupling(A)
    return torch.linalg.matrix_norm(A - torch.diag_embed(d))  # [...]


def miscoupling(A: ArrayLike) -> torch.Tensor:
    """Miscoupling m̃(A) = ‖A − Diag(A)‖_F / ‖A‖_F (paper A §3.1 eq. 14, "normalized").

    ``[..., k, k] → [...]``, in [0, 1]; NaN where A is all zeros.
    """
    A, _ = checked_coupling(A)
    return offdiagonal_norm(A) / torch.linalg.matrix_norm(A)  # [...]


def offdiag_ratio(A: ArrayLike) -> torch.Tensor:
    """Paper B §3.6 r(A) = [Σ_{a ≠ b} |A_ab| / (K(K − 1))] / [Σ_a |A_aa| / K].

    ``[..., k, k] → [...]`` with k >= 2; inf or NaN where the diagonal is all zeros.
    """
    A, d = checked_coupling(A)
    K = A.shape[-1]
    if K < 2:
        raise LlmdynError(f"A: got k = {K}; expected k >= 2 (r(A) divides by K - 1)")
    diag_sum = d.abs().sum(-1)  # [...]
    off_sum = A.abs().sum((-2, -1)) - diag_sum  # [...]
    return off_sum / ((K - 1) * diag_sum)


def authors_miscoupling(A: ArrayLike, s: ArrayLike, p: float = 2) -> torch.Tensor:
    """Variant from the authors' released code for paper A: ‖ |A| − diag(s) ‖_F / ‖s‖_p.

    This is NOT the paper's eq. 13/14: it takes entrywise |A| and subtracts the singular values
    of the coupled Jacobian J_i instead of Diag(A). It is 0 when J_i shares J_j's top-k singular
    vectors (then A = diag(s)).

    Args:
        A: coupling matrices U_j,k^T J_i V_j,k, ``[..., k, k]``.
        s: top-k singular values of J_i, ``[..., k]`` with exactly A's leading axes; for
            ``coupling_matrices`` output pass ``S[:, None, :k].expand(layer, layer, k)``.
        p: order of the vector norm of ``s`` (as torch.linalg.vector_norm).

    Returns:
        ``[...]``.
    """
    A, _ = checked_coupling(A)
    s = checked_tensor(s, "s", 1, "[..., k]").to(A.dtype)
    if s.shape != A.shape[:-1]:
        raise LlmdynError(f"s: got shape {tuple(s.shape)}; expected {tuple(A.shape[:-1])}")
    num = torch.linalg.matrix_norm(A.abs() - torch.diag_embed(s))  # [...]
    return num / torch.linalg.vector_norm(s, ord=p, dim=-1)


class AuthorsSplit(NamedTuple):
    """The two parts of the authors'-code score: authors² = offdiagonal² + diagonal²."""

    offdiagonal: np.ndarray  # [..., layer, layer]  ‖A − Diag A‖_F / ‖s_i‖₂
    diagonal: np.ndarray  # [..., layer, layer]  ‖|diag A| − s_i‖₂ / ‖s_i‖₂


def authors_split(A: ArrayLike, S: ArrayLike) -> AuthorsSplit:
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
    diag = np.diagonal(A, axis1=-2, axis2=-1)  # [..., layer, layer, k]
    s = S[..., :, None, :]  # [..., layer, 1, k]: J_i's own values for every reference j
    norm = np.linalg.norm(S, axis=-1)[..., :, None]  # [..., layer, 1]
    off = offdiagonal_norm(A).numpy()  # ||A - Diag A||_F (eq 13), exactly 0 for diagonal A
    return AuthorsSplit(off / norm, np.linalg.norm(np.abs(diag) - s, axis=-1) / norm)


def diagonal_share(miscoupling: ArrayLike) -> np.ndarray:
    """Share of ‖A‖_F² on the diagonal, 1 − m̃(A)² (from eq. 14); about 1/k for unrelated bases.

    ``[...] → [...]``: m̃ of any shape, e.g. ``[layer, layer]`` or ``[tile]``.
    """
    return 1.0 - np.asarray(miscoupling) ** 2


def _maps(miscoupling: ArrayLike, name: str = "miscoupling") -> np.ndarray:
    """``[..., layer, layer]`` float64 with at least two layers."""
    M = np.asarray(miscoupling, dtype=np.float64)
    if M.ndim < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] < 2:
        raise LlmdynError(f"{name} must be [..., layer, layer] with layer >= 2, got shape "
                          f"{M.shape}")
    return M


def strength(miscoupling: ArrayLike) -> np.ndarray:
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


def offdiagonal_mean(M: np.ndarray) -> float:
    """Mean of a ``[layer, layer]`` score over pairs l ≠ l′ (the diagonal is trivially coupled)."""
    return float(np.mean(M[..., off_diagonal(M.shape[-1])]))


def mean_diagonal_share(miscoupling: np.ndarray) -> float:
    """Mean diagonal share 1 − m̃² over pairs l ≠ l′ of one ``[layer, layer]`` m̃ map."""
    return offdiagonal_mean(diagonal_share(miscoupling))


def layer_strength(miscoupling: ArrayLike) -> np.ndarray:
    """How much each layer is coupled with all others (paper A Fig 15).

    c_l = mean over l′ ≠ l of [c(A^{l l′}) + c(A^{l′ l})] / 2, both directions of the pair.

    Args:
        miscoupling: m̃ maps ``[..., layer, layer]`` (row: Jacobian, column: singular vectors).

    Returns:
        ``[..., layer]``.
    """
    c = strength(miscoupling)
    sym = (c + np.swapaxes(c, -1, -2)) / 2  # [..., layer, layer]
    n = c.shape[-1]
    return np.where(off_diagonal(n), sym, 0.0).sum(-1) / (n - 1)


def mean_strength(miscoupling: ArrayLike) -> np.ndarray:
    """Mean depth-wise coupling of a prompt: mean of c(A^{l l′}) over l ≠ l′ (paper A Fig 9).

    ``[..., layer, layer] → [...]``.
    """
    c = strength(miscoupling)
    return c[..., off_diagonal(c.shape[-1])].mean(-1)
