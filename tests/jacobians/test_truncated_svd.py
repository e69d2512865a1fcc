"""Tests for llmdyn.jacobians.truncated: matrix-free top-K SVD against exact Jacobians (float64)."""

import math

import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.coupling.matrix import coupling_matrices
from llmdyn.jacobians.full import block_jacobians
from llmdyn.jacobians.svd import svd_sorted
from llmdyn.jacobians.truncated import (
    TruncatedSVD,
    _krylov_svd,
    principal_angles,
    truncated_block_svd,
    truncated_coupling_matrices,
)
from llmdyn.models.loading import load_model

PROMPT = "Fox jumps."
K = 8
# GPT-2 and GPT-NeoX blocks run entirely in float64, so products agree with the exact Jacobian
# to round-off. Llama and Gemma RMSNorm compute in float32 internally (x.to(float32)), which
# limits every route, the exact one included, to float32-level agreement.
TIGHT = {"tiny-gpt2": (1e-8, 1e-6), "tiny-neox": (1e-8, 1e-6),
         "tiny-llama": (1e-6, 1e-4), "tiny-gemma3": (1e-6, 1e-4)}


_LOADED: dict = {}


def tiny(name: str):
    """A float64 tiny model with its exact diagonal Jacobians and their SVD (cached)."""
    if name not in _LOADED:
        model = load_model(name, seed=0, dtype=torch.float64)
        jac = block_jacobians(model, PROMPT)  # [layer, tok, d_model, d_model]
        _LOADED[name] = model, jac, svd_sorted(jac)
    return _LOADED[name]


@pytest.mark.parametrize("name", sorted(TIGHT))
def test_full_krylov_space_is_exact(name):
    model, jac, (U, S, Vh) = tiny(name)
    s_tol, angle_tol = TIGHT[model.name]
    d = model.d_model
    out = truncated_block_svd(model, PROMPT, k=K, oversample=d - K)  # k + oversample >= d_model
    n_layer, n_tok = jac.shape[:2]
    assert out.U.shape == (n_layer, n_tok, d, K) and out.S.shape == (n_layer, n_tok, K)
    assert out.layers == tuple(range(n_layer)) and out.tokens == tuple(range(n_tok))
    rel = (out.S - S[..., :K]).abs() / S[..., :1]
    assert rel.max() < s_tol
    assert principal_angles(out.U, U[..., :K]).max() < angle_tol
    assert principal_angles(out.V, Vh[..., :K, :].mT).max() < angle_tol
    # U diag(S) V^T is the best rank-K approximation: its residual is the tail of the spectrum
    approx = out.U @ torch.diag_embed(out.S) @ out.V.mT  # [layer, tok, d_model, d_model]
    tail = S[..., K:].square().sum(-1).sqrt()  # [layer, tok]
    torch.testing.assert_close(torch.linalg.matrix_norm(jac - approx), tail,
                               rtol=s_tol * 1e3, atol=s_tol * 1e3)
    eye = torch.eye(K, dtype=out.U.dtype)
    torch.testing.assert_close(out.U.mT @ out.U, eye.expand_as(out.U.mT @ out.U))
    torch.testing.assert_close(out.V.mT @ out.V, eye.expand_as(out.V.mT @ out.V))


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-gemma3"])
def test_tolerance_drives_small_blocks_to_convergence(name):
    model, _, (U, S, Vh) = tiny(name)
    _, angle_tol = TIGHT[model.name]
    out = truncated_block_svd(model, PROMPT, layers=[-1], k=K, oversample=2, block_size=4, tol=1e-9)
    assert out.layers == (model.n_layers - 1,)
    assert principal_angles(out.U, U[-1:, ..., :K]).max() < angle_tol
    assert principal_angles(out.V, Vh[-1:, ..., :K, :].mT).max() < angle_tol


@pytest.mark.parametrize("name", ["tiny-neox", "tiny-llama"])
def test_last_token_matches_diagonal_entry(name):
    model, _, (U, S, Vh) = tiny(name)
    s_tol, angle_tol = TIGHT[model.name]
    out = truncated_block_svd(model, PROMPT, k=K, oversample=model.d_model, tokens="last")
    assert out.tokens == (S.shape[1] - 1,) and out.U.shape[1] == 1
    assert ((out.S[:, 0] - S[:, -1, :K]).abs() / S[:, -1, :1]).max() < s_tol
    assert principal_angles(out.U[:, 0], U[:, -1, :, :K]).max() < angle_tol


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-gemma3"])
def test_coupling_matrices_from_products_match_exact(name):
    model, _, _ = tiny(name)
    s_tol, _ = TIGHT[model.name]
    last = block_jacobians(model, PROMPT, pairs="last")[:, 0]  # [layer, d_model, d_model]
    expected = coupling_matrices(last, K)  # [layer, layer, K, K]
    got = truncated_coupling_matrices(model, PROMPT, k=K, oversample=model.d_model)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=0, atol=s_tol * 1e2 * expected.abs().max())


