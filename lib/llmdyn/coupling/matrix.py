"""Paper A's coupling matrix A = U_ref,k^T J V_ref,k (its scores: `llmdyn.coupling.scores`)."""

from __future__ import annotations

import torch

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.core.arrays import ArrayLike
from llmdyn.jacobians.svd import Svd, square_jacobians, svd_sorted

# Convention: inputs are torch tensors or numpy arrays; outputs are torch tensors in the input's
# floating dtype (integer input becomes float64).


def coupling_matrix(J: ArrayLike, J_ref: ArrayLike, k: int) -> torch.Tensor:
    """Coupling matrix A = U_ref,k^T J V_ref,k (paper A §3.1 eq 10; paper B §3.6 A_{i,j,K}).

    Returns A, [..., k, k]; A = diag(S[:k]) when J == J_ref.

    Args:
        J: Jacobian being coupled, [..., d_model, d_model].
        J_ref: Jacobian whose top-k singular vectors form the basis; same shape as ``J``.
        k: number of singular vectors kept, 1 <= k <= d_model.
    """
    J, J_ref = square_jacobians(J, "J"), square_jacobians(J_ref, "J_ref")
    if J.shape != J_ref.shape:
        raise LlmdynError(f"J_ref: got shape {tuple(J_ref.shape)}; expected J's {tuple(J.shape)}")
    checks.k_value(k, J.shape[-1])
    U, _, Vh = svd_sorted(J_ref)
    Uk, Vk = U[..., :, :k], Vh[..., :k, :].mT  # [..., d_model, k] each
    return torch.einsum("...da,...de,...eb->...ab", Uk, J.to(Uk.dtype), Vk)  # [..., k, k]


def coupling_matrices(jacobians: ArrayLike, k: int, svd: Svd | None = None) -> torch.Tensor:
    """All pairwise coupling matrices A[i, j] = U_j,k^T J_i V_j,k (paper A eq 10, paper B §3.6).

    A[i, j] is paper B's A_{i,j,K} and paper A's A^{l l'} with l = i, l' = j; the diagonal blocks
    are A[i, i] = diag(S_i[:k]). Returns A, [layer, layer, k, k] (axis 0: coupled Jacobian i,
    axis 1: reference j).

    Args:
        jacobians: [layer, d_model, d_model].
        k: number of top singular vectors kept, 1 <= k <= d_model.
        svd: optional precomputed ``svd_sorted(jacobians)``.
    """
    J = square_jacobians(jacobians, "jacobians", stack=True)
    checks.k_value(k, J.shape[-1])
    return coupling_matrices_checked(J, k, svd)


def coupling_matrices_checked(J: torch.Tensor, k: int, svd: Svd | None = None) -> torch.Tensor:
    """:func:`coupling_matrices` of a stack whose shape and ``k`` the caller has checked."""
    svd = svd if svd is not None else svd_sorted(J)
    if svd.U.shape[0] != J.shape[0]:
        raise LlmdynError(f"svd: got U of shape {tuple(svd.U.shape)}; expected "
                          f"[{J.shape[0]}, {J.shape[-1]}, >= {k}], one SVD per Jacobian")
    return cross_matrices_checked(J, svd, k)


def cross_matrices_checked(J: torch.Tensor, ref: Svd, k: int) -> torch.Tensor:
    """A[i, j] = U_j,k^T J_i V_j,k for rows ``J`` and the SVDs ``ref`` of another stack.

    The rows and the references may be different stacks (layer l against layer l′ in
    :func:`llmdyn.coupling.cross_coupling`); with ``ref = svd_sorted(J)`` this is
    :func:`coupling_matrices`. The caller has checked ``J`` and ``k``.

    Args:
        J: ``[n, d_model, d_model]`` Jacobians being coupled.
        ref: SVD of the ``m`` references, ``U [m, d_model, >= k]`` and ``Vh [m, >= k, d_model]``
            (only the top ``k`` triplets are read).
        k: number of singular vectors kept.

    Returns:
        ``[n, m, k, k]`` (axis 0: coupled Jacobian i, axis 1: reference j).
    """
    U, _, Vh = ref
    n, d = J.shape[0], J.shape[-1]
    m = U.shape[0]
    if U.shape[-2] != d or U.shape[-1] < k or Vh.shape[-2] < k or Vh.shape[0] != m:
        raise LlmdynError(f"svd: got U of shape {tuple(U.shape)}; expected [m, {d}, >= {k}]")
    Uk, Vk = U[..., :, :k], Vh[..., :k, :].mT  # [m, d_model, k] each
    J = J.to(Uk.dtype)
    # Two plain matrix products, not one einsum per reference j (the faster route): every J_i
    # times every reference's V_k at once, then each U_j,k^T on its own columns.
    JV = J.reshape(n * d, d) @ Vk.transpose(0, 1).reshape(d, m * k)  # [n·d_model, m·k]
    JV = JV.reshape(n, d, m, k).permute(2, 0, 1, 3)  # [j, i, d_model, k]
    return (Uk.mT[:, None] @ JV).transpose(0, 1)  # [n, m, k, k]
