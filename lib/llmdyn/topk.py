"""Matrix-free top-K SVD of block Jacobians from Jacobian-vector and vector-Jacobian products."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Literal

import torch
from torch.func import jvp, vjp, vmap
from torch.profiler import record_function

from llmdyn import LlmdynError
from llmdyn.jacobians import (
    _resolve_layers,
    block_residual,
    capture_block_calls,
    own_position_attention,
)
from llmdyn.models import LoadedModel
from llmdyn.trace import encode

Tokens = Literal["diagonal", "last"]
Products = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class TopK:
    """Top-k singular triplets J ≈ U diag(S) V^T of block Jacobians J^b_tt (rows = outputs).

    Attributes:
        U: ``[layer, tok, d_model, k]`` left singular vectors as orthonormal columns.
        S: ``[layer, tok, k]`` singular values, descending.
        V: ``[layer, tok, d_model, k]`` right singular vectors as orthonormal columns.
        layers: the block index of each entry along ``layer``.
        tokens: the token position t of each entry along ``tok`` (one entry for ``"last"``).
        iterations: Krylov extensions run per layer (``power_iters`` unless ``tol`` was given).
    """

    U: torch.Tensor
    S: torch.Tensor
    V: torch.Tensor
    layers: tuple[int, ...]
    tokens: tuple[int, ...]
    iterations: tuple[int, ...]

    def __post_init__(self) -> None:
        """Check that the shapes agree with each other."""
        n, t, k = len(self.layers), len(self.tokens), self.S.shape[-1]
        d = self.U.shape[-2]
        want = {"U": (n, t, d, k), "S": (n, t, k), "V": (n, t, d, k)}
        for name, shape in want.items():
            got = tuple(getattr(self, name).shape)
            if got != shape:
                raise LlmdynError(f"TopK.{name}: got shape {got}; expected {shape} "
                                  "= [layer, tok, (d_model,) k]")


@contextmanager
def _one_thread():
    """Run small batched LAPACK calls (QR, SVD) on one thread.

    They gain nothing from threads at these sizes, and on a shared machine every OpenMP barrier
    can wait a whole scheduler slice: measured 20x slower with 2 threads on 2 busy cores.
    """
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def principal_angles(Q1: torch.Tensor, Q2: torch.Tensor) -> torch.Tensor:
    """Largest principal angle between span(Q1) and span(Q2), in radians.

    The inputs are orthonormalised (QR) in float64; the cosines of the principal angles are the
    singular values of Q1^T Q2. The largest angle is returned as atan2(sin, cos), with the sine
    from ||(I - Q_big Q_big^T) Q_small||_2, which stays accurate for tiny angles where arccos of
    a cosine near 1 does not.

    Args:
        Q1: ``[..., d_model, k1]`` columns spanning the first subspace.
        Q2: ``[..., d_model, k2]`` columns spanning the second; same leading axes as ``Q1``.

    Returns:
        ``[...]`` angles in [0, pi/2].
    """
    if Q1.ndim < 2 or Q1.shape[:-1] != Q2.shape[:-1] or Q1.shape[-2] < max(Q1.shape[-1],
                                                                          Q2.shape[-1]):
        raise LlmdynError(f"principal_angles: got shapes {tuple(Q1.shape)} and "
                          f"{tuple(Q2.shape)}; expected [..., d_model, k1] and [..., d_model, k2] "
                          "with the same leading axes and k1, k2 <= d_model")
    big, small = (Q1, Q2) if Q1.shape[-1] >= Q2.shape[-1] else (Q2, Q1)
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
        for _ in range(2):  # project twice ("twice is enough"), then once more after QR
            if against is not None:
                Y = Y - against @ (against.mT @ Y)  # [tok, d_model, n]
            Y = torch.linalg.qr(Y).Q
    return Y


def _ritz(Q: torch.Tensor, Z: torch.Tensor, k: int):
    """Top-k SVD of J restricted to span(Q), given Z = J^T Q: U, S, V as in :class:`TopK`."""
    with _one_thread():
        Ub, S, Vh = torch.linalg.svd(Z.mT, full_matrices=False)  # Q^T J = Z^T: [tok, m, d_model]
    U = Q @ Ub[..., :k]  # [tok, d_model, k]
    V = Vh[..., :k, :].mT  # [tok, d_model, k]
    idx = U.abs().argmax(dim=-2, keepdim=True)  # [tok, 1, k]; sign: as metrics.svd_sorted
    sign = torch.sign(torch.gather(U, -2, idx))
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    return U * sign, S[..., :k], V * sign


def _products(f: Callable, x: torch.Tensor, tokens: Tokens,
              chunk_size: int | None) -> tuple[Products, Products]:
    """``J v`` and ``J^T u`` for J_tt of every selected token, batched over vectors.

    Both maps take and return ``[tok_sel, d_model, n]`` (n vectors per token). For
    ``"diagonal"`` ``f`` must run under :func:`own_position_attention`, so that output t depends
    on x only through x_t: a tangent (cotangent) holding v_t at every position t then yields
    every J_tt v_t (J_tt^T u_t) in one product. For ``"last"`` vectors sit at the last position
    only, which picks out J_nn without the trick.
    """
    n_tok, d = x.shape
    pos = slice(None) if tokens == "diagonal" else slice(n_tok - 1, n_tok)
    _, pullback = vjp(f, x)  # one linearisation, reused by every reverse product

    def embed(vecs: torch.Tensor) -> torch.Tensor:
        full = x.new_zeros(vecs.shape[-1], n_tok, d)  # (n, tok, d_model)
        full[:, pos] = vecs.to(x.dtype).permute(2, 0, 1)  # (n, tok_sel, d_model)
        return full

    def forward(v: torch.Tensor) -> torch.Tensor:
        return jvp(f, (x,), (v,))[1]

    def jmul(vecs: torch.Tensor) -> torch.Tensor:
        with record_function("llmdyn.topk.jvp"):
            out = vmap(forward, chunk_size=chunk_size)(embed(vecs))  # (n, tok, d_model)
        return out[:, pos].permute(1, 2, 0).to(vecs.dtype)  # (tok_sel, d_model, n)

    def jtmul(vecs: torch.Tensor) -> torch.Tensor:
        with record_function("llmdyn.topk.vjp"):
            (out,) = vmap(pullback, chunk_size=chunk_size)(embed(vecs))  # (n, tok, d_model)
        return out[:, pos].permute(1, 2, 0).to(vecs.dtype)  # (tok_sel, d_model, n)

    return jmul, jtmul


def _krylov_svd(jmul: Products, jtmul: Products, shape: tuple[int, int], k: int, start: int,
                block: int, target: int, tol: float | None, gen: torch.Generator):
    """Block Lanczos (Krylov) top-k SVD with full reorthogonalisation, all tokens at once.

    Builds an orthonormal basis Q of span{Ω, (J J^T) Ω, (J J^T)^2 Ω, ...} block by block (Ω:
    ``block`` random vectors) and its image Z = J^T Q, then takes the top-k SVD of
    Q^T J = Z^T (Rayleigh-Ritz). This costs as many products as a randomized range finder with
    power iterations but keeps every iterate, which converges much faster when the spectrum is
    flat around k. Extraction starts once the space has ``start`` dimensions; without ``tol``
    it stops at ``target`` dimensions, with ``tol`` once the top-k subspaces stop moving.
    Returns ((U, S, V), number of extensions).
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
            if tol is not None and prev is not None:
                change = torch.maximum(principal_angles(prev[0], cur[0]),
                                       principal_angles(prev[2], cur[2])).max()
                if change < tol:
                    return cur, ext
            prev = cur
        width = min(block, d - m)
        Qn = _orth(jmul(Z[..., m - last:m - last + width]), against=Q)  # J J^T (last block)
        Q, Z = torch.cat([Q, Qn], -1), torch.cat([Z, jtmul(Qn)], -1)  # [tok, d_model, m]
        last, ext = width, ext + 1


