"""Known answers for the coupling matrix A = U^T J V (float64); its scores: test_scores.py."""


import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.coupling.matrix import coupling_matrices, coupling_matrix
from llmdyn.coupling.scores import (
    authors_miscoupling,
    miscoupling,
    offdiag_ratio,
    offdiagonal_norm,
)
from llmdyn.jacobians.svd import svd_sorted

# Float64 round-off on O(1) quantities built from a handful of operations stays ~1e-15; 1e-12
# leaves a wide margin while still catching any formula error.
TIGHT = 1e-12


def orthogonal(d: int, gen: torch.Generator) -> torch.Tensor:
    q, r = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))  # [d, d], Haar-distributed orthogonal matrix


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


@pytest.fixture
def shared(gen):
    """Two Jacobians with the same singular vectors, distinct descending singular values."""
    d = 8
    U, V = orthogonal(d, gen), orthogonal(d, gen)
    s1 = torch.linspace(8.0, 1.0, d, dtype=torch.float64)
    s2 = torch.linspace(3.0, 0.5, d, dtype=torch.float64)
    J1 = U @ torch.diag(s1) @ V.T  # [d_model, d_model]
    J2 = U @ torch.diag(s2) @ V.T  # [d_model, d_model]
    return J1, J2, s1, s2


# ----------------------------------------------------------------------------- SVD and coupling


def test_svd_sorted_reconstructs_and_is_orthonormal(gen):
    J = torch.randn(3, 6, 6, generator=gen, dtype=torch.float64)
    U, S, Vh = svd_sorted(J)
    assert torch.allclose(U @ torch.diag_embed(S) @ Vh, J, atol=TIGHT)
    eye = torch.eye(6, dtype=torch.float64)
    assert torch.allclose(U.mT @ U, eye, atol=TIGHT) and torch.allclose(Vh @ Vh.mT, eye, atol=TIGHT)
    assert (S[..., :-1] >= S[..., 1:]).all()
    # sign convention: the largest-magnitude entry of each left singular vector is positive
    idx = U.abs().argmax(dim=-2, keepdim=True)
    assert (torch.gather(U, -2, idx) > 0).all()


def test_coupling_matrix_shared_singular_vectors(shared):
    J1, J2, s1, _ = shared
    k = 5
    # SVD signs are arbitrary, but a singular pair (u_a, v_a) always flips together (u_a s_a v_a^T
    # is fixed), so diagonal entries u_a^T J v_a are sign-invariant. With shared singular vectors
    # every off-diagonal entry is exactly 0, so A = diag(s1[:k]) whatever signs SVD picks.
    A = coupling_matrix(J1, J2, k)
    assert A.shape == (k, k)
    # 1e-12 absolute: entries are O(10) and the SVD of an 8x8 matrix is backward-stable at ~1e-15
    assert torch.allclose(A, torch.diag(s1[:k]), atol=TIGHT)
    assert offdiagonal_norm(A).item() == pytest.approx(0, abs=TIGHT)
    assert miscoupling(A).item() == pytest.approx(0, abs=TIGHT)
    assert offdiag_ratio(A).item() == pytest.approx(0, abs=TIGHT)
    # authors' variant: |A| - diag(s1) = 0 because the diagonal s1 is nonnegative
    assert authors_miscoupling(A, s1[:k]).item() == pytest.approx(0, abs=TIGHT)


def test_coupling_matrix_batched(shared):
    J1, J2, s1, s2 = shared
    A = coupling_matrix(torch.stack([J1, J2]), torch.stack([J2, J1]), 3)  # [2, 3, 3]
    assert A.shape == (2, 3, 3)
    assert torch.allclose(A, torch.diag_embed(torch.stack([s1[:3], s2[:3]])), atol=TIGHT)


def test_random_matrices_are_miscoupled(gen):
    # For independent Haar bases the entries of U_j^T U_i are ~N(0, 1/d), so A is far from
    # diagonal: its miscoupling is close to 1; 0.5 is a safe lower bound.
    J = torch.randn(2, 32, 32, generator=gen, dtype=torch.float64)
    A = coupling_matrix(J[0], J[1], 16)
    assert miscoupling(A).item() > 0.5
    assert offdiag_ratio(A).item() > 0.1


def test_coupling_matrices_diagonal_blocks_and_pairs(gen):
    J = torch.randn(4, 10, 10, generator=gen, dtype=torch.float64)
    k = 4
    A = coupling_matrices(J, k)
    assert A.shape == (4, 4, k, k)
    S = svd_sorted(J).S
    for i in range(4):
        # A[i, i] = U_i^T J_i V_i = diag(S_i); O(1) entries, float64 SVD -> 1e-12 absolute
        assert torch.allclose(A[i, i], torch.diag(S[i, :k]), atol=TIGHT)
        for j in range(4):
            assert torch.allclose(A[i, j], coupling_matrix(J[i], J[j], k), atol=TIGHT)
    # passing a precomputed SVD gives the same result
    assert torch.allclose(coupling_matrices(J, k, svd=svd_sorted(J)), A, atol=TIGHT)


def test_coupling_matrices_float32_matches_float64(gen):
    # float32 has eps ~6e-8; perturbation of singular vectors scales as eps * ||J|| / gap and the
    # top singular gaps of a 64x64 Gaussian matrix are O(1) against ||J|| ~ 16, so errors of
    # ~1e-5 relative to ||A|| are expected; 1e-4 leaves margin. The fixed sign convention of
    # svd_sorted makes the two dtypes pick the same signs, so A can be compared entrywise.
    J = torch.randn(3, 64, 64, generator=gen, dtype=torch.float64)
    A64 = coupling_matrices(J, 8)
    A32 = coupling_matrices(J.float(), 8)
    assert A32.dtype == torch.float32
    err = torch.linalg.matrix_norm(A32.double() - A64) / torch.linalg.matrix_norm(A64)
    assert err.max().item() < 1e-4


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda J: coupling_matrix(J, J, 7), r"k: got 7; expected .*d_model = 6"),
        (lambda J: coupling_matrix(J, J, 0), r"k: got 0"),
        (lambda J: coupling_matrices(J[None], 7), r"k: got 7"),
        (lambda J: coupling_matrix(J, J[:, :5], 2), r"J_ref: got shape \(6, 5\)"),
        (lambda J: coupling_matrices(J, 2), r"jacobians: got shape \(6, 6\) \(ndim 2\)"),
    ],
)
def test_coupling_errors(call, match):
    J = torch.randn(6, 6, dtype=torch.float64)
    with pytest.raises(LlmdynError, match=match):
        call(J)
