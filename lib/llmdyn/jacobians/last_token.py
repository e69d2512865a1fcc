"""Last-token block Jacobians J^l_{nn} from one decoding step against a frozen key/value prefix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.func import vjp, vmap
from transformers import Cache, DynamicCache

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.jacobians.attention import frozen_prefix, supports_frozen_prefix
from llmdyn.jacobians.blocks import BlockCall, block_function, progress_bar, resolve_layers
from llmdyn.jacobians.mlp_start import mlp_output
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, encode


class FrozenPrefix:
    """Stands in for the model's key/value cache: prepends the recorded prefix, never grows.

    The attention modules of every supported family call ``cache.update(k, v, layer_idx)`` and
    attend to what it returns. Returning ``cat(prefix, k)`` without storing anything lets the
    same one-token block call run any number of times, with gradients only through the new token.

    Args:
        prefix: per block index, the keys and values ``[1, kv_heads, tok-1, head_dim]`` the
            real cache returned for the earlier tokens during the step.
    """

    def __init__(self, prefix: dict[int, tuple[torch.Tensor, torch.Tensor]]) -> None:
        self.prefix = prefix
        self.lazy = False  # True: return the new key and value; attention adds the prefix

    def update(self, key: torch.Tensor, value: torch.Tensor, layer_idx: int, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``cat(prefix, new)`` along the token axis, for keys and values (lazy: ``new``)."""
        if self.lazy:  # llmdyn.jacobians.attention reads the prefix itself
            return key, value
        k0, v0 = self.prefix[layer_idx]
        return torch.cat([k0, key], dim=-2), torch.cat([v0, value], dim=-2)  # (1, h, tok, hd)


def _swap_cache(value: Any, frozen: FrozenPrefix) -> Any:
    return frozen if isinstance(value, Cache) else value


def capture_last_step(model: LoadedModel, input_ids: torch.Tensor) -> list[BlockCall]:
    """Run the prompt as prefix + one decoding step; record each block's call in the step.

    The recorded calls carry a :class:`FrozenPrefix` in place of the cache, holding the keys and
    values each block's attention really used for the earlier tokens (after any sliding-window
    trimming), so that re-running a block on the last token alone reproduces the full forward.

    Args:
        model: a loaded model.
        input_ids: ``[1, tok]`` token ids.

    Returns:
        One call per block; ``call.args[0]`` is the last token's block input ``[1, 1, d_model]``.
    """
    config = model.hf.config
    cache = DynamicCache(config=config)
    prefix: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    calls: list[BlockCall] = []
    real_update = cache.update

    def recording_update(key, value, layer_idx, *args, **kwargs):
        keys, values = real_update(key, value, layer_idx, *args, **kwargs)
        if recording:
            prefix[layer_idx] = (keys[..., :-1, :].detach().clone(),
                                 values[..., :-1, :].detach().clone())
        return keys, values

    def record(_module, args, kwargs):
        calls.append(BlockCall(tuple(a.detach() if torch.is_tensor(a) else a for a in args),
                               dict(kwargs)))

    cache.update = recording_update  # instance attribute: this cache only
    # The model without its head: only the blocks' calls are wanted, and the head is a read of
    # the whole unembedding (on Gemma-3-270M 671 MB, 5 % of the Jacobians' time). The blocks
    # see the same inputs, so the recorded calls are the same bits.
    body = model.hf.base_model
    with torch.no_grad():
        recording = False
        if input_ids.shape[1] > 1:  # the prefix: its keys and values
            body(input_ids[:, :-1], past_key_values=cache, use_cache=True)
        recording = True
        handles = [b.register_forward_pre_hook(record, with_kwargs=True) for b in model.blocks]
        try:
            body(input_ids[:, -1:], past_key_values=cache, use_cache=True)
        finally:
            for handle in handles:
                handle.remove()
    if len(prefix) != model.n_layers or any(not c.args for c in calls):
        raise LlmdynError(f"{model.name}: could not record the key/value prefix of every block "
                          f"({len(prefix)} of {model.n_layers}); use "
                          "llmdyn.jacobians.block_jacobians(..., pairs='last', method='exact') "
                          "instead")
    frozen = FrozenPrefix(prefix)
    return [BlockCall(tuple(_swap_cache(a, frozen) for a in c.args),
                      {k: _swap_cache(v, frozen) for k, v in c.kwargs.items()}) for c in calls]


def _pad_left(x: torch.Tensor, length: int, value: float) -> torch.Tensor:
    """``x`` padded with ``value`` on the left of its token axis (-2) to ``length``."""
    pad = length - x.shape[-2]
    if pad == 0:
        return x
    fill = x.new_full((*x.shape[:-2], pad, x.shape[-1]), value)
    return torch.cat([fill, x], dim=-2)


def _merge_prefixes(frozen: list[FrozenPrefix]) -> tuple[FrozenPrefix, dict[int, int]]:
    """One prefix for a batch of prompts: per block ``[prompt, kv_heads, tok-1, head_dim]``.

    Shorter prefixes are left-padded with zeros; the masks built by :func:`_merge_masks` give
    the padded positions zero attention weight. Also returns each block's padded key length.
    """
    merged, lengths = {}, {}
    for b in frozen[0].prefix:
        n = max(f.prefix[b][0].shape[-2] for f in frozen)
        merged[b] = tuple(torch.cat([_pad_left(f.prefix[b][i], n, 0.0) for f in frozen])
                          for i in (0, 1))  # (prompt, kv_heads, n, head_dim)
        lengths[b] = n + 1  # keys the step's query sees: the prefix and itself
    return FrozenPrefix(merged), lengths


