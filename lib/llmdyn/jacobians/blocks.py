"""Block calls and exact block Jacobians of a stack of residual blocks, any architecture.

A block's call (its input and the arguments the model passed it) is recorded during the real
forward pass, so the Jacobians differentiate exactly what the model computes: the causal mask,
rotary embeddings and layer types come with the call, not re-derived per architecture.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch.func import jvp, vjp, vmap
from tqdm.auto import tqdm

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, one_logit

Pairs = Literal["diagonal", "last"] | Sequence[tuple[int, int]]


@dataclass(frozen=True)
class BlockCall:
    """The arguments one block received during a real forward pass.

    Attributes:
        args: positional arguments, the hidden states ``[1, tok, d_model]`` first.
        kwargs: keyword arguments (masks, rotary ``position_embeddings``, …), captured so that
            no architecture's block signature has to be re-derived here.
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    @property
    def hidden(self) -> torch.Tensor:
        """The block input X^b, ``[tok, d_model]``."""
        return self.args[0][0]


def record_block_calls(blocks: Sequence[torch.nn.Module], run: Callable[[], Any]
                       ) -> list[BlockCall]:
    """Call ``run()`` once and record each block's call arguments (no gradients).

    Any stack of residual blocks works (a causal LM's decoder layers, a ViT's encoder blocks):
    each block must take its hidden states ``[1, tok, d_model]`` as the first positional
    argument; everything else it receives is kept as given.
    """
    calls: list[BlockCall] = []

    def record(_module, args, kwargs):
        kwargs = {k: v for k, v in kwargs.items() if k not in ("past_key_values", "layer_past")}
        calls.append(BlockCall(tuple(a.detach() if torch.is_tensor(a) else a for a in args),
                               kwargs))

    handles = [b.register_forward_pre_hook(record, with_kwargs=True) for b in blocks]
    try:
        with torch.no_grad():
            run()
    finally:
        for handle in handles:
            handle.remove()
    if any(not c.args for c in calls):
        raise LlmdynError("a block received its hidden states as a keyword; llmdyn expects them "
                          "as the first positional argument")
    return calls


def capture_block_calls(model: LoadedModel, input_ids: torch.Tensor) -> list[BlockCall]:
    """Run the language model once and record each block's call arguments (no cache)."""
    return record_block_calls(model.blocks, lambda: model.hf(input_ids, use_cache=False,
                                                              **one_logit(model)))


def residual_map(block: Callable[..., Any], call: BlockCall) -> Callable:
    """f(X) = block(X) − X for one input: ``[tok, d_model] → [tok, d_model]``.

    The skip connection is removed (paper A eq. 8; paper B §3.6); everything else the block
    received during the real forward pass (masks, rotary embeddings) is passed unchanged.
    ``block`` is a module or any callable with its signature (:func:`block_function`).
    """
    rest = call.args[1:]

    def f(x: torch.Tensor) -> torch.Tensor:
        out = block(x[None], *rest, **call.kwargs)
        out = out[0] if isinstance(out, tuple) else out  # [1, tok, d_model]
        return out[0] - x

    return f


