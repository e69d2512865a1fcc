"""One decoding step recorded against a frozen key/value prefix, one prompt or a batch.

The last-token route (:mod:`llmdyn.jacobians.last_token`) re-runs each block on the last token
alone; the calls recorded here give it that token's block inputs and, in place of the model's
cache, a :class:`FrozenPrefix` holding the keys and values of the earlier tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from transformers import Cache, DynamicCache

from llmdyn import LlmdynError
from llmdyn.jacobians.blocks import BlockCall
from llmdyn.models.loading import LoadedModel


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

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Keys the step attends to, as a real cache reports after its update: prefix and token.

        MPT reads it after ``update`` to place its ALiBi bias.
        """
        return int(self.prefix[layer_idx][0].shape[-2]) + 1

    def update(self, key: torch.Tensor, value: torch.Tensor, layer_idx: int, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``cat(prefix, new)`` along the token axis, for keys and values (lazy: ``new``)."""
        if self.lazy:  # llmdyn.jacobians.attention reads the prefix itself
            return key, value
        k0, v0 = self.prefix[layer_idx]
        # keys and values [1, kv_heads, tok, head_dim] each
        return torch.cat([k0, key], dim=-2), torch.cat([v0, value], dim=-2)


def _swap_cache(value: Any, frozen: FrozenPrefix) -> Any:
    return frozen if isinstance(value, Cache) else value


class _PrefixRecorder:
    """Wraps a cache's ``update``: while ``recording``, keeps the keys and values before the step.

    ``prefix``: per block index, keys and values ``[1, kv_heads, tok-1, head_dim]``.
    """

    def __init__(self, cache: DynamicCache) -> None:
        self.prefix: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.recording = False
        real_update = cache.update

        def update(key, value, layer_idx, *args, **kwargs):
            keys, values = real_update(key, value, layer_idx, *args, **kwargs)
            if self.recording:
                self.prefix[layer_idx] = (keys[..., :-1, :].detach().clone(),
                                          values[..., :-1, :].detach().clone())
            return keys, values

        cache.update = update  # instance attribute: this cache only


def _record_step_calls(blocks: Sequence[torch.nn.Module], run: Callable[[], Any]
                       ) -> list[BlockCall]:
    """Call ``run()`` and record each block's call, its cache argument included."""
    calls: list[BlockCall] = []

    def record(_module, args, kwargs):
        calls.append(BlockCall(tuple(a.detach() if torch.is_tensor(a) else a for a in args),
                               dict(kwargs)))

    handles = [b.register_forward_pre_hook(record, with_kwargs=True) for b in blocks]
    try:
        run()
    finally:
        for handle in handles:
            handle.remove()
    return calls


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
    cache = DynamicCache(config=model.hf.config)
    recorder = _PrefixRecorder(cache)
    # The model without its head: only the blocks' calls are wanted, and the head reads the
    # whole unembedding. The blocks see the same inputs, so the calls are the same bits.
    body = model.hf.base_model
    with torch.no_grad():
        if input_ids.shape[1] > 1:  # the prefix: its keys and values
            body(input_ids[:, :-1], past_key_values=cache, use_cache=True)
        recorder.recording = True
        calls = _record_step_calls(model.blocks, lambda: body(
            input_ids[:, -1:], past_key_values=cache, use_cache=True))
    prefix = recorder.prefix
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
                          for i in (0, 1))  # [prompt, kv_heads, n, head_dim]
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
                          .transpose(-1, -2) for v in values])  # [prompt, 1, 1, keys]
    if torch.is_tensor(first):
        if all(v.shape == first.shape and torch.equal(v, first) for v in values):
            return first  # shared by all prompts (broadcasts)
        return torch.cat(values)  # [prompt, ...]: rotary embeddings, position ids
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

        hidden = torch.cat([c.args[0] for c in calls])  # [prompt, 1, d_model]
        args = (hidden, *(merge([c.args[i] for c in calls]) for i in range(1, len(calls[0].args))))
        kwargs = {k: merge([c.kwargs[k] for c in calls]) for k in calls[0].kwargs}
        out.append(BlockCall(args, kwargs))
    return out