def topk_block_svd(
    model: LoadedModel,
    prompt: str,
    layers: Sequence[int] | None = None,
    k: int = 30,
    *,
    oversample: int = 10,
    power_iters: int = 2,
    tol: float | None = None,
    block_size: int | None = None,
    seed: int = 0,
    tokens: Tokens = "diagonal",
    chunk_size: int | None = 512,
) -> TopK:
    """Top-k singular triplets of J^b_tt = ∂f^b(X)_t/∂x_t without forming J (paper A eq. 8-10).

    A block Krylov (Lanczos-type) randomized SVD: a start block of ``k + oversample`` random
    vectors, then ``power_iters`` extensions by J J^T, each one batch of forward-mode products
    (J v, :func:`torch.func.jvp`) and one of reverse-mode products (J^T u, ``vjp``) batched with
    ``vmap``. For ``tokens="diagonal"`` the own-position trick makes one batch serve every token.
    Cost: about ``2 (k + oversample)(power_iters + 1)`` products per block versus ``d_model``
    reverse products for the exact J_tt; when the Krylov space reaches d_model the result is exact.

    Args:
        model: a loaded model (eager attention: forward mode does not pass CPU SDPA).
        prompt: tokenised as ``model.tokenizer(prompt, return_tensors="pt")``.
        layers: 0-based blocks, None for all; negative indices count from the end.
        k: number of singular triplets, 1 <= k <= d_model.
        oversample: extra start vectors beyond k.
        power_iters: Krylov extensions (products of J J^T) when ``tol`` is None.
        tol: if given, extend until the largest principal angle between the top-k subspaces
            (left and right, all tokens) of consecutive iterates is below ``tol`` (radians),
            capped when the Krylov space fills d_model (then the result is exact).
        block_size: vectors per extension (default ``k + oversample``); smaller blocks need
            fewer products for slowly decaying spectra but run in smaller batches.
        seed: seed of the random start block.
        tokens: ``"diagonal"`` (J_tt for every token t) or ``"last"`` (J_nn of the last token).
        chunk_size: how many products run at once in ``vmap`` (bounds memory).

    Returns:
        U ``[layer, tok, d_model, k]``, S ``[layer, tok, k]``, V ``[layer, tok, d_model, k]``.

    Raises:
        LlmdynError: k outside 1..d_model, a bad option, a layer out of range or a bad prompt.
    """
    d = model.d_model
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d:
        raise LlmdynError(f"k: got {k!r}; expected an integer with 1 <= k <= d_model = {d}")
    if tokens not in ("diagonal", "last"):
        raise LlmdynError(f"tokens: got {tokens!r}; expected 'diagonal' or 'last'")
    for name, value, low in (("oversample", oversample, 0), ("power_iters", power_iters, 0),
                             ("block_size", 1 if block_size is None else block_size, 1)):
        if not isinstance(value, int) or value < low:
            raise LlmdynError(f"{name}: got {value!r}; expected an integer >= {low}")
    if tol is not None and not tol > 0:
        raise LlmdynError(f"tol: got {tol!r}; expected a positive angle in radians or None")
    ids = encode(model, prompt)
    blocks = _resolve_layers(model, layers)
    calls = capture_block_calls(model, ids)
    n_tok = ids.shape[1] if tokens == "diagonal" else 1
    start, block = k + oversample, block_size or k + oversample
    target = start * (power_iters + 1)  # Krylov dimension of a range finder with power iters
    gen = torch.Generator().manual_seed(seed)
    trick = own_position_attention(model) if tokens == "diagonal" else nullcontext()
    results, iters = [], []
    with trick:
        for b in blocks:
            f = block_residual(model, b, calls[b])
            jmul, jtmul = _products(f, calls[b].hidden.detach(), tokens, chunk_size)
            (U, S, V), ext = _krylov_svd(jmul, jtmul, (n_tok, d), k, start, block, target,
                                         tol, gen)
            results.append((U, S, V))
            iters.append(ext)
    dtype = calls[0].hidden.dtype
    U, S, V = (torch.stack([r[i] for r in results]).to(dtype) for i in range(3))
    positions = tuple(range(ids.shape[1])) if tokens == "diagonal" else (ids.shape[1] - 1,)
    return TopK(U, S, V, tuple(blocks), positions, tuple(iters))


