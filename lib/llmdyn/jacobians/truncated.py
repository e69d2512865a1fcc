"""Matrix-free truncated (top-K) SVD of block Jacobians from JVPs and VJPs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Literal

import torch
from torch.func import jvp, vjp, vmap
from torch.profiler import record_function

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.jacobians.attention import own_position_attention
from llmdyn.jacobians.blocks import block_residual, capture_block_calls
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import encode

Tokens = Literal["diagonal", "last"]
Products = Callable[[torch.Tensor], torch.Tensor]  # [tok, d_model, n] -> [tok, d_model, n]


@dataclass(frozen=True)
class TruncatedSVD:
    """Top-k singular triplets J ≈ U diag(S) V^T of block Jacobians J^b_tt (rows = outputs)."""

    U: torch.Tensor  # [layer, tok, d_model, k] left singular vectors, orthonormal columns
    S: torch.Tensor  # [layer, tok, k] singular values, descending
    V: torch.Tensor  # [layer, tok, d_model, k] right singular vectors, orthonormal columns
    layers: tuple[int, ...]  # the block of each entry along `layer`
    tokens: tuple[int, ...]  # the position t of each entry along `tok` (last only for "last")
    iterations: tuple[int, ...]  # Krylov extensions run, per layer

    def __post_init__(self) -> None:
        """Check that the shapes agree with each other."""
        n, t, d, k = len(self.layers), len(self.tokens), self.U.shape[-2], self.S.shape[-1]
        for name, shape in {"U": (n, t, d, k), "S": (n, t, k), "V": (n, t, d, k)}.items():
            got = tuple(getattr(self, name).shape)
            if got != shape:
                raise LlmdynError(f"TruncatedSVD.{name}: got shape {got}; expected {shape} "
                                  "= [layer, tok, (d_model,) k]")


@contextmanager
def _one_thread():
    """One thread for the small batched LAPACK calls.

    The QR and eigen calls are small and batched: more threads gained nothing on 2 cores, and on
    busy cores they ran about 20× slower.
    """
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def principal_angles(Q1: torch.Tensor, Q2: torch.Tensor) -> torch.Tensor:
    """Largest principal angle between span(Q1) and span(Q2), in radians.

    Inputs are orthonormalised (QR, float64); the cosines of the principal angles are the
    singular values of Q1^T Q2. The angle is atan2(sin, cos) with the sine from
    ||(I - Q_big Q_big^T) Q_small||_2, accurate for tiny angles where arccos(cos) is not.

    Args:
        Q1: ``[..., d_model, k1]`` columns spanning the first subspace.
        Q2: ``[..., d_model, k2]``, same leading axes.

    Returns:
        ``[...]`` angles in [0, pi/2].
    """
    big, small = (Q1, Q2) if Q1.shape[-1] >= Q2.shape[-1] else (Q2, Q1)
    if Q1.ndim < 2 or Q1.shape[:-1] != Q2.shape[:-1] or big.shape[-2] < big.shape[-1]:
        raise LlmdynError(f"principal_angles: got shapes {tuple(Q1.shape)} and "
                          f"{tuple(Q2.shape)}; expected [..., d_model, k1] and [..., d_model, k2] "
                          "with the same leading axes and k1, k2 <= d_model")
    with _one_thread():
        big = torch.linalg.qr(big.detach().double()).Q  # [..., d_model, k_big]
        small = torch.linalg.qr(small.detach().double()).Q  # [..., d_model, k_small]
        cos = torch.linalg.svdvals(big.mT @ small)[..., -1]  # [...] smallest cosine
        rest = small - big @ (big.mT @ small)  # [..., d_model, k_small]
        sin = torch.linalg.matrix_norm(rest, ord=2)  # [...]
    return torch.atan2(sin, cos)


def _orth(Y: torch.Tensor, against: torch.Tensor | None = None) -> torch.Tensor:
    """Orthonormal columns spanning Y minus its part in span(against): [tok, d_model, n]."""
    with _one_thread():
        for _ in range(2):  # project and QR twice ("twice is enough")
            if against is not None:
                Y = Y - against @ (against.mT @ Y)  # [tok, d_model, n]
            Y = torch.linalg.qr(Y).Q
    return Y


def _ritz(Q: torch.Tensor, Z: torch.Tensor, k: int):
    """Top-k SVD of J restricted to span(Q) from Z = J^T Q: (U, S, V) as in :class:`TruncatedSVD`.

    Q^T J = Z^T = Ub diag(S) V^T, so Z^T Z = Ub diag(S^2) Ub^T: an m x m eigenproblem instead of
    the SVD of an m x d_model matrix (m <= d_model). Squaring costs accuracy only for singular
    values below ~1e-8 S_1 in float64, far below the top k of a block Jacobian.
    """
    with _one_thread():
        evals, evecs = torch.linalg.eigh(Z.mT @ Z)  # ascending: [tok, m], [tok, m, m]
    top = evecs.flip(-1)[..., :k]  # [tok, m, k], descending
    S = evals.flip(-1)[..., :k].clamp_min(0).sqrt()  # [tok, k]
    U = Q @ top  # [tok, d_model, k]
    V = (Z @ top) / torch.where(S > 0, S, torch.ones_like(S))[..., None, :]  # [tok, d_model, k]
    idx = U.abs().argmax(dim=-2, keepdim=True)  # [tok, 1, k]; signs as jacobians.svd.svd_sorted
    sign = torch.sign(torch.gather(U, -2, idx))
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    return U * sign, S[..., :k], V * sign


def _products(f: Callable, x: torch.Tensor, tokens: Tokens,
              chunk_size: int | None) -> tuple[Products, Products]:
    """``v -> J_tt v`` (forward mode) and ``u -> J_tt^T u`` (reverse mode), vmapped.

    For ``"diagonal"``, ``f`` must run under :func:`own_position_attention`: output t then
    depends on x only through x_t, so a tangent (cotangent) holding v_t at every position t
    gives every J_tt v_t (J_tt^T u_t) in one product. For ``"last"`` the vectors sit at the last
    position only, which picks out J_nn without the trick.
    """
    n_tok, d = x.shape
    pos = slice(None) if tokens == "diagonal" else slice(n_tok - 1, n_tok)
    pullback: list[Callable] = []  # one linearisation, made on first use and then reused

    def embed(vecs: torch.Tensor) -> torch.Tensor:
        full = x.new_zeros(vecs.shape[-1], n_tok, d)  # [n, tok, d_model]
        full[:, pos] = vecs.to(x.dtype).permute(2, 0, 1)  # [n, tok_sel, d_model]
        return full

    def jmul(vecs: torch.Tensor) -> torch.Tensor:
        with record_function("llmdyn.jacobians.truncated.jvp"):
            out = vmap(lambda v: jvp(f, (x,), (v,))[1], chunk_size=chunk_size)(embed(vecs))
        return out[:, pos].permute(1, 2, 0).to(vecs.dtype)  # [tok_sel, d_model, n]

    def jtmul(vecs: torch.Tensor) -> torch.Tensor:
        with record_function("llmdyn.jacobians.truncated.vjp"):
            if not pullback:
                pullback.append(vjp(f, x)[1])
            (out,) = vmap(pullback[0], chunk_size=chunk_size)(embed(vecs))  # [n, tok, d_model]
        return out[:, pos].permute(1, 2, 0).to(vecs.dtype)  # [tok_sel, d_model, n]

    return jmul, jtmul


def _krylov_svd(jmul: Products, jtmul: Products, shape: tuple[int, int], k: int, start: int,
                block: int, target: int, tol: float | None, gen: torch.Generator):
    """Block Lanczos top-k SVD with full reorthogonalisation; returns ((U, S, V), extensions).

    Q is an orthonormal basis of span{Ω, (J J^T) Ω, (J J^T)^2 Ω, ...} (Ω: ``block`` random
    vectors per token) and Z = J^T Q; the top-k SVD of Q^T J = Z^T (Rayleigh-Ritz) is the
    estimate. Same products as a range finder with power iterations, but every iterate is kept,
    which converges far faster when the spectrum is flat around k. Estimates start at ``start``
    dimensions and stop at ``target`` (no ``tol``) or once the top-k subspaces move less than
    ``tol``; a space of full dimension d_model is exact.
    """
    n_tok, d = shape
    omega = torch.randn(n_tok, d, min(block, d), generator=gen, dtype=torch.float64)
    Q = _orth(jmul(omega))  # [tok, d_model, block]
    Z = jtmul(Q)  # [tok, d_model, block] = J^T Q
    last, prev, ext = Q.shape[-1], None, 0
    while True:
        m = Q.shape[-1]
        if m >= min(start, d):
            cur = _ritz(Q, Z, k)
            if m >= d or (tol is None and m >= target):
                return cur, ext
            if tol is not None and prev is not None and torch.maximum(
                    principal_angles(prev[0], cur[0]), principal_angles(prev[2], cur[2])
            ).max() < tol:
                return cur, ext
            prev = cur
        width = min(block, d - m)
        Qn = _orth(jmul(Z[..., m - last:m - last + width]), against=Q)  # J J^T (last block)
        Q, Z = torch.cat([Q, Qn], -1), torch.cat([Z, jtmul(Qn)], -1)  # [tok, d_model, m]
        last, ext = width, ext + 1


def truncated_block_svd(model: LoadedModel, prompt: str, layers: Sequence[int] | None = None,
                        k: int = 30, *, oversample: int = 10, power_iters: int = 2,
                        tol: float | None = None, block_size: int | None = None, seed: int = 0,
                        tokens: Tokens = "diagonal", chunk_size: int | None = 512,
                        cut_long_prompts: bool = False) -> TruncatedSVD:
    """Top-k SVD of J^b_tt = ∂f^b(X)_t / ∂x_t without forming J (paper A eq. 8-10).

    A randomized block Krylov (Lanczos) SVD. Each step is one vmapped batch of forward-mode
    products J v (:func:`torch.func.jvp`, eager attention) and one of reverse-mode products
    J^T u (``vjp``); for ``"diagonal"`` the own-position trick lets one batch serve all tokens.
    Without ``tol`` it costs 2 (k + oversample)(power_iters + 1) products per block, as a
    range finder with power iterations, against d_model reverse products for the exact J_tt.

    Args:
        model: a loaded model.
        prompt: tokenised as ``model.tokenizer(prompt, return_tensors="pt")``.
        layers: 0-based blocks, None for all; negative indices count from the end.
        k: number of singular triplets, 1 <= k <= d_model.
        oversample: the first estimate uses a space of k + oversample dimensions.
        power_iters: without ``tol``, grow the space to (k + oversample)(power_iters + 1).
        tol: grow the space until the largest principal angle (radians) between consecutive
            top-k subspaces, left and right, all tokens, is below ``tol``; capped at d_model,
            where the result is exact.
        block_size: vectors per Krylov block (default k + oversample); smaller blocks need
            fewer products on flat spectra but run in smaller batches.
        seed: seed of the random start block.
        tokens: ``"diagonal"`` (J_tt for every token t) or ``"last"`` (J_nn, last token only).
        chunk_size: how many products ``vmap`` runs at once (bounds memory).
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        U ``[layer, tok, d_model, k]``, S ``[layer, tok, k]``, V ``[layer, tok, d_model, k]``.

    Raises:
        LlmdynError: k outside 1..d_model, a bad option, layer or prompt.
    """
    d = model.d_model
    checks.k_value(k, d)
    _check_options(tokens, oversample, power_iters, block_size, tol)
    ids = encode(model, prompt, cut_long_prompts=cut_long_prompts)
    blocks = checks.layer_indices(layers, model.n_layers)
    calls = capture_block_calls(model, ids)
    positions = tuple(range(ids.shape[1])) if tokens == "diagonal" else (ids.shape[1] - 1,)
    start, block = k + oversample, block_size or k + oversample
    gen = torch.Generator().manual_seed(seed)
    out, iters = [], []
    with own_position_attention(model) if tokens == "diagonal" else nullcontext():
        for b in blocks:
            jmul, jtmul = _products(block_residual(model, b, calls[b]),
                                    calls[b].hidden.detach(), tokens, chunk_size)
            usv, ext = _krylov_svd(jmul, jtmul, (len(positions), d), k, start, block,
                                   start * (power_iters + 1), tol, gen)
            out.append(usv)
            iters.append(ext)
    dtype = calls[0].hidden.dtype
    U, S, V = (torch.stack([r[i] for r in out]).to(dtype) for i in range(3))  # [layer, tok, ..]
    return TruncatedSVD(U, S, V, tuple(blocks), positions, tuple(iters))


def _check_options(tokens: Tokens, oversample: int, power_iters: int, block_size: int | None,
                   tol: float | None) -> None:
    """LlmdynError for a bad ``tokens``, a negative or non-integer count, or a non-positive tol."""
    if tokens not in ("diagonal", "last"):
        raise LlmdynError(f"tokens: got {tokens!r}; expected 'diagonal' or 'last'")
    for name, value, low in (("oversample", oversample, 0), ("power_iters", power_iters, 0),
                             ("block_size", 1 if block_size is None else block_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise LlmdynError(f"{name}: got {value!r}; expected an integer >= {low}")
    if tol is not None and not tol > 0:
        raise LlmdynError(f"tol: got {tol!r}; expected a positive angle in radians or None")


def truncated_coupling_matrices(
    model: LoadedModel,
    prompt: str,
    layers: Sequence[int] | None = None,
    k: int = 30,
    *,
    svd: TruncatedSVD | None = None,
    chunk_size: int | None = 512,
    cut_long_prompts: bool = False,
    **svd_options,
) -> torch.Tensor:
    """Coupling matrices A[i, j] = U_j^T J_i V_j of the last token, from products only.

    Paper A eq. 10, paper B §3.6 (A_{i,j,K}); J_i = J^{b_i}_nn, U_j and V_j the top-k singular
    vectors of J_j. Row i takes one batch of ``layer * k`` products J_i V_j (vmapped over the
    stacked V_j); forming J_i takes d_model, so this pays off when layer * k < d_model.

    Args:
        model: a loaded model.
        prompt: the text.
        layers: 0-based blocks, None for all.
        k: number of singular vectors kept.
        svd: ``truncated_block_svd(..., tokens="last")`` of the same layers, or None to compute it.
        chunk_size: how many products ``vmap`` runs at once.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).
        **svd_options: passed to :func:`truncated_block_svd` (oversample, tol, block_size, ...).

    Returns:
        A ``[layer, layer, k, k]`` (axis 0: coupled Jacobian i, axis 1: basis j); A[i, i] is
        diag(S_i) up to the accuracy of the SVD.
    """
    blocks = checks.layer_indices(layers, model.n_layers)
    if svd is None:
        svd = truncated_block_svd(model, prompt, blocks, k, tokens="last", chunk_size=chunk_size,
                                  cut_long_prompts=cut_long_prompts, **svd_options)
    ids = encode(model, prompt, cut_long_prompts=cut_long_prompts)
    if list(svd.layers) != blocks or svd.tokens != (ids.shape[1] - 1,) or svd.S.shape[-1] < k:
        raise LlmdynError(f"svd: got layers {svd.layers}, tokens {svd.tokens}, k "
                          f"{svd.S.shape[-1]}; expected layers {tuple(blocks)}, the last token "
                          f"({ids.shape[1] - 1},) and k >= {k}")
    U, V = svd.U[:, 0, :, :k], svd.V[:, 0, :, :k]  # [layer, d_model, k] each
    stacked = V.permute(1, 0, 2).reshape(1, model.d_model, -1)  # [1, d_model, layer*k]
    calls = capture_block_calls(model, ids)
    rows = []
    for b in blocks:
        jmul, _ = _products(block_residual(model, b, calls[b]), calls[b].hidden.detach(),
                            "last", chunk_size)
        JV = jmul(stacked)[0].reshape(model.d_model, len(blocks), k)  # [d_model, layer, k]
        rows.append(torch.einsum("jda,djb->jab", U, JV))  # [layer, k, k]
    return torch.stack(rows)  # [layer, layer, k, k]
