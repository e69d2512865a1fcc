"""Known-answer tests for the papers' formulas on arrays (float64 unless stated): coupling
matrices and miscoupling, the Jacobians' SVD, trajectory shape, lens distributions, PCA."""

import math

import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.coupling.matrix import (
    authors_miscoupling,
    coupling_matrices,
    coupling_matrix,
    miscoupling,
    offdiag_ratio,
    offdiagonal_norm,
)
from llmdyn.jacobians.svd import svd_sorted
from llmdyn.stats.pca import pca_projection
from llmdyn.trajectories.lens import entropy, total_variation, tv_to_token
from llmdyn.trajectories.shape import (
    equidistance,
    expodistance,
    layerwise_alpha,
    line_shape_score,
    norms,
    windowed_equidistance,
    windowed_line_shape_score,
)

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


def test_miscoupling_known_matrix():
    A = np.array([[3.0, 4.0], [0.0, 0.0]])  # off-diagonal norm 4, full norm 5
    assert offdiagonal_norm(A).item() == pytest.approx(4.0, abs=TIGHT)
    assert miscoupling(A).item() == pytest.approx(0.8, abs=TIGHT)
    # r(A) = (4 / (2*1)) / (3 / 2) = 4/3
    assert offdiag_ratio(A).item() == pytest.approx(4 / 3, abs=TIGHT)
    # authors: || |A| - diag(1, 1) ||_F / ||(1, 1)||_2 = ||[[2, 4], [0, -1]]|| / sqrt 2
    assert authors_miscoupling(A, [1.0, 1.0]).item() == pytest.approx(math.sqrt(21 / 2))
    assert authors_miscoupling(A, [1.0, 1.0], p=1).item() == pytest.approx(math.sqrt(21) / 2)
    # leading axes are kept
    assert offdiagonal_norm(np.stack([A, 2 * A])).shape == (2,)


# ----------------------------------------------------------------------------- trajectories


def test_lss_straight_line_is_one():
    t = np.array([0.0, 0.5, 1.7, 3.0, 10.0])[:, None] * np.array([1.0, -2.0, 0.5])  # [5, 3]
    assert line_shape_score(t + 1.0) == pytest.approx(1.0, abs=TIGHT)


def test_lss_right_angle_and_zigzag():
    # two orthogonal steps: x~^2 - x~^0 = e1 + e2, LSS = 2 / sqrt 2
    t = np.array([[0.0, 0.0], [3.0, 0.0], [3.0, 0.5]])
    assert line_shape_score(t) == pytest.approx(math.sqrt(2), abs=TIGHT)
    # planar zig-zag of 4 steps alternating at +-45 degrees: unit steps sum to (4/sqrt2, 0)
    z = np.array([[0, 0], [1, 1], [2, 0], [3, 1], [4, 0]], dtype=float)
    assert line_shape_score(z) == pytest.approx(math.sqrt(2), abs=TIGHT)
    # batch axes are kept
    assert line_shape_score(np.stack([t, 2 * t])).shape == (2,)


def test_lss_zero_step_raises():
    with pytest.raises(LlmdynError, match="traj: has a zero-length step"):
        line_shape_score(np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]]))


def test_equidistance_known():
    even = np.arange(6.0)[:, None] * np.array([1.0, 2.0, 2.0])  # steps all of length 3
    assert equidistance(even) == pytest.approx(0.0, abs=TIGHT)
    # steps of length 1 and 3: mean 2, population std 1 -> 0.5
    x = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 3.0]])
    assert equidistance(x) == pytest.approx(0.5, abs=TIGHT)


def test_expodistance_geometric_growth():
    c, x0 = 1.3, np.array([0.3, -1.0, 2.0])
    traj = c ** np.arange(7.0)[:, None] * x0  # x^l = c^l x^0, [7, 3]
    alpha = layerwise_alpha(traj)
    assert alpha.shape == (6,)
    assert np.allclose(alpha, math.log(c), atol=TIGHT)
    assert expodistance(traj) == pytest.approx(0.0, abs=TIGHT)
    assert np.allclose(norms(traj), c ** np.arange(7.0) * np.linalg.norm(x0), rtol=TIGHT)


def test_expodistance_known():
    # norms 1, e, e^3: alpha = (1, 2), var 0.25, mean 1.5 -> ED = 1/9
    traj = np.array([[1.0, 0.0], [0.0, math.e], [math.e**3, 0.0]])
    assert expodistance(traj) == pytest.approx(1 / 9, abs=TIGHT)


def test_windowed_padding_and_centre():
    rng = np.random.default_rng(0)
    traj = rng.standard_normal((2, 9, 4))  # [tok, layer+1, d_model]
    w = 5
    out = windowed_line_shape_score(traj, window=w)
    assert out.shape == (2, 9)
    assert np.isnan(out[:, :2]).all() and np.isnan(out[:, -2:]).all()
    for c in range(2, 7):
        # same arithmetic on the same slice, so agreement is to round-off
        assert np.allclose(out[:, c], line_shape_score(traj[:, c - 2 : c + 3]), rtol=TIGHT)
    eq = windowed_equidistance(traj, window=9)
    assert np.isnan(eq[:, :4]).all() and np.isnan(eq[:, 5:]).all()
    assert np.allclose(eq[:, 4], equidistance(traj), rtol=TIGHT)