def _is_step_mask(value: Any, frozen: FrozenPrefix, b: int) -> bool:
    """Whether ``value`` is block b's additive attention mask ``[1, 1, 1, keys]`` of the step."""
    return (torch.is_tensor(value) and value.dim() == 4 and value.is_floating_point()
            and tuple(value.shape[:3]) == (1, 1, 1)
            and value.shape[-1] == frozen.prefix[b][0].shape[-2] + 1)


def _merge_values(values: list[Any], masks: bool, keys: int) -> Any:
    """Stack one argument of a block call across prompts along the batch axis."""
    first = values[0]
    if masks:  # padded key positions get the most negative value: zero attention weight
        return torch.cat([_pad_left(v.transpose(-1, -2), keys, torch.finfo(v.dtype).min)
                          .transpose(-1, -2) for v in values])  # (prompt, 1, 1, keys)
    if torch.is_tensor(first):
        if all(v.shape == first.shape and torch.equal(v, first) for v in values):
            return first  # shared by all prompts (broadcasts)
        return torch.cat(values)  # (prompt, ...): rotary embeddings, position ids
    if isinstance(first, tuple):
        return tuple(_merge_values(list(vs), False, keys) for vs in zip(*values, strict=True))
    if any(v is not first and v != first for v in values[1:]):
        raise LlmdynError(f"block calls differ between prompts in a non-tensor argument "
                          f"({first!r}); use prompts_per_batch=1")
    return first


def merge_calls(per_prompt: list[list[BlockCall]]) -> list[BlockCall]:
    """One batched call per block from each prompt's recorded step (:func:`capture_last_step`).

    Hidden states, rotary embeddings and position ids are concatenated along the batch axis;
    the key/value prefixes are left-padded to the longest and the attention masks extended so
    that padded positions get zero weight. One prompt: the calls are returned unchanged.
    """
    if len(per_prompt) == 1:
        return per_prompt[0]
    frozen = [next(v for v in (*c[0].args, *c[0].kwargs.values()) if isinstance(v, FrozenPrefix))
              for c in per_prompt]
    merged, lengths = _merge_prefixes(frozen)
    out = []
    for b, calls in enumerate(zip(*per_prompt, strict=True)):

        def merge(values: list[Any], b=b) -> Any:
            if isinstance(values[0], FrozenPrefix):
                return merged
            masks = all(_is_step_mask(v, f, b) for v, f in zip(values, frozen, strict=True))
            return _merge_values(values, masks, lengths[b])

        hidden = torch.cat([c.args[0] for c in calls])  # (prompt, 1, d_model)
        args = (hidden, *(merge([c.args[i] for c in calls]) for i in range(1, len(calls[0].args))))
        kwargs = {k: merge([c.kwargs[k] for c in calls]) for k in calls[0].kwargs}
        out.append(BlockCall(args, kwargs))
    return out


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


def _batch_jacobian(model: LoadedModel, b: int, call: BlockCall, eye: torch.Tensor,
                    chunk_size: int | None, last_point: LastPoint = "final_norm") -> torch.Tensor:
    """J^b_nn of every prompt in the call from d reverse products: ``[prompt, d_out, d_in]``.

    Where :func:`mlp_output` finds the projection W, the block's output carries no gradient
    through W (the output of W, or of the norm after it, is detached in the forward pass), the
    block returns W's input a as well, and the cotangents are ``(e_k, row k of J_N W)``: the
    same rows e_k J_h + e_k J_N W J_a (J_N = I without a norm).
    """
    block, rest = block_function(model, b, last_point), call.args[1:]
    start = mlp_output(model, b, last_point)
    seen: dict[str, torch.Tensor] = {}

    def at_projection(_module, inputs, output):
        seen["a"] = inputs[0]
        return output.detach() if start.norm is None else None

    def at_norm(_module, inputs, output):
        seen["z"] = inputs[0].detach()  # the norm's input, for its Jacobian
        return output.detach()

    def f(x: torch.Tensor):
        handles = []
        if start is not None:
            handles.append(start.projection.register_forward_hook(at_projection))
            if start.norm is not None:
                handles.append(start.norm.register_forward_hook(at_norm))
        try:
            y = block(x[:, None], *rest, **call.kwargs)  # (prompt, 1, d_model)
        finally:
            for handle in handles:
                handle.remove()
        residual = y[:, 0] - x  # f^b(x_n) of each prompt: the block's residual at its last token
        if start is None:
            return residual, {}
        return (residual, seen.pop("a")[:, 0]), {k: v[:, 0] for k, v in seen.items()}

    x = call.args[0][:, 0].detach()  # (prompt, d_model)
    pullback, aux = _pullback(model, f, x, call)
    # Prompts are independent rows of the batch: the cotangent e_k at every prompt at once.
    n, prompts = eye.shape[0], x.shape[0]
    basis = eye[:, None, :].expand(n, prompts, n)  # (d, prompt, d)
    if start is not None:
        basis = (basis, start.rows(aux.get("z"), prompts))  # and (d, prompt, d_mlp) at a
    (rows,) = vmap(pullback, chunk_size=chunk_size)(basis)  # (d_out, prompt, d_in)
    return rows.transpose(0, 1)  # (prompt, d_out, d_in)


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
        prompts_per_batch: prompts per batch (1: one at a time).
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
    if int(prompts_per_batch) < 1:
        raise LlmdynError(f"prompts_per_batch must be >= 1, got {prompts_per_batch!r}")
    checks.positive_int(chunk_size, "chunk_size", none_means="all d_model products at once")
    blocks = resolve_layers(model, layers)
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
        out.append(torch.stack(jac, dim=1).detach())  # (prompt, layer, d_model, d_model)
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