def block_function(model: LoadedModel, b: int,
                   last_point: LastPoint = "final_norm") -> Callable[..., torch.Tensor]:
    """Block b as the papers count it, ``[batch, tok, d_model] → [batch, tok, d_model]``.

    ``block_b`` itself, and for the last block under ``last_point="final_norm"`` also the
    final norm, ``norm(block_L(·))`` (paper A eq. 7, paper B §2). Returns the block's first
    output (the hidden states).
    """
    check_last_point(last_point)
    block = model.blocks[b]
    norm = model.final_norm if last_point == "final_norm" and b == model.n_layers - 1 else None

    def g(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        out = block(x, *args, **kwargs)
        out = out[0] if isinstance(out, tuple) else out  # [batch, tok, d_model]
        return out if norm is None else norm(out)

    return g


def block_residual(model: LoadedModel, b: int, call: BlockCall,
                   last_point: LastPoint = "final_norm") -> Callable:
    """f^b(X) = block_b(X) − X for one prompt: ``[tok, d_model] → [tok, d_model]``.

    :func:`residual_map` of :func:`block_function`: for the last block under the papers'
    ``last_point="final_norm"`` the final norm is part of it, f^L(X) = norm(block_L(X)) − X.
    """
    return residual_map(block_function(model, b, last_point), call)


def stack_jacobians(blocks: Sequence[Callable[..., Any]], calls: Sequence[BlockCall],
                    layers: Sequence[int], pairs: Sequence[tuple[int, int]], *,
                    chunk_size: int | None = 2048, progress: bool = False,
                    desc: str = "Jacobians") -> torch.Tensor:
    """Exact J[i, p] = ∂ f_b(X)_{t2} / ∂ x_{t1} for ``b = layers[i]``, ``(t1, t2) = pairs[p]``.

    The model-agnostic core of :func:`block_jacobians`: a stack of residual blocks and the
    arguments each received (:func:`record_block_calls`) suffice. Costs d reverse products per
    distinct output token t2, or d forward products per distinct input token t1 when those are
    fewer (e.g. one t1 and every t2: fixed-input token coupling). Nothing here assumes causal
    attention; a bidirectional block (a ViT's) gives non-zero J for t1 > t2 too.

    Args:
        blocks: the blocks, in order (modules, or callables such as :func:`block_function`).
        calls: one recorded call per block (same order).
        layers: 0-based block indices (already checked).
        pairs: (t1, t2) token positions (already checked).
        chunk_size: how many reverse products run at once (bounds memory).
        progress: progress bar over blocks (when there are four or more).
        desc: its label.

    Returns:
        ``[len(layers), len(pairs), d_model, d_model]`` (rows = output coordinates).
    """
    inputs, outputs = sorted({t1 for t1, _ in pairs}), sorted({t2 for _, t2 in pairs})
    out = []
    for b in progress_bar(list(layers), desc=desc, enabled=progress):
        x, f = calls[b].hidden.detach(), residual_map(blocks[b], calls[b])
        if len(inputs) < len(outputs):  # d forward products per input token are fewer
            cols = _columns_at_inputs(f, x, inputs, chunk_size)  # [input, d_in, tok, d_out]
            where = {t1: i for i, t1 in enumerate(inputs)}
            out.append(torch.stack([cols[where[t1], :, t2, :].T for t1, t2 in pairs]))
        else:
            rows = _rows_at_outputs(f, x, outputs, chunk_size)  # [output, d_out, tok, d_in]
            where = {t2: i for i, t2 in enumerate(outputs)}
            out.append(torch.stack([rows[where[t2], :, t1, :] for t1, t2 in pairs]))
    return torch.stack(out).detach()  # [layer, pair, d_model, d_model]


def resolve_layers(model: LoadedModel, layers: Sequence[int] | None) -> list[int]:
    """0-based block indices of ``model`` (None: all; negative ones count from the end)."""
    if layers is None:
        return list(range(model.n_layers))
    layers = [int(b) for b in layers]
    bad = [b for b in layers if not -model.n_layers <= b < model.n_layers]
    if bad or not layers:
        raise LlmdynError(f"layers {bad or layers} out of range: {model.name} has blocks "
                          f"0..{model.n_layers - 1} (block b maps X^b to X^(b+1); paper l = b+1)")
    return [b % model.n_layers for b in layers]


def resolve_pairs(pairs: Pairs, n_tok: int) -> list[tuple[int, int]]:
    """Token pairs (t1, t2) of a prompt of ``n_tok`` tokens, checked and made non-negative."""
    if pairs == "diagonal":
        return [(t, t) for t in range(n_tok)]
    if pairs == "last":
        return [(n_tok - 1, n_tok - 1)]
    if isinstance(pairs, str):
        raise LlmdynError(f"pairs must be 'diagonal', 'last' or a list of (t1, t2), got {pairs!r}")
    resolved = []
    for pair in pairs:
        if isinstance(pair, str | bytes) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise LlmdynError(f"each pair must be (t1, t2), got {pair!r}")
        bad = [t for t in pair if not checks.is_int(t)]
        if bad:  # 1.7 is not token 1
            raise LlmdynError(f"pairs must hold integer token indices, got {bad[0]!r} "
                              f"({type(bad[0]).__name__}) in {tuple(pair)!r}; write e.g. (1, 2)")
        for t in pair:
            if not -n_tok <= int(t) < n_tok:
                raise LlmdynError(f"token index {t} in pair {tuple(pair)} out of range for a "
                                  f"prompt of {n_tok} tokens (valid: {-n_tok}..{n_tok - 1})")
        resolved.append((int(pair[0]) % n_tok, int(pair[1]) % n_tok))
    if not resolved:
        raise LlmdynError("pairs is empty; give at least one (t1, t2)")
    return resolved


def _rows_at_outputs(f: Callable, x: torch.Tensor, outputs: list[int],
                     chunk_size: int | None) -> torch.Tensor:
    """∂f(x)_{t2}/∂x for each t2 in ``outputs``: ``[len(outputs), d_model, tok, d_model]``."""
    n_tok, d = x.shape
    _, pullback = vjp(f, x)
    basis = torch.zeros(len(outputs), d, n_tok, d, dtype=x.dtype, device=x.device)
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    for i, t2 in enumerate(outputs):
        basis[i, :, t2, :] = eye  # cotangent e_k at output position t2
    (rows,) = vmap(pullback, chunk_size=chunk_size)(
        basis.flatten(0, 1))  # [output*d_out, tok, d_in]
    return rows.view(len(outputs), d, n_tok, d)  # [output, d_out, tok, d_in]


def _columns_at_inputs(f: Callable, x: torch.Tensor, inputs: list[int],
                      chunk_size: int | None) -> torch.Tensor:
    """∂f(x)/∂x_{t1} e_j for each t1 in ``inputs``: ``[len(inputs), d_model, tok, d_model]``.

    Forward-mode products (``torch.func.jvp``, one per input coordinate): the Jacobians from
    one input token to every output token, e.g. the fixed-input token coupling of paper A §3.1.
    """
    n_tok, d = x.shape
    basis = torch.zeros(len(inputs), d, n_tok, d, dtype=x.dtype, device=x.device)
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    for i, t1 in enumerate(inputs):
        basis[i, :, t1, :] = eye  # tangent e_j at input position t1
    cols = vmap(lambda v: jvp(f, (x,), (v,))[1], chunk_size=chunk_size)(basis.flatten(0, 1))
    return cols.view(len(inputs), d, n_tok, d)  # [input, d_in, tok, d_out]


def diagonal_blocks(f: Callable, x: torch.Tensor, chunk_size: int | None) -> torch.Tensor:
    """Every J_tt of one block from d products: ``[tok, d_model, d_model]`` (rows = outputs)."""
    n_tok, d = x.shape
    _, pullback = vjp(f, x)
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    basis = eye[:, None, :].expand(d, n_tok, d)  # e_k at every position at once
    (rows,) = vmap(pullback, chunk_size=chunk_size)(basis)  # [d_out, tok, d_in]
    return rows.transpose(0, 1)  # [tok, d_out, d_in]


def progress_bar(items: list[int], desc: str, enabled: bool):
    """``items`` with a progress bar when ``enabled`` and there are four or more."""
    return tqdm(items, desc=desc, leave=False, disable=not enabled or len(items) < 4)