def test_trajectory_accepts_torch():
    t = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    assert line_shape_score(t) == pytest.approx(math.sqrt(2), abs=TIGHT)


# ----------------------------------------------------------------------------- logit lens


def test_entropy_known():
    vocab = 1000
    assert entropy(torch.zeros(3, vocab, dtype=torch.float64)).numpy() == pytest.approx(
        math.log(vocab), abs=TIGHT
    )
    peaked = torch.zeros(vocab, dtype=torch.float64)
    peaked[7] = 1e4  # other probabilities are exp(-1e4) = 0 in float64
    assert entropy(peaked).item() == pytest.approx(0.0, abs=TIGHT)
    # two equal logits among -inf-like ones: ln 2
    two = torch.full((5,), -1e4, dtype=torch.float64)
    two[:2] = 0.0
    assert entropy(two).item() == pytest.approx(math.log(2), abs=TIGHT)


def test_total_variation_and_tv_to_token():
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.2, 0.3, 0.5])
    assert total_variation(p, q).item() == pytest.approx(0.3, abs=TIGHT)
    assert tv_to_token(p, 1).item() == pytest.approx(0.7, abs=TIGHT)
    one_hot = np.eye(3)[1]
    assert tv_to_token(p, 1).item() == pytest.approx(total_variation(p, one_hot).item())
    batch = np.stack([p, q])  # [prompt, vocab]
    assert np.allclose(tv_to_token(batch, np.array([0, 2])).numpy(), [0.5, 0.5], atol=TIGHT)


# ----------------------------------------------------------------------------- projection


def test_pca_projection_preserves_planar_distances():
    rng = np.random.default_rng(1)
    d = 10
    basis, _ = np.linalg.qr(rng.standard_normal((d, 2)))  # [d_model, 2] orthonormal
    offset = rng.standard_normal(d)
    coords = rng.standard_normal((4, 6, 2))  # [tok, layer+1, 2]
    traj = coords @ basis.T + offset  # [tok, layer+1, d_model], all in one affine plane
    proj = pca_projection(traj)
    assert proj.shape == (4, 6, 2)

    def pairwise(x):
        flat = x.reshape(-1, x.shape[-1])
        return np.linalg.norm(flat[:, None] - flat[None], axis=-1)

    # projection onto the plane is an isometry of the plane; float64 SVD round-off ~1e-15
    assert np.allclose(pairwise(proj), pairwise(traj), atol=1e-10)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda J: coupling_matrix(J, J, 7), r"k: got 7; expected .*d_model = 6"),
        (lambda J: coupling_matrix(J, J, 0), r"k: got 0"),
        (lambda J: coupling_matrices(J[None], 7), r"k: got 7"),
        (lambda J: coupling_matrix(J, J[:, :5], 2), r"J_ref: got shape \(6, 5\)"),
        (lambda J: coupling_matrices(J, 2), r"jacobians: got shape \(6, 6\) \(ndim 2\)"),
        (lambda J: offdiag_ratio(J[:1, :1]), r"k >= 2"),
        (lambda J: authors_miscoupling(J, J[0, :3]), r"s: got shape \(3,\)"),
    ],
)
def test_coupling_errors(call, match):
    J = torch.randn(6, 6, dtype=torch.float64)
    with pytest.raises(LlmdynError, match=match):
        call(J)


def test_nan_and_ndim_errors():
    bad = np.ones((4, 3))
    bad[1, 2] = np.nan
    with pytest.raises(LlmdynError, match=r"traj: has 1 NaN/inf"):
        line_shape_score(bad)
    inf = np.eye(3)
    inf[0, 0] = np.inf
    with pytest.raises(LlmdynError, match=r"J: has 1 NaN/inf"):
        svd_sorted(inf)
    with pytest.raises(LlmdynError, match=r"logits: has"):
        entropy(torch.tensor([0.0, float("nan")]))
    with pytest.raises(LlmdynError, match=r"traj: got shape \(5,\) \(ndim 1\); expected"):
        equidistance(np.ones(5))
    with pytest.raises(LlmdynError, match=r"traj: got shape \(5, 3\) \(ndim 2\)"):
        pca_projection(np.ones((5, 3)))
    with pytest.raises(LlmdynError, match=r"J: got shape \(3, 4\)"):
        svd_sorted(np.ones((3, 4)))
    with pytest.raises(LlmdynError, match=r"p: expected probabilities"):
        total_variation(np.array([2.0, -1.0]), np.array([0.5, 0.5]))
    with pytest.raises(LlmdynError, match=r"token: got ids outside \[0, 2\)"):
        tv_to_token(np.array([0.5, 0.5]), 2)


@pytest.mark.parametrize("window", [4, 13, 1])
def test_window_errors(window):
    with pytest.raises(LlmdynError, match=rf"window: got {window}; expected an odd integer"):
        windowed_line_shape_score(np.random.default_rng(0).standard_normal((11, 3)), window)
