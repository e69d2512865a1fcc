"""The model run on perturbed input embeddings: the noise, and the last token's states."""

from __future__ import annotations

from typing import Literal

import torch

from llmdyn import LlmdynError
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, one_logit, with_final_norm

NoiseTokens = Literal["all", "last"]


def relative_noise(x0: torch.Tensor, level: float, n_draws: int, generator: torch.Generator,
                   tokens: NoiseTokens = "all") -> torch.Tensor:
    """Gaussian directions scaled to ``level`` × each token's embedding norm.

    Args:
        x0: input embeddings X^0, ``[tok, d_model]``.
        level: relative size ‖δ_t‖ / ‖x_t^0‖.
        n_draws: independent draws.
        generator: torch generator (seeded by the caller).
        tokens: perturb every token (``"all"``) or only the last one (``"last"``).

    Returns:
        ``[draw, tok, d_model]``.
    """
    if level < 0:
        raise LlmdynError(f"noise level must be >= 0, got {level}")
    if tokens not in ("all", "last"):
        raise LlmdynError(f"tokens must be 'all' or 'last', got {tokens!r}")
    g = torch.randn((n_draws, *x0.shape), generator=generator, dtype=torch.float64)
    g = g / g.norm(dim=-1, keepdim=True)  # [draw, tok, d_model] unit directions
    noise = level * x0.norm(dim=-1, keepdim=True).double() * g
    if tokens == "last":
        noise[:, :-1] = 0
    return noise.to(x0.dtype)


def perturbed_last_states(model: LoadedModel, input_ids: torch.Tensor,
                          noise: torch.Tensor | None = None, *,
                          last_point: LastPoint = "final_norm"
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the model with X^0 + noise and keep the last token's state at every block boundary.

    The noise is added to the input of the first block (the embeddings as the blocks see them,
    after any embedding scale or position embedding), through a forward pre-hook.

    Args:
        model: a loaded model.
        input_ids: ``[1, tok]``.
        noise: ``[draw, tok, d_model]`` (None: one clean run).
        last_point: ``"final_norm"`` (the papers': x^L after the final norm) or
            ``"block_output"``.

    Returns:
        The clean X^0 ``[tok, d_model]`` and the last token's states ``[draw, layer+1, d_model]``,
        on the CPU whatever the model's device (the noise may be on either).
    """
    n_draws = 1 if noise is None else noise.shape[0]
    x0: list[torch.Tensor] = []
    states: list[torch.Tensor] = []

    def add_noise(_module, args, kwargs):
        hidden = args[0]  # [draw, tok, d_model]
        x0.append(hidden[0].detach().clone())
        if noise is not None:
            hidden = hidden + noise.to(hidden.device, hidden.dtype)
        states.append(hidden[:, -1].detach())
        return (hidden, *args[1:]), kwargs

    def keep(_module, _args, output):
        out = output[0] if isinstance(output, tuple) else output
        states.append(out[:, -1].detach())  # [draw, d_model]

    blocks = model.blocks
    handles = [blocks[0].register_forward_pre_hook(add_noise, with_kwargs=True)]
    handles += [b.register_forward_hook(keep) for b in blocks]
    try:
        with torch.no_grad():
            model.hf(input_ids.expand(n_draws, -1), use_cache=False, **one_logit(model))
    finally:
        for handle in handles:
            handle.remove()
    out = at_last_point(model, torch.stack(states, dim=1),  # [draw, layer+1, d_model]
              check_last_point(last_point))
    # on the host, where the check's float64 numpy arithmetic runs (a no-op on the CPU)
    return x0[0].cpu(), out.cpu()  # [tok, d_model], [draw, layer+1, d_model]


def at_last_point(model: LoadedModel, states: torch.Tensor, last_point: LastPoint) -> torch.Tensor:
    """Block-output states ``[draw, layer+1, d_model]`` under ``last_point``'s convention."""
    if last_point == "block_output":
        return states
    return with_final_norm(model, states.transpose(0, 1)).transpose(0, 1)
