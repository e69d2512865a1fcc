"""Token trajectories X^0 … X^L and logit-lens distributions, traced with nnsight."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from llmdyn import LlmdynError
from llmdyn.models import LoadedModel


@dataclass(frozen=True)
class Trajectory:
    """Hidden states of one prompt at every block boundary.

    Attributes:
        prompt: the text that was traced.
        tokens: the token strings, ``[tok]``.
        input_ids: token ids, ``[tok]``.
        states: ``[layer+1, tok, d_model]``; ``states[b]`` is the input of block ``b`` (X^b) and
            ``states[L]`` the output of the last block, before the final norm.
    """

    prompt: str
    tokens: tuple[str, ...]
    input_ids: torch.Tensor
    states: torch.Tensor

    def __post_init__(self) -> None:
        """Check that the shapes agree with each other."""
        n_tok = len(self.tokens)
        if self.states.ndim != 3 or self.states.shape[1] != n_tok:
            raise LlmdynError(f"states must be [layer+1, tok={n_tok}, d_model], "
                              f"got {tuple(self.states.shape)}")

    def per_token(self) -> torch.Tensor:
        """The trajectories token by token: ``[tok, layer+1, d_model]``."""
        return self.states.transpose(0, 1)


def encode(model: LoadedModel, prompt: str) -> torch.Tensor:
    """Token ids of one prompt, ``[1, tok]``, tokenised as ``model.tokenizer(prompt)`` does.

    Raises:
        LlmdynError: the prompt is empty or longer than the model's context.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise LlmdynError(f"prompt must be a non-empty string, got {prompt!r}")
    ids = model.tokenizer(prompt, return_tensors="pt").input_ids
    if ids.shape[1] == 0:
        raise LlmdynError(f"prompt {prompt[:40]!r} tokenises to no tokens")
    if ids.shape[1] > model.n_ctx:
        raise LlmdynError(f"prompt has {ids.shape[1]} tokens but {model.name} accepts at most "
                          f"{model.n_ctx}; shorten it or choose fewer prompt tokens")
    return ids.to(model.device)


def _nn_blocks(model: LoadedModel):
    blocks = model.nn
    for part in model.arch.blocks.split("."):
        blocks = getattr(blocks, part)
    return blocks


def trajectory(model: LoadedModel, prompt: str) -> Trajectory:
    """Trace one prompt and keep every token's hidden state at every block boundary.

    Args:
        model: a loaded model.
        prompt: the text; tokenised as ``model.tokenizer(prompt, return_tensors="pt")``.

    Returns:
        The trajectory, with ``states`` of shape ``[layer+1, tok, d_model]``.

    Raises:
        LlmdynError: an empty or too long prompt, or a NaN or inf hidden state.
    """
    ids = encode(model, prompt)
    blocks = _nn_blocks(model)
    saved = []  # nnsight keeps only objects created outside the trace context
    with torch.no_grad(), model.nn.trace(ids, use_cache=False):
        saved.append(blocks[0].inputs.save())
        for block in blocks:  # in execution order, as nnsight requires
            saved.append(block.output.save())
    first_args, first_kwargs = saved[0]
    x0 = first_args[0] if first_args else first_kwargs["hidden_states"]
    outs = [out[0] if isinstance(out, tuple) else out for out in saved[1:]]
    states = torch.stack([x0[0]] + [out[0] for out in outs])  # (layer+1, tok, d_model)
    _check_finite(states, f"hidden states of {model.name} for prompt {prompt[:40]!r}")
    tokens = tuple(model.tokenizer.convert_ids_to_tokens(ids[0].tolist()))
    return Trajectory(prompt=prompt, tokens=tokens, input_ids=ids[0].cpu(),
                      states=states.detach().cpu())


def logit_lens(model: LoadedModel, states: torch.Tensor) -> torch.Tensor:
    """Next-token logits read from hidden states through the model's own final norm and head.

    ``ℓ^l = M · norm(x^l)`` (paper B §3.7), with the model's final logit soft-capping if it has
    one, so that the last layer reproduces the model's logits exactly.

    Args:
        model: the model the states came from.
        states: ``[..., d_model]`` hidden states (e.g. ``[layer+1, d_model]`` for one token).

    Returns:
        Logits ``[..., vocab]``.

    Raises:
        LlmdynError: `states` of the wrong width, or NaN or inf logits.
    """
    if states.shape[-1] != model.d_model:
        raise LlmdynError(f"states must end in d_model={model.d_model}, "
                          f"got {tuple(states.shape)}")
    with torch.no_grad():
        x = states.to(device=model.device, dtype=next(model.hf.parameters()).dtype)
        logits = model.head(model.final_norm(x))  # (..., vocab)
        cap = getattr(model.hf.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
    _check_finite(logits, f"logit-lens logits of {model.name}")
    return logits.cpu()


def _check_finite(x: torch.Tensor, what: str) -> None:
    """Raise LlmdynError if `x` holds NaN or inf (an overflowing or corrupt model)."""
    if not torch.isfinite(x).all():
        bad = int(x.numel() - torch.isfinite(x).sum())
        raise LlmdynError(f"non-finite values in the {what} ({bad} of {x.numel()} entries are "
                          "NaN or inf): a weight is non-finite or the forward pass overflowed; "
                          "check the model's weights, or try dtype=torch.float64")
