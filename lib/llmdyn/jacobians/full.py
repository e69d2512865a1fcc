"""Exact block Jacobians J^l_{t1 t2} = ∂ f^l(X)_{t2} / ∂ x_{t1} by batched reverse-mode products."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch.func import jvp, vjp, vmap
from transformers import AttentionInterface

from llmdyn import LlmdynError
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, encode

Pairs = Literal["diagonal", "last"] | Sequence[tuple[int, int]]
OWN_POSITION_ATTENTION = "llmdyn_own_position"


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
    return record_block_calls(model.blocks, lambda: model.hf(input_ids, use_cache=False))


def residual_map(block: Callable[..., Any], call: BlockCall) -> Callable:
    """f(X) = block(X) − X for one input: ``[tok, d_model] → [tok, d_model]``.

    The skip connection is removed (paper A eq. 8; paper B §3.6); everything else the block
    received during the real forward pass (masks, rotary embeddings) is passed unchanged.
    ``block`` is a module or any callable with its signature (:func:`block_function`).
    """
    rest = call.args[1:]

    def f(x: torch.Tensor) -> torch.Tensor:
        out = block(x[None], *rest, **call.kwargs)
        out = out[0] if isinstance(out, tuple) else out  # (1, tok, d_model)
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
        out = out[0] if isinstance(out, tuple) else out  # (batch, tok, d_model)
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
    for b in _progress(list(layers), desc=desc, enabled=progress):
        x, f = calls[b].hidden.detach(), residual_map(blocks[b], calls[b])
        if len(inputs) < len(outputs):  # d forward products per input token are fewer
            cols = _columns_at_inputs(f, x, inputs, chunk_size)  # (n_in, d_in, tok, d_out)
            where = {t1: i for i, t1 in enumerate(inputs)}
            out.append(torch.stack([cols[where[t1], :, t2, :].T for t1, t2 in pairs]))
        else:
            rows = _rows_at_outputs(f, x, outputs, chunk_size)  # (n_out, d_out, tok, d_in)
            where = {t2: i for i, t2 in enumerate(outputs)}
            out.append(torch.stack([rows[where[t2], :, t1, :] for t1, t2 in pairs]))
    return torch.stack(out).detach()  # (layer, pair, d_model, d_model)


# Modules whose eager attention is exactly softmax(q k^T * scaling [softcapped] + mask) v with
# grouped keys and values (repeat_kv); :func:`_own_position_direct` rebuilds it. Others take the
# generic route. Adding a module here needs its tiny model in the own-position tests.
STANDARD_EAGER = frozenset({"transformers.models.llama.modeling_llama",
                            "transformers.models.gemma3.modeling_gemma3"})


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
    k = repeat_kv(key, module.num_key_value_groups)  # (B, heads, tok, head_dim)
    v = repeat_kv(value, module.num_key_value_groups)
    k_fixed, v_fixed = k.detach(), v.detach()
    scores = query @ k_fixed.transpose(2, 3)  # (B, heads, tok, tok)
    scores = scores + torch.diag_embed((query * (k - k_fixed)).sum(-1))
    scores = scores * (module.head_dim**-0.5 if scaling is None else scaling)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    own = torch.diagonal(probs, dim1=-2, dim2=-1)[..., None]  # (B, heads, tok, 1)
    out = probs @ v_fixed + own * (v - v_fixed)  # (B, heads, tok, head_dim)
    return out.transpose(1, 2).contiguous(), probs


def _own_position_by_copies(module, query, key, value, attention_mask, *args, **kwargs):
    """Any eager attention: T copies of the batch, copy c keeping only key and value row c live.

    Only query c of copy c is kept. Costs T times the attention, but calls the model's own
    eager function, so every variant (scaling rules, dropout off in eval) is honoured.
    """
    eager = sys.modules[type(module).__module__].eager_attention_forward
    b, h, t, hd = query.shape  # (B, heads, tok, head_dim)
    own = torch.eye(t, dtype=query.dtype, device=query.device).view(t, 1, 1, t, 1)
    k = key.detach() + own * (key - key.detach())  # (copy, B, kv_heads, tok, head_dim)
    v = value.detach() + own * (value - value.detach())
    q = query.expand(t, *query.shape)  # (copy, B, heads, tok, head_dim)
    mask = None
    if attention_mask is not None:
        mask = attention_mask.expand(t, *attention_mask.shape).flatten(0, 1)
    out, _ = eager(module, q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), mask,
                   *args, **kwargs)  # (copy*B, tok, heads, head_dim)
    out = out.reshape(t, b, t, *out.shape[2:])
    pick = torch.arange(t, device=query.device)
    return out[pick, :, pick].transpose(0, 1), None  # (B, tok, heads, head_dim)


AttentionInterface.register(OWN_POSITION_ATTENTION, _own_position_attention)


@contextmanager
def own_position_attention(model: LoadedModel):
    """Within the block, switch attention to :func:`_own_position_attention`."""
    configs = {id(c): c for c in (model.hf.config, model.hf.config.get_text_config())}
    saved = {key: c._attn_implementation for key, c in configs.items()}
    try:
        for c in configs.values():
            c._attn_implementation = OWN_POSITION_ATTENTION
        yield
    finally:
        for key, c in configs.items():
            c._attn_implementation = saved[key]


def _resolve_layers(model: LoadedModel, layers: Sequence[int] | None) -> list[int]:
    if layers is None:
        return list(range(model.n_layers))
    layers = [int(b) for b in layers]
    bad = [b for b in layers if not -model.n_layers <= b < model.n_layers]
    if bad or not layers:
        raise LlmdynError(f"layers {bad or layers} out of range: {model.name} has blocks "
                          f"0..{model.n_layers - 1} (block b maps X^b to X^(b+1); paper l = b+1)")
    return [b % model.n_layers for b in layers]


def _resolve_pairs(pairs: Pairs, n_tok: int) -> list[tuple[int, int]]:
    if pairs == "diagonal":
        return [(t, t) for t in range(n_tok)]
    if pairs == "last":
        return [(n_tok - 1, n_tok - 1)]
    if isinstance(pairs, str):
        raise LlmdynError(f"pairs must be 'diagonal', 'last' or a list of (t1, t2), got {pairs!r}")
    resolved = []
    for pair in pairs:
        if len(pair) != 2:
            raise LlmdynError(f"each pair must be (t1, t2), got {pair!r}")
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
    (rows,) = vmap(pullback, chunk_size=chunk_size)(basis.flatten(0, 1))  # (n*d, tok, d)
    return rows.view(len(outputs), d, n_tok, d)


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
    return cols.view(len(inputs), d, n_tok, d)  # (n_in, d_in, tok, d_out)


def _diagonal_blocks(f: Callable, x: torch.Tensor, chunk_size: int | None) -> torch.Tensor:
    """Every J_tt of one block from d products: ``[tok, d_model, d_model]`` (rows = outputs)."""
    n_tok, d = x.shape
    _, pullback = vjp(f, x)
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    basis = eye[:, None, :].expand(d, n_tok, d)  # e_k at every position at once
    (rows,) = vmap(pullback, chunk_size=chunk_size)(basis)  # (d_out, tok, d_in)
    return rows.transpose(0, 1)  # (tok, d_out, d_in)


def _progress(items: list[int], desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, leave=False, disable=not enabled or len(items) < 4)


def _last_token_route(model: LoadedModel, prompt: str, blocks: list[int],
                      chunk_size: int | None, progress: bool,
                      last_point: LastPoint) -> torch.Tensor | None:
    """J_nn from one decoding step (:mod:`.last_token`), ``[layer, d_model, d_model]``.

    None where the model's cache cannot be recorded; then the full-prompt route runs.
    """
    from llmdyn.jacobians.last_token import last_token_jacobians

    try:
        return last_token_jacobians(model, prompt, blocks, chunk_size=chunk_size,
                                    progress=progress, last_point=last_point)  # (layer, d, d)
    except LlmdynError as err:
        if "could not record" not in str(err):
            raise
        return None


def block_jacobians(
    model: LoadedModel,
    prompt: str,
    layers: Sequence[int] | None = None,
    pairs: Pairs = "diagonal",
    *,
    method: Literal["auto", "exact", "own_position"] = "auto",
    chunk_size: int | None = 2048,
    progress: bool = True,
    last_point: LastPoint = "final_norm",
) -> torch.Tensor:
    """Block Jacobians without the skip connection (paper A eq. 8, paper B §3.6).

    ``J[i, p] = ∂ f_b(X)_{t2} / ∂ x_{t1}`` for ``b = layers[i]`` and ``(t1, t2) = pairs[p]``,
    where ``f_b(X) = block_b(X) − X`` and X = X^b. Rows index output coordinates. Zero for
    t1 > t2 (causal attention). Under the papers' ``last_point="final_norm"`` the last block
    includes the final norm: ``f_L(X) = norm(block_L(X)) − X``.

    Args:
        model: a loaded model.
        prompt: tokenised exactly as ``model.tokenizer(prompt, return_tensors="pt")``.
        layers: 0-based blocks (block b maps X^b to X^{b+1}; the paper's l is b+1);
            None for all. Negative indices count from the end.
        pairs: ``"diagonal"`` (every (t, t)), ``"last"`` (the last token's (n, n)) or a list of
            (t1, t2); negative token indices count from the end.
        method: ``"exact"`` differentiates each requested output position of the full block
            (d products per output token); ``"own_position"`` gets every diagonal J_tt from d
            products by letting attention see the other positions as constants; ``"auto"`` uses
            the latter when all pairs are diagonal and several are requested, and for the last
            token alone (``"last"`` or ``[(n, n)]``) re-runs each block on that token against
            the prompt's frozen key/value prefix (:mod:`llmdyn.jacobians.last_token`: one token's
            cost instead of the prompt's).
        chunk_size: how many reverse products run at once (bounds memory).
        progress: show a progress bar over blocks (when there are four or more).
        last_point: ``"final_norm"`` (the papers') or ``"block_output"`` (the last block
            without the final norm); only the last block's Jacobian depends on it.

    Returns:
        ``[len(layers), len(pairs), d_model, d_model]``, float32 (or the model's dtype).

    Raises:
        LlmdynError: a layer or token index out of range, an empty or too long prompt,
            an unknown method, or non-finite values in a Jacobian.
    """
    from llmdyn.core import checks

    layers = checks.layer_indices(layers, model.n_layers)
    method = checks.choice(method, ("auto", "exact", "own_position"), "method")
    check_last_point(last_point)
    ids = encode(model, prompt)
    blocks = _resolve_layers(model, layers)
    token_pairs = _resolve_pairs(pairs, ids.shape[1])
    diagonal = all(t1 == t2 for t1, t2 in token_pairs)
    n = ids.shape[1] - 1
    if method == "auto" and token_pairs == [(n, n)]:
        jac = _last_token_route(model, prompt, blocks, chunk_size, progress, last_point)
        if jac is not None:
            return jac[:, None]  # (layer, 1, d_model, d_model)
    if method == "auto":
        method = "own_position" if diagonal and len(token_pairs) > 1 else "exact"
    calls = capture_block_calls(model, ids)
    if method == "own_position" and not diagonal:
        raise LlmdynError("method='own_position' gives diagonal pairs (t, t) only; "
                          "use method='exact' for t1 != t2")
    if method == "exact":
        functions = [block_function(model, b, last_point) for b in range(model.n_layers)]
        jac = stack_jacobians(functions, calls, blocks, token_pairs, chunk_size=chunk_size,
                              progress=progress, desc=f"Jacobians {model.name}")
    else:
        out = []
        for b in _progress(blocks, desc=f"Jacobians {model.name}", enabled=progress):
            f = block_residual(model, b, calls[b], last_point)
            with own_position_attention(model):
                diag = _diagonal_blocks(f, calls[b].hidden.detach(), chunk_size)  # (tok, d, d)
            out.append(torch.stack([diag[t1] for t1, _ in token_pairs]))
        jac = torch.stack(out).detach()  # (layer, pair, d_model, d_model)
    if not torch.isfinite(jac).all():
        raise LlmdynError(f"non-finite values in the Jacobians of {model.name} for prompt "
                          f"{prompt[:40]!r}; the forward pass overflowed (try float64 or "
                          "a shorter prompt)")
    return jac
