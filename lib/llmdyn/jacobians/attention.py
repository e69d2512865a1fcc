"""One decoding step's attention against a constant key/value prefix, kept out of the vmapped batch.

Under ``vmap`` over the d_model cotangents, concatenating the constant prefix to the step's own
key and value copies the prefix once per cotangent (``[d_model, prompt, heads, tok, head_dim]``),
and the backward pass then fills and sums dense gradients for keys and values that are
constants. Here the prefix scores ``q @ K0^T`` and values ``P @ V0`` are formed against the
unbatched prefix, and only the step's own key and value carry gradients: the same numbers
(softmax over ``[prefix, own]``), at the cost of the query's products alone.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any

import torch
from transformers import AttentionInterface

from llmdyn.jacobians.full import STANDARD_EAGER
from llmdyn.models.loading import LoadedModel

FROZEN_PREFIX_ATTENTION = "llmdyn_frozen_prefix"


class _ConstantMatmul(torch.autograd.Function):
    """``x @ w`` for a constant ``w``, whose batching rule folds vmap's axis into x's rows.

    Under ``vmap`` over cotangents, ``torch.matmul`` broadcasts a constant ``w [P, h, tok, hd]``
    to every cotangent and copies it (``[d_model, P, h, tok, hd]``); here the cotangents become
    extra rows of one batched product instead (measured 60× faster for SmolLM2's prefix).
    The backward is the same product with ``w^T``, so reverse products batch the same way.
    """

    @staticmethod
    def forward(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x @ w  # (..., n, k) @ (..., k, m) -> (..., n, m)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(inputs[1])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (w,) = ctx.saved_tensors
        return _ConstantMatmul.apply(grad, w.transpose(-1, -2)), None

    @staticmethod
    def vmap(info, in_dims, x: torch.Tensor, w: torch.Tensor):
        x_dim, w_dim = in_dims
        if w_dim is not None:  # a batched weight: plain broadcasting product
            x = x.unsqueeze(0) if x_dim is None else x.movedim(x_dim, 0)
            return _ConstantMatmul.apply(x, w.movedim(w_dim, 0)), 0
        x = x.movedim(x_dim, -3)  # (..., vmap, n, k)
        *lead, b, n, k = x.shape
        out = _ConstantMatmul.apply(x.reshape(*lead, b * n, k), w)  # (..., vmap*n, m)
        return out.reshape(*lead, b, n, w.shape[-1]), len(lead)  # vmap axis after the lead
# The prefixes of the step being differentiated (innermost last); set by :func:`frozen_prefix`.
_ACTIVE: list[dict[int, tuple[torch.Tensor, torch.Tensor]]] = []


def _frozen_prefix_attention(module, query, key, value, attention_mask, dropout=0.0,
                             scaling=None, softcap=None, **kwargs):
    """Standard eager attention of one new token (``key``, ``value``) after a constant prefix.

    Args:
        module: the attention module (its ``layer_idx`` selects the prefix).
        query: ``[prompt, heads, 1, head_dim]``.
        key: the new token's ``[prompt, kv_heads, 1, head_dim]`` (the prefix is not
            concatenated: :class:`llmdyn.jacobians.FrozenPrefix` in lazy mode).
        value: as ``key``.
        attention_mask: additive ``[prompt, 1, 1, tok]`` over ``[prefix, own]``, or None.
        dropout: ignored (eval mode only; :func:`supports_frozen_prefix`).
        scaling: score scale (None: head_dim^-1/2), as the model's eager attention.
        softcap: Gemma's score soft cap, or None.
        **kwargs: other arguments of the eager interface (sliding window: in the mask).

    Returns:
        ``([prompt, 1, heads, head_dim], probs [prompt, heads, 1, tok])`` as eager attention.
    """
    repeat_kv = sys.modules[type(module).__module__].repeat_kv
    groups = module.num_key_value_groups
    k0, v0 = (repeat_kv(t, groups) for t in _ACTIVE[-1][module.layer_idx])  # (P, h, tok-1, hd)
    k, v = repeat_kv(key, groups), repeat_kv(value, groups)  # (P, h, 1, hd)
    prefix = _ConstantMatmul.apply(query, k0.transpose(2, 3))  # (P, h, 1, tok-1)
    own = (query * k).sum(-1, keepdim=True)  # (P, h, 1, 1)
    scores = torch.cat([prefix, own], dim=-1) * (module.head_dim**-0.5 if scaling is None
                                                 else scaling)  # (P, h, 1, tok)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if attention_mask is not None:
        scores = scores + attention_mask[..., : scores.shape[-1]]
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    n = k0.shape[-2]
    out = _ConstantMatmul.apply(probs[..., :n], v0) + probs[..., n:] * v  # (P, h, 1, hd)
    return out.transpose(1, 2).contiguous(), probs


AttentionInterface.register(FROZEN_PREFIX_ATTENTION, _frozen_prefix_attention)


def supports_frozen_prefix(model: LoadedModel) -> bool:
    """Whether the model's attention is the standard eager form the lazy prefix rebuilds."""
    return type(model.hf).__module__ in STANDARD_EAGER and not model.hf.training


@contextmanager
def frozen_prefix(model: LoadedModel, prefix: dict[int, tuple[torch.Tensor, torch.Tensor]]):
    """Within the block call, attention reads the constant ``prefix`` (per block index) itself.

    Use only where :func:`supports_frozen_prefix` holds, with a cache that returns the new
    token's key and value alone.
    """
    configs = {id(c): c for c in (model.hf.config, model.hf.config.get_text_config())}
    saved: dict[int, Any] = {key: c._attn_implementation for key, c in configs.items()}
    _ACTIVE.append(prefix)
    try:
        for c in configs.values():
            c._attn_implementation = FROZEN_PREFIX_ATTENTION
        yield
    finally:
        _ACTIVE.pop()
        for key, c in configs.items():
            c._attn_implementation = saved[key]
