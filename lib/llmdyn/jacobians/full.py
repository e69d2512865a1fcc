"""Exact block Jacobians J^l_{t1 t2} = ∂ f^l(X)_{t2} / ∂ x_{t1}: the entry point picks the route."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.jacobians.blocks import Pairs, capture_block_calls, resolve_layers, resolve_pairs
from llmdyn.jacobians.full_prompt import full_prompt_jacobians
from llmdyn.jacobians.last_token import last_token_jacobians
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, encode


def _last_token_route(model: LoadedModel, prompt: str, blocks: list[int],
                      chunk_size: int | None, progress: bool, last_point: LastPoint,
                      cut_long_prompts: bool) -> torch.Tensor | None:
    """J_nn from one decoding step (:mod:`.last_token`), ``[layer, d_model, d_model]``.

    None where the model's cache cannot be recorded; then the full-prompt route runs.
    """
    try:
        return last_token_jacobians(model, prompt, blocks, chunk_size=chunk_size,
                                    progress=progress, last_point=last_point,
                                    cut_long_prompts=cut_long_prompts)  # [layer, d_model, d_model]
    except LlmdynError as err:
        if "could not record" not in str(err):
            raise
        return None


def block_jacobians(model: LoadedModel, prompt: str, layers: Sequence[int] | None = None,
                    pairs: Pairs = "diagonal", *,
                    method: Literal["auto", "exact", "own_position"] = "auto",
                    chunk_size: int | None = 2048, progress: bool = True,
                    last_point: LastPoint = "final_norm",
                    cut_long_prompts: bool = False) -> torch.Tensor:
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
        pairs: ``"diagonal"`` (every t with itself), ``"last"`` (the last token n with itself)
            or a list of (t1, t2); negative token indices count from the end.
        method: ``"exact"`` differentiates each requested output position of the full block
            (d products per output token); ``"own_position"`` gets every diagonal J_tt from d
            products by letting attention see the other positions as constants; ``"auto"`` uses
            the latter when all pairs are diagonal and several are requested, and for the last
            token alone (``"last"``, or its pair alone) re-runs each block on that token against
            the prompt's frozen key/value prefix (:mod:`.last_token`: one token's cost).
        chunk_size: how many reverse products run at once (bounds memory).
        progress: show a progress bar over blocks (when there are four or more).
        last_point: ``"final_norm"`` (the papers') or ``"block_output"`` (the last block
            without the final norm); only the last block's Jacobian depends on it.
        cut_long_prompts: cut a prompt longer than the context to its end (False: it raises).

    Returns:
        ``[len(layers), len(pairs), d_model, d_model]``, float32 (or the model's dtype).

    Raises:
        LlmdynError: a layer or token index out of range, an empty or too long prompt,
            an unknown method, or non-finite values in a Jacobian.
    """
    layers = checks.layer_indices(layers, model.n_layers)
    checks.positive_int(chunk_size, "chunk_size", none_means="all products at once")
    method = checks.choice(method, ("auto", "exact", "own_position"), "method")
    check_last_point(last_point)
    ids = encode(model, prompt, cut_long_prompts=cut_long_prompts)
    blocks = resolve_layers(model, layers)
    token_pairs = resolve_pairs(pairs, ids.shape[1])
    n = ids.shape[1] - 1
    if method == "auto" and token_pairs == [(n, n)]:
        jac = _last_token_route(model, prompt, blocks, chunk_size, progress, last_point,
                                cut_long_prompts)
        if jac is not None:
            return jac[:, None]  # [layer, 1, d_model, d_model]
    jac = full_prompt_jacobians(model, capture_block_calls(model, ids), blocks, token_pairs,
                                method, chunk_size=chunk_size, progress=progress,
                                last_point=last_point)
    if checks.nonfinite_rows(jac).any():
        raise LlmdynError(f"non-finite values in the Jacobians of {model.name} for prompt "
                          f"{prompt[:40]!r}; the forward pass overflowed (try float64 or "
                          "a shorter prompt)")
    return jac