def _known_spectrum(d: int, k: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    U = torch.linalg.qr(torch.randn(2, d, d, generator=gen, dtype=torch.float64)).Q  # [2, d, d]
    V = torch.linalg.qr(torch.randn(2, d, d, generator=gen, dtype=torch.float64)).Q
    s = 0.8 ** torch.arange(d, dtype=torch.float64)  # [d], a geometric spectrum, descending
    J = U @ torch.diag(s) @ V.mT  # [tok=2, d, d], rows = outputs
    return J, U[..., :k], s[:k], V[..., :k]


@pytest.mark.parametrize("block", [12, 4])
def test_synthetic_linear_map_recovers_known_spectrum(block):
    d, k = 100, 6
    J, Uk, sk, Vk = _known_spectrum(d, k)
    (U, S, V), ext = _krylov_svd(lambda v: J @ v, lambda u: J.mT @ u, (2, d), k, start=12,
                                 block=block, target=36, tol=1e-12,
                                 gen=torch.Generator().manual_seed(1))
    assert 12 <= block * (ext + 1) < d  # converged before the space was full
    torch.testing.assert_close(S, sk.expand(2, k), rtol=1e-10, atol=0)
    assert principal_angles(U, Uk).max() < 1e-8 and principal_angles(V, Vk).max() < 1e-8


def test_fixed_budget_matches_power_iteration_count():
    d, k = 60, 6
    J, Uk, sk, _ = _known_spectrum(d, k)
    (U, S, _), ext = _krylov_svd(lambda v: J @ v, lambda u: J.mT @ u, (2, d), k, start=10,
                                 block=10, target=30, tol=None,
                                 gen=torch.Generator().manual_seed(1))
    assert ext == 2  # start block + 2 extensions = 30 dimensions, as 2 power iterations
    # three Krylov blocks reach a geometric spectrum (ratio 0.8) well beyond k
    torch.testing.assert_close(S, sk.expand(2, k), rtol=1e-6, atol=0)


def test_principal_angles_known_answers():
    gen = torch.Generator().manual_seed(0)
    Q = torch.linalg.qr(torch.randn(10, 10, generator=gen, dtype=torch.float64)).Q  # [d, d]
    mixed = Q[:, :3] @ torch.randn(3, 3, generator=gen, dtype=Q.dtype)  # same span, new basis
    assert principal_angles(Q[:, :3], mixed) < 1e-12
    assert principal_angles(Q[:, :3], Q[:, 3:6]) == pytest.approx(math.pi / 2)
    theta = 1e-9  # tiny angles stay accurate (arccos of the cosine would return 0 here)
    rotated = math.cos(theta) * Q[:, :1] + math.sin(theta) * Q[:, 1:2]
    assert principal_angles(Q[:, :1], rotated) == pytest.approx(theta, rel=1e-6)
    sub = Q[:, :2] + 0 * Q[:, 2:4]  # a subspace inside a larger one: angle 0
    assert principal_angles(Q[:, :4], sub) < 1e-12 and principal_angles(sub, Q[:, :4]) < 1e-12
    with pytest.raises(LlmdynError, match="principal_angles"):
        principal_angles(Q[:5, :3], Q[:, :3])


def test_bad_inputs_raise():
    model = tiny("tiny-gpt2")[0]
    with pytest.raises(LlmdynError, match="k: got 33"):
        truncated_block_svd(model, PROMPT, k=model.d_model + 1)
    with pytest.raises(LlmdynError, match="k: got 0"):
        truncated_block_svd(model, PROMPT, k=0)
    with pytest.raises(LlmdynError, match="tokens"):
        truncated_block_svd(model, PROMPT, k=4, tokens="first")
    with pytest.raises(LlmdynError, match="tol"):
        truncated_block_svd(model, PROMPT, k=4, tol=0.0)
    with pytest.raises(LlmdynError, match="block_size"):
        truncated_block_svd(model, PROMPT, k=4, block_size=0)
    with pytest.raises(LlmdynError, match="layers"):
        truncated_block_svd(model, PROMPT, layers=[7], k=4)
    with pytest.raises(LlmdynError, match=r"TruncatedSVD.S: got shape \(1, 3, 4\)"):
        TruncatedSVD(torch.zeros(1, 2, 5, 4), torch.zeros(1, 3, 4), torch.zeros(1, 2, 5, 4),
                     (0,), (0, 1), (0,))
    diagonal = truncated_block_svd(model, PROMPT, layers=[0], k=4)
    with pytest.raises(LlmdynError, match="svd: got"):
        truncated_coupling_matrices(model, PROMPT, layers=[0], k=4, svd=diagonal)


@pytest.mark.slow
def test_smollm2_truncated_svd_agrees_with_exact_on_one_block(smollm2):
    model = smollm2  # the session's copy (conftest), loaded once for every slow test
    prompt = "What is the capital of France? The capital is"
    jac = block_jacobians(model, prompt, layers=[3]).double()  # [1, tok, d_model, d_model]
    U, S, Vh = torch.linalg.svd(jac)
    out = truncated_block_svd(model, prompt, layers=[3], k=10, oversample=10, block_size=10,
                         tol=1e-4)
    # float32 products: singular values to ~1e-5, subspaces to the float32 noise over the gap
    assert ((out.S.double() - S[..., :10]).abs() / S[..., :1]).max() < 1e-4
    assert principal_angles(out.U, U[..., :10]).max() < 1e-2
