"""The full-prompt route: block Jacobians J_{t1 t2} from every token's recorded block call."""

from __future__ import annotations

from typing import Literal

import torch

from llmdyn import LlmdynError
from llmdyn.jacobians.attention import own_position_attention
from llmdyn.jacobians.blocks import (
    BlockCall,
    block_function,
    block_residual,
    diagonal_blocks,
    progress_bar,
    stack_jacobians,
)
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint


def full_prompt_jacobians(model: LoadedModel, calls: list[BlockCall], blocks: list[int],
                          token_pairs: list[tuple[int, int]],
                          method: Literal["auto", "exact", "own_position"], *,
                          chunk_size: int | None, progress: bool,
                          last_point: LastPoint) -> torch.Tensor:
    """The Jacobians of ``blocks`` at ``token_pairs`` from the whole prompt's block calls.

    ``"auto"`` becomes ``"own_position"`` when all pairs are diagonal and several are asked
    for, else ``"exact"``.

    Args:
        model: a loaded model.
        calls: every block's call on the prompt (:func:`.blocks.capture_block_calls`).
        blocks: 0-based block indices (already checked).
        token_pairs: (t1, t2) token positions (already checked).
        method: as :func:`llmdyn.jacobians.block_jacobians`.
        chunk_size: how many products run at once (bounds memory).
        progress: progress bar over blocks.
        last_point: ``"final_norm"`` or ``"block_output"``.

    Returns:
        ``[layer, pair, d_model, d_model]`` (rows = output coordinates), detached.
    """
    diagonal = all(t1 == t2 for t1, t2 in token_pairs)
    # Own-position attention replaces the attention function a family looks up in
    # transformers' AttentionInterface; a family that computes attention inline (Falcon, GPT-J,
    # MPT) would ignore it and return the full-prompt J_tt, so it takes the exact route.
    interface = model.arch.attention_interface
    if method == "auto":
        method = "own_position" if diagonal and len(token_pairs) > 1 and interface else "exact"
    if method == "own_position" and not diagonal:
        raise LlmdynError("method='own_position' gives diagonal pairs (t, t) only; "
                          "use method='exact' for t1 != t2")
    if method == "own_position" and not interface:
        raise LlmdynError(f"method='own_position' needs attention through transformers' "
                          f"AttentionInterface, which {model.hf.config.model_type} does not "
                          "use; use method='exact' (or 'auto')")
    if method == "exact":
        functions = [block_function(model, b, last_point) for b in range(model.n_layers)]
        return stack_jacobians(functions, calls, blocks, token_pairs, chunk_size=chunk_size,
                               progress=progress, desc=f"Jacobians {model.name}")
    return _own_position_jacobians(model, calls, blocks, token_pairs, chunk_size, progress,
                                   last_point)


def _own_position_jacobians(model: LoadedModel, calls: list[BlockCall], blocks: list[int],
                            token_pairs: list[tuple[int, int]], chunk_size: int | None,
                            progress: bool, last_point: LastPoint) -> torch.Tensor:
    """Diagonal J_tt from d products per block (own-position attention): ``[layer, pair, d, d]``."""
    out = []
    for b in progress_bar(blocks, desc=f"Jacobians {model.name}", enabled=progress):
        f = block_residual(model, b, calls[b], last_point)
        with own_position_attention(model):
            x = calls[b].hidden.detach()  # [tok, d_model]
            diag = diagonal_blocks(f, x, chunk_size)  # [tok, d_model, d_model]
        out.append(torch.stack([diag[t1] for t1, _ in token_pairs]))
    return torch.stack(out).detach()  # [layer, pair, d_model, d_model]
