"""Last-token block Jacobians J^l_{nn} from one decoding step against a frozen key/value prefix."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext

import torch
from torch.func import vjp, vmap

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.jacobians.attention import frozen_prefix, supports_frozen_prefix
from llmdyn.jacobians.blocks import BlockCall, block_function, progress_bar, resolve_layers
from llmdyn.jacobians.mlp_start import mlp_output
from llmdyn.jacobians.step import FrozenPrefix, capture_last_step, merge_calls
from llmdyn.models.architectures import config_value
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, encode


def _pullback(model: LoadedModel, f, x: torch.Tensor, call: BlockCall):
    """``torch.func.vjp(f, x, has_aux=True)``: the pullback and f's auxiliary output.

    The frozen prefix is kept out of the batch where the family allows it.
    """
    frozen = next(v for v in (*call.args, *call.kwargs.values()) if isinstance(v, FrozenPrefix))
    if not supports_frozen_prefix(model):
        return vjp(f, x, has_aux=True)[1:]
    frozen.lazy = True
    try:
        with frozen_prefix(model, frozen.prefix):
            return vjp(f, x, has_aux=True)[1:]
    finally:
        frozen.lazy = False


def _check_batches(model: LoadedModel, per: int, n_prompts: int) -> None:
    """Refuse ``per`` < 1, and a batch of several prompts on a model with ALiBi biases."""
    if int(per) < 1:
        raise LlmdynError(f"prompts_per_batch must be >= 1, got {per!r}")
    if per > 1 and n_prompts > 1 and config_value(model.hf.config, model.arch.alibi):
        raise LlmdynError(f"{model.name} adds ALiBi position biases to attention, which the "
                          "batched route cannot merge across prompts; pass "
                          "prompts_per_batch=1")


def _batch_jacobian(model: LoadedModel, b: int, call: BlockCall, eye: torch.Tensor,
                    chunk_size: int | None, last_point: LastPoint = "final_norm") -> torch.Tensor:
    """J^b_nn of every prompt in the call from d reverse products: ``[prompt, d_out, d_in]``.

    Where :func:`.mlp_start.mlp_output` finds the projection W, the block's output carries no
    gradient through W (:meth:`.mlp_start.MlpOutput.detached`), the block returns W's input a as
    well, and the cotangents are ``(e_k, row k of J_N W)``: the same rows
    e_k J_h + e_k J_N W J_a (J_N = I without a norm).
    """
    block, rest = block_function(model, b, last_point), call.args[1:]
    start = mlp_output(model, b, last_point)
    seen: dict[str, torch.Tensor] = {}  # W's input a, and the norm's input z if any

    def f(x: torch.Tensor):
        with nullcontext() if start is None else start.detached(seen):
            y = block(x[:, None], *rest, **call.kwargs)  # [prompt, 1, d_model]
        residual = y[:, 0] - x  # f^b(x_n) of each prompt: the block's residual at its last token
        if start is None:
            return residual, {}
        return (residual, seen.pop("a")[:, 0]), {k: v[:, 0] for k, v in seen.items()}

    x = call.args[0][:, 0].detach()  # [prompt, d_model]
    pullback, aux = _pullback(model, f, x, call)
    # Prompts are independent rows of the batch: the cotangent e_k at every prompt at once.
    n, prompts = eye.shape[0], x.shape[0]
    basis = eye[:, None, :].expand(n, prompts, n)  # [d_model, prompt, d_model]
    if start is not None:
        basis = (basis, start.rows(aux.get("z"), prompts))  # and [d_model, prompt, d_mlp] at a
    (rows,) = vmap(pullback, chunk_size=chunk_size)(basis)  # [d_out, prompt, d_in]
    return rows.transpose(0, 1)  # [prompt, d_out, d_in]


def last_token_jacobians_batched(
    model: LoadedModel,
    prompts: Sequence[str],
    layers: Sequence[int] | None = None,
    *,
    prompts_per_batch: int = 8,
    chunk_size: int | None = None,
    progress: bool = False,
    last_point: LastPoint = "final_norm",
    cut_long_prompts: bool = False,
) -> torch.Tensor:
    """:func:`last_token_jacobians` for many prompts, several prompts per vmapped batch.

    Each prompt's step is recorded on its own (:func:`capture_last_step`); a batch then stacks
    the prompts' last tokens, left-pads their frozen key/value prefixes to the longest and masks
    the padding, so that one set of d_model reverse products serves every prompt in the batch.
    Per-prompt results equal the one-prompt path up to the summation order of the batched
    matrix products (about 1e-7 relative in float32).

    Args:
        model: a loaded model.
        prompts: texts, each tokenised as ``model.tokenizer(prompt, return_tensors="pt")``.
        layers: 0-based blocks (None: all); negative indices count from the end.
        prompts_per_batch: prompts per batch (1: one at a time; the only choice on models
            with ALiBi position biases, Falcon with ``alibi`` and MPT).
        chunk_size: reverse products run at once (None: all d_model).
        progress: show a progress bar over batches and blocks.
        last_point: ``"final_norm"`` (the papers': the last block includes the final norm) or
            ``"block_output"``.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        ``[prompt, layer, d_model, d_model]`` (rows = output coordinates), detached.
    """
    check_last_point(last_point)
    if isinstance(prompts, str) or not prompts:
        raise LlmdynError(f"prompts must be a non-empty list of texts, got {prompts!r:.60}")
    checks.positive_int(chunk_size, "chunk_size", none_means="all d_model products at once")
    blocks = resolve_layers(model, layers)
    _check_batches(model, prompts_per_batch, len(prompts))
    d, per = model.d_model, int(prompts_per_batch)
    out = []
    for i in range(0, len(prompts), per):
        batch = list(prompts[i:i + per])
        ids = [encode(model, p, cut_long_prompts=cut_long_prompts) for p in batch]  # [1, tok]
        calls = merge_calls([capture_last_step(model, one) for one in ids])
        x = calls[0].args[0]
        eye = torch.eye(d, dtype=x.dtype, device=x.device)  # cotangents e_k, built once
        jac = [_batch_jacobian(model, b, calls[b], eye, chunk_size, last_point)
               for b in progress_bar(blocks, desc=f"last-token Jacobians {model.name}",
                                  enabled=progress)]
        out.append(torch.stack(jac, dim=1).detach())  # [prompt, layer, d_model, d_model]
    jac = torch.cat(out)
    bad = checks.nonfinite_rows(jac)
    if bad.any():
        prompt = prompts[int(bad.nonzero()[0, 0])]
        raise LlmdynError(f"non-finite values in the last-token Jacobians of {model.name} for "
                          f"prompt {prompt[:40]!r}")
    return jac


def last_token_jacobians(
    model: LoadedModel,
    prompt: str,
    layers: Sequence[int] | None = None,
    *,
    chunk_size: int | None = None,
    progress: bool = False,
    last_point: LastPoint = "final_norm",
    cut_long_prompts: bool = False,
) -> torch.Tensor:
    """Block Jacobians J^l_{nn} of the last token n, exactly, at a cost independent of length.

    Same quantity as ``block_jacobians(model, prompt, layers, pairs="last")[:, 0]`` (paper A
    eq. 8 with t1 = t2 = n, skip connection removed): the earlier tokens' states are held
    fixed, which under causal attention means their keys and values are constants. Each block
    is re-run on the last token alone against its recorded key/value prefix, so the d_model
    reverse products touch one token instead of the whole prompt. For many prompts use
    :func:`last_token_jacobians_batched`.

    Args:
        model: a loaded model.
        prompt: tokenised as ``model.tokenizer(prompt, return_tensors="pt")``.
        layers: 0-based blocks (None: all); negative indices count from the end.
        chunk_size: reverse products run at once (None: all d_model).
        progress: show a progress bar over blocks.
        last_point: ``"final_norm"`` (the papers': f^L(x) = norm(block_L(x)) − x) or
            ``"block_output"``.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        ``[layer, d_model, d_model]`` (rows = output coordinates), detached.
    """
    layers = checks.layer_indices(layers, model.n_layers)
    if not isinstance(prompt, str):
        raise LlmdynError(f"prompt must be one text, got {type(prompt).__name__}; for a list "
                          "use last_token_jacobians_batched")
    return last_token_jacobians_batched(model, [prompt], layers, prompts_per_batch=1,
                                        chunk_size=chunk_size, progress=progress,
                                        last_point=last_point,
                                        cut_long_prompts=cut_long_prompts)[0]