def topk_coupling_matrices(
    model: LoadedModel,
    prompt: str,
    layers: Sequence[int] | None = None,
    k: int = 30,
    *,
    svd: TopK | None = None,
    chunk_size: int | None = 512,
    **svd_options,
) -> torch.Tensor:
    """Coupling matrices A[i, j] = U_j^T J_i V_j of the last token from products only.

    Paper A eq. 10 and paper B §3.6 (A_{i,j,K}), with J_i = J^{b_i}_{nn} of the last token n
    and U_j, V_j the top-k singular vectors of J_j (from :func:`topk_block_svd`). For each block
    i one batch of ``layer * k`` Jacobian-vector products J_i V_j (vmapped over the stacked V_j)
    gives the whole row A[i, :]. Forming J_i costs d_model products instead, so this route pays
    off when ``layer * k < d_model``.

    Args:
        model: a loaded model.
        prompt: the text.
        layers: 0-based blocks, None for all.
        k: number of singular vectors kept.
        svd: a precomputed ``topk_block_svd(..., tokens="last")`` over the same layers, or None.
        chunk_size: how many products run at once in ``vmap``.
        **svd_options: keyword options passed to :func:`topk_block_svd` (oversample, tol, ...).

    Returns:
        A ``[layer, layer, k, k]`` (axis 0: coupled Jacobian i, axis 1: reference j); the
        diagonal blocks A[i, i] ≈ diag(S_i).
    """
    blocks = _resolve_layers(model, layers)
    if svd is None:
        svd = topk_block_svd(model, prompt, blocks, k, tokens="last", chunk_size=chunk_size,
                             **svd_options)
    ids = encode(model, prompt)
    if list(svd.layers) != blocks or svd.tokens != (ids.shape[1] - 1,) or svd.S.shape[-1] < k:
        raise LlmdynError(f"svd: got layers {svd.layers}, tokens {svd.tokens}, k "
                          f"{svd.S.shape[-1]}; expected layers {tuple(blocks)}, the last token "
                          f"({ids.shape[1] - 1},) and k >= {k}")
    U, V = svd.U[:, 0, :, :k], svd.V[:, 0, :, :k]  # [layer, d_model, k] each
    calls = capture_block_calls(model, ids)
    rows = []
    for b in blocks:
        jmul, _ = _products(block_residual(model, b, calls[b]), calls[b].hidden.detach(),
                            "last", chunk_size)
        stacked = V.permute(1, 0, 2).reshape(1, model.d_model, -1)  # (1, d_model, layer*k)
        JV = jmul(stacked)[0].reshape(model.d_model, len(blocks), k)  # (d_model, layer_j, k)
        rows.append(torch.einsum("jda,djb->jab", U, JV))  # (layer_j, k, k)
    return torch.stack(rows)  # [layer, layer, k, k]
