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

from llmdyn.models.architectures import ARCHITECTURES
from llmdyn.models.loading import LoadedModel

OWN_POSITION_ATTENTION = "llmdyn_own_position"
FROZEN_PREFIX_ATTENTION = "llmdyn_frozen_prefix"


# Modules whose eager attention is exactly softmax(q k^T * scaling [softcapped] + mask) v with
# grouped keys and values (repeat_kv); :func:`_own_position_direct` rebuilds it. Others take the
# generic route. A family is marked in its record (``Architecture.standard_eager``); the
# per-family tests then check both routes against autograd on its tiny model.
STANDARD_EAGER = frozenset(a.module for a in ARCHITECTURES.values() if a.standard_eager)


def _own_position_attention(module, query, key, value, attention_mask, *args, **kwargs):
    """The model's eager attention, with gradients only through each query's own position.

    Forward values are unchanged; each output token then depends on the block input only through
    its own position, so one reverse product with a cotangent at every position yields every
    diagonal Jacobian J_tt at once.
    """
    if args or module.training or type(module).__module__ not in STANDARD_EAGER:
        return _own_position_by_copies(module, query, key, value, attention_mask, *args, **kwargs)
    return _own_position_direct(module, query, key, value, attention_mask,
                                scaling=kwargs.get("scaling"), softcap=kwargs.get("softcap"))


def _own_position_direct(module, query, key, value, attention_mask, scaling=None, softcap=None):
    """Standard eager attention in which only the diagonal score and value term stay live.

    Scores are q_t . k_j with k_j detached, plus diag(q_t . (k_t - k_t.detach())), which is zero
    in value but carries the gradient of the own key; outputs are P @ V.detach() plus
    P_tt (v_t - v_t.detach()). Cost O(T^2), as the model's own attention.
    """
    repeat_kv = sys.modules[type(module).__module__].repeat_kv
    k = repeat_kv(key, module.num_key_value_groups)  # [batch, heads, tok, head_dim]
    v = repeat_kv(value, module.num_key_value_groups)
    k_fixed, v_fixed = k.detach(), v.detach()
    scores = query @ k_fixed.transpose(2, 3)  # [batch, heads, tok, tok]
    scores = scores + torch.diag_embed((query * (k - k_fixed)).sum(-1))
    scores = scores * (module.head_dim**-0.5 if scaling is None else scaling)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    own = torch.diagonal(probs, dim1=-2, dim2=-1)[..., None]  # [batch, heads, tok, 1]
    out = probs @ v_fixed + own * (v - v_fixed)  # [batch, heads, tok, head_dim]
    return out.transpose(1, 2).contiguous(), probs


def _own_position_by_copies(module, query, key, value, attention_mask, *args, **kwargs):
    """Any eager attention: T copies of the batch, copy c keeping only key and value row c live.

    Only query c of copy c is kept. Costs T times the attention, but calls the model's own
    eager function, so every variant (scaling rules, dropout off in eval) is honoured.
    """
    eager = sys.modules[type(module).__module__].eager_attention_forward
    b, h, t, hd = query.shape  # [batch, heads, tok, head_dim]
    own = torch.eye(t, dtype=query.dtype, device=query.device).view(t, 1, 1, t, 1)
    k = key.detach() + own * (key - key.detach())  # [copy, batch, kv_heads, tok, head_dim]
    v = value.detach() + own * (value - value.detach())
    q = query.expand(t, *query.shape)  # [copy, batch, heads, tok, head_dim]
    mask = None
    if attention_mask is not None:
        mask = attention_mask.expand(t, *attention_mask.shape).flatten(0, 1)
    out, _ = eager(module, q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), mask,
                   *args, **kwargs)  # [copy*batch, tok, heads, head_dim]
    out = out.reshape(t, b, t, *out.shape[2:])
    pick = torch.arange(t, device=query.device)
    return out[pick, :, pick].transpose(0, 1), None  # [batch, tok, heads, head_dim]


AttentionInterface.register(OWN_POSITION_ATTENTION, _own_position_attention)


@contextmanager
def attention_implementation(model: LoadedModel, name: str):
    """Within the block, the model (and its text config) attends with the registered ``name``."""
    configs = {id(c): c for c in (model.hf.config, model.hf.config.get_text_config())}
    saved: dict[int, Any] = {key: c._attn_implementation for key, c in configs.items()}
    try:
        for c in configs.values():
            c._attn_implementation = name
        yield
    finally:
        for key, c in configs.items():
            c._attn_implementation = saved[key]


def own_position_attention(model: LoadedModel):
    """Within the block, switch attention to :func:`_own_position_attention`."""
    return attention_implementation(model, OWN_POSITION_ATTENTION)



class _ConstantMatmul(torch.autograd.Function):
    """``x @ w`` for a constant ``w``, whose batching rule folds vmap's axis into x's rows.

    Under ``vmap`` over cotangents, ``torch.matmul`` broadcasts a constant
    ``w [prompt, heads, tok, head_dim]`` to every cotangent and copies it
    (``[d_model, prompt, heads, tok, head_dim]``); here the cotangents become extra rows of one
    batched product instead, about 60× faster than the broadcast on SmolLM2-135M's prefix.
    The backward is the same product with ``w^T``, so reverse products batch the same way.
    """

    @staticmethod
    def forward(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x @ w  # [..., n, k] @ [..., k, m] -> [..., n, m]

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
        x = x.movedim(x_dim, -3)  # [..., vmap, n, k]
        *lead, b, n, k = x.shape
        out = _ConstantMatmul.apply(x.reshape(*lead, b * n, k), w)  # [..., vmap*n, m]
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
    # the prefix's keys and values, [prompt, heads, tok-1, head_dim] each
    k0, v0 = (repeat_kv(t, groups) for t in _ACTIVE[-1][module.layer_idx])
    k, v = repeat_kv(key, groups), repeat_kv(value, groups)  # [prompt, heads, 1, head_dim]
    prefix = _ConstantMatmul.apply(query, k0.transpose(2, 3))  # [prompt, heads, 1, tok-1]
    own = (query * k).sum(-1, keepdim=True)  # [prompt, heads, 1, 1]
    scores = torch.cat([prefix, own], dim=-1) * (module.head_dim**-0.5 if scaling is None
                                                 else scaling)  # [prompt, heads, 1, tok]
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if attention_mask is not None:
        scores = scores + attention_mask[..., : scores.shape[-1]]
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    n = k0.shape[-2]
    out = _ConstantMatmul.apply(probs[..., :n], v0)  # [prompt, heads, 1, head_dim]
    out = out + probs[..., n:] * v  # and the step's own value
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
    _ACTIVE.append(prefix)
    try:
        with attention_implementation(model, FROZEN_PREFIX_ATTENTION):
            yield
    finally:
        _ACTIVE.pop()
