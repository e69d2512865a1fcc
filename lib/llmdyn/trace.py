"""Token trajectories X^0 … X^L and logit-lens distributions, traced with nnsight.

Two conventions where the papers can be read two ways (``book/methods.md``, "Conventions"):

- where a trajectory ends (``last_point``): ``"final_norm"`` (the papers', default) counts the
  model's final norm as part of the last block, so X^L = norm(block_L(X^{L-1})), which is
  Hugging Face's ``hidden_states[-1]``; ``"block_output"`` stops at the raw output of block L.
- how the logit lens reads layer l < L (``lens``): ``"paper"`` (paper B §3.7, default) applies
  the unembedding alone, P^l = softmax(M x^l); ``"normed"`` (the tuned-lens convention) applies
  the final norm first, P^l = softmax(M norm(x^l)). Both equal the model's output at l = L.
"""

from __future__ import annotations

import statistics
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from inspect import signature
from typing import Literal

import torch

from llmdyn import LlmdynError
from llmdyn.core.checks import all_finite
from llmdyn.models.loading import LoadedModel

LastPoint = Literal["final_norm", "block_output"]
LAST_POINTS: tuple[LastPoint, ...] = ("final_norm", "block_output")
Lens = Literal["paper", "normed"]
LENSES: tuple[Lens, ...] = ("paper", "normed")


def check_last_point(last_point: str) -> str:
    """Return `last_point` if it names a convention, else raise a clear LlmdynError."""
    if last_point not in LAST_POINTS:
        raise LlmdynError(f"last_point must be 'final_norm' (the papers': X^L after the final "
                          f"norm) or 'block_output' (X^L before it), got {last_point!r}")
    return last_point


def check_lens(lens: str) -> str:
    """Return `lens` if it names a logit lens, else raise a clear LlmdynError."""
    if lens not in LENSES:
        raise LlmdynError(f"lens must be 'paper' (softmax(M x^l), paper B §3.7) or 'normed' "
                          f"(softmax(M norm(x^l)), the tuned-lens convention), got {lens!r}")
    return lens


@dataclass(frozen=True)
class Trajectory:
    """Hidden states of one prompt at every block boundary.

    Attributes:
        prompt: the text that was traced.
        tokens: the token strings, ``[tok]``.
        input_ids: token ids, ``[tok]``.
        states: ``[layer+1, tok, d_model]``; ``states[b]`` is the input of block ``b`` (X^b) and
            ``states[L]`` the end point X^L under `last_point`.
        last_point: ``"final_norm"`` (X^L after the model's final norm, paper A eq. 7 and
            paper B §2) or ``"block_output"`` (the raw output of the last block).
    """

    prompt: str
    tokens: tuple[str, ...]
    input_ids: torch.Tensor
    states: torch.Tensor
    last_point: LastPoint = "final_norm"

    def __post_init__(self) -> None:
        """Check that the shapes agree with each other."""
        check_last_point(self.last_point)
        n_tok = len(self.tokens)
        if self.states.ndim != 3 or self.states.shape[1] != n_tok:
            raise LlmdynError(f"states must be [layer+1, tok={n_tok}, d_model], "
                              f"got {tuple(self.states.shape)}")

    def per_token(self) -> torch.Tensor:
        """The trajectories token by token: ``[tok, layer+1, d_model]``."""
        return self.states.transpose(0, 1)


def check_cut_long_prompts(cut_long_prompts: bool) -> bool:
    """Return `cut_long_prompts` if it is True or False, else raise a clear LlmdynError."""
    if not isinstance(cut_long_prompts, bool):
        raise LlmdynError(f"cut_long_prompts must be True or False, got {cut_long_prompts!r}")
    return cut_long_prompts


MAX_PROMPT_CHARS = 1_000_000  # no model here reads a prompt this long: a mistake, refused
# Tokens beyond the context read before cutting, so that the boundary of a tokenised tail
# (where a token may be split) lies far before the tokens kept.
_TAIL_SLACK = 64
_LONGEST: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def check_prompt_size(prompt: str) -> str:
    """``prompt`` if it is a non-empty string of at most `MAX_PROMPT_CHARS` characters.

    Raises:
        LlmdynError: naming its length and the bound.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise LlmdynError(f"prompt must be a non-empty string, got {prompt!r}")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise LlmdynError(f"prompt has {len(prompt):,} characters, more than the "
                          f"{MAX_PROMPT_CHARS:,} llmdyn reads; a model's context holds a few "
                          "thousand tokens: give a shorter prompt (its end, for a question)")
    return prompt


def _longest_token(tokenizer) -> int:
    """The most characters one token of ``tokenizer``'s vocabulary can stand for (at least 1).

    Its token strings are an upper bound: a byte-level token's string has one character per
    byte, and a byte-fallback token (``<0xE2>``) stands for less than its string.
    """
    try:
        return _LONGEST[tokenizer]
    except (KeyError, TypeError):
        pass
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    longest = max([len(t) for t in tokens if t] or [1])
    try:
        _LONGEST[tokenizer] = longest
    except TypeError:  # a tokenizer that takes no weak reference is measured each time
        pass
    return longest


def _token_ids(model: LoadedModel, prompt: str) -> tuple[torch.Tensor, bool]:
    """``(ids [1, tok], whole)``: the prompt's ids, or only its end's when it is far too long.

    A prompt whose characters hold more than ``n_ctx + _TAIL_SLACK`` tokens for sure (each
    token stands for at most `_longest_token` characters) is tokenised from its last that many
    characters only (``whole`` False): a 1 MB prompt costs no more than one at the context's
    length, and its last ``n_ctx`` tokens are those of the whole prompt.
    """
    check_prompt_size(prompt)
    tail = (model.n_ctx + _TAIL_SLACK) * _longest_token(model.tokenizer)
    if len(prompt) > tail:
        ids = model.tokenizer(prompt[-tail:], return_tensors="pt").input_ids
        if ids.shape[1] > model.n_ctx + _TAIL_SLACK // 2:  # else a tokenizer that drops text
            return ids, False
    return model.tokenizer(prompt, return_tensors="pt").input_ids, True


def _prefix_ids(model: LoadedModel) -> list[int]:
    """The ids the tokenizer puts before any text (e.g. Llama's BOS); kept when cutting."""
    return model.tokenizer("").input_ids


def _too_long(model: LoadedModel, prompt: str, n_tok: int, whole: bool = True) -> LlmdynError:
    # max_prompt_chars is not advised: it cuts some chapters' question prompts, not every
    # prompt (example_prompt), and 01, 02, 06 do not have it
    has = (f"{n_tok} tokens" if whole else
           f"{len(prompt):,} characters, far more than {model.n_ctx} tokens")
    return LlmdynError(
        f"prompt has {has} but {model.name} accepts at most {model.n_ctx}. In a "
        f"chapter, set cut_long_prompts = True (keeps each prompt's last {model.n_ctx} tokens) "
        "or give shorter prompts; in code, shorten the prompt or pass cut_long_prompts=True")


def encode(model: LoadedModel, prompt: str, *, cut_long_prompts: bool = False) -> torch.Tensor:
    """Token ids of one prompt, ``[1, tok]``, tokenised as ``model.tokenizer(prompt)`` does.

    A prompt longer than the model's context raises, or, with ``cut_long_prompts=True``,
    keeps the tokenizer's leading special ids and the last ``n_ctx`` tokens in all (the
    question of a SQuAD or leaderboard prompt is at its end). A chapter passes its
    ``cut_long_prompts`` parameter; the default is the error, so no caller gets a cut prompt
    without asking for it.

    The setting needs no entry in a cache key: a prompt that fits gives the same ids either
    way, and one that does not fit has ids only when cut. A cached function checks its prompts
    with :func:`check_prompts_fit` before reading the cache, so a call that refuses long
    prompts never reads a cut prompt's result.

    Raises:
        LlmdynError: the prompt is empty, or longer than the model's context (unless cut).
    """
    check_cut_long_prompts(cut_long_prompts)
    ids, whole = _token_ids(model, prompt)
    if ids.shape[1] == 0:
        raise LlmdynError(f"prompt {prompt[:40]!r} tokenises to no tokens")
    if ids.shape[1] > model.n_ctx:
        if not cut_long_prompts:
            raise _too_long(model, prompt, ids.shape[1], whole)
        prefix = _prefix_ids(model)
        if not whole:  # the tail's own leading ids are not the prompt's: put the prefix back
            ids = torch.cat([torch.tensor([prefix], dtype=ids.dtype), ids], 1)
        n_prefix = len(prefix) if ids[0, : len(prefix)].tolist() == prefix else 0
        ids = torch.cat([ids[:, :n_prefix], ids[:, ids.shape[1] - model.n_ctx + n_prefix:]], 1)
    return ids.to(model.device)


def check_prompts_fit(model: LoadedModel, prompts: Sequence[str], *,
                      cut_long_prompts: bool) -> list[tuple[str, int]]:
    """The prompts longer than the model's context, with their token counts.

    Raises:
        LlmdynError: a prompt is too long and ``cut_long_prompts`` is False; the message names
            the parameters that fix it.
    """
    check_cut_long_prompts(cut_long_prompts)
    counts = [(p, *_count(model, p)) for p in prompts]
    over = [(p, n) for p, n, _ in counts if n > model.n_ctx]
    if over and not cut_long_prompts:
        p, n, whole = max(counts, key=lambda pnw: pnw[1])
        raise _too_long(model, p, n, whole)
    return over


def _count(model: LoadedModel, prompt: str) -> tuple[int, bool]:
    """``(tokens, whole)``: the prompt's token count, or its tail's where `_token_ids` cut it."""
    ids, whole = _token_ids(model, prompt)
    return ids.shape[1], whole


def context_note(model: LoadedModel, prompts: list[str], *, cut_long_prompts: bool = False
                 ) -> str:
    """One line counting the prompts longer than the model's context, and by how much.

    Raises:
        LlmdynError: a prompt is too long and ``cut_long_prompts`` is False; the message names
            the parameters that fix it.
    """
    over = check_prompts_fit(model, prompts, cut_long_prompts=cut_long_prompts)
    if not over:
        which = "the prompt fits" if len(prompts) == 1 else f"all {len(prompts)} prompts fit"
        return f"{model.name}: {which} in its context of {model.n_ctx} tokens"
    lost = sorted(n - model.n_ctx for _, n in over)
    # a prompt tokenised from its end only (`_token_ids`) loses more than its count says
    more = ("; more for a prompt far longer than the context"
            if any(not _count(model, p)[1] for p, _ in over) else "")
    return (f"{model.name}: {len(over)} of {len(prompts)} prompts are longer than its context of "
            f"{model.n_ctx} tokens and keep their last {model.n_ctx} (they lose {lost[0]}–"
            f"{lost[-1]} tokens, median {statistics.median(lost):g}{more})")


def one_logit(model: LoadedModel) -> dict[str, int]:
    """``logits_to_keep=1`` where the model's forward takes it (the head on one token only).

    A trace that reads hidden states needs no logits; on Gemma-3-270M the 262k × 640 head is
    most of a forward pass's work. The blocks see the same inputs, so the states are the same
    bits with or without it.
    """
    keep = "logits_to_keep" in signature(model.hf.forward).parameters
    return {"logits_to_keep": 1} if keep else {}


def _nn_blocks(model: LoadedModel):
    blocks = model.nn
    for part in model.arch.blocks.split("."):
        blocks = getattr(blocks, part)
    return blocks


def trajectory(model: LoadedModel, prompt: str, *, last_point: LastPoint = "final_norm",
               cut_long_prompts: bool = False) -> Trajectory:
    """Trace one prompt and keep every token's hidden state at every block boundary.

    Paper A eq. 7 and paper B §2 count the final norm as part of the last block, so by default
    ``states[L] = norm(block_L(X^{L-1}))``, equal to Hugging Face's ``hidden_states[-1]``.

    Args:
        model: a loaded model.
        prompt: the text; tokenised as ``model.tokenizer(prompt, return_tensors="pt")``.
        last_point: ``"final_norm"`` (the papers') or ``"block_output"`` (X^L before the norm).
        cut_long_prompts: keep the end of a prompt longer than the context (:func:`encode`).

    Returns:
        The trajectory, with ``states`` of shape ``[layer+1, tok, d_model]``.

    Raises:
        LlmdynError: an empty or too long prompt, an unknown `last_point`, or a NaN or inf
            hidden state.
    """
    check_last_point(last_point)
    ids = encode(model, prompt, cut_long_prompts=cut_long_prompts)
    blocks = _nn_blocks(model)
    saved = []  # nnsight keeps only objects created outside the trace context
    with torch.no_grad(), model.nn.trace(ids, use_cache=False, **one_logit(model)):
        saved.append(blocks[0].inputs.save())
        for block in blocks:  # in execution order, as nnsight requires
            saved.append(block.output.save())
    first_args, first_kwargs = saved[0]
    x0 = first_args[0] if first_args else first_kwargs["hidden_states"]
    outs = [out[0] if isinstance(out, tuple) else out for out in saved[1:]]
    states = torch.stack([x0[0]] + [out[0] for out in outs])  # [layer+1, tok, d_model]
    if last_point == "final_norm":
        states = with_final_norm(model, states)
    _check_finite(states, f"hidden states of {model.name} for prompt {prompt[:40]!r}")
    tokens = tuple(model.tokenizer.convert_ids_to_tokens(ids[0].tolist()))
    return Trajectory(prompt=prompt, tokens=tokens, input_ids=ids[0].cpu(),
                      states=states.detach().cpu(), last_point=last_point)


def _dtype(model: LoadedModel) -> torch.dtype:
    return next(model.hf.parameters()).dtype


def final_norm(model: LoadedModel, x: torch.Tensor) -> torch.Tensor:
    """The model's final norm applied to ``[..., d_model]`` states (per position), on x's device.

    Computed in the model's dtype on its device, returned in x's dtype.
    """
    with torch.no_grad():
        out = model.final_norm(x.to(model.device, _dtype(model)))
    return out.to(device=x.device, dtype=x.dtype)


def with_final_norm(model: LoadedModel, states: torch.Tensor) -> torch.Tensor:
    """Block-output states ``[layer+1, ..., d_model]`` with the last point put through the norm.

    Turns the ``"block_output"`` convention into the papers' ``"final_norm"`` one.
    """
    return torch.cat([states[:-1], final_norm(model, states[-1])[None]])  # [layer+1, ..., d_model]


def unembed(model: LoadedModel, x: torch.Tensor, *, normed: bool) -> torch.Tensor:
    """Logits ``M x`` (``normed=False``) or ``M norm(x)`` (``normed=True``) of ``[..., d_model]``.

    The model's read-out transform (:meth:`LoadedModel.read_out`: a projection before the
    head, a logit scale or divisor, soft-capping) is applied in both cases: it is part of the
    model's read-out, and keeping it makes the last layer reproduce the model's logits.

    Returns:
        Logits ``[..., vocab]`` on the CPU.
    """
    if x.shape[-1] != model.d_model:
        raise LlmdynError(f"states must end in d_model={model.d_model}, got {tuple(x.shape)}")
    with torch.no_grad():
        x = x.to(device=model.device, dtype=_dtype(model))
        logits = model.read_out(model.final_norm(x) if normed else x)  # [..., vocab]
    _check_finite(logits, f"logit-lens logits of {model.name}")
    return logits.cpu()


def logit_lens(model: LoadedModel, states: torch.Tensor, *, lens: Lens = "paper",
               last_point: LastPoint = "final_norm") -> torch.Tensor:
    """Next-token logits read from every layer of a trajectory (paper B §3.7).

    ``ℓ^l = M x^l`` for l < L with ``lens="paper"`` (paper B's definition: no final norm, so
    the growing norm of x^l itself sharpens P^l, paper B Proposition 1), or
    ``ℓ^l = M norm(x^l)`` with ``lens="normed"`` (the tuned-lens convention). Row L is always
    the model's own output ``M norm(x^L_block)``, whichever convention `states` ends with.

    Args:
        model: the model the states came from.
        states: ``[layer+1, ..., d_model]``, layer axis first (e.g. ``[layer+1, d_model]`` for
            one token, or ``Trajectory.states``), ending in X^L under `last_point`.
        lens: ``"paper"`` or ``"normed"``.
        last_point: how `states` ends: ``"final_norm"`` (X^L already normed, the default of
            :func:`trajectory`) or ``"block_output"``.

    Returns:
        Logits ``[layer+1, ..., vocab]``.

    Raises:
        LlmdynError: `states` of the wrong width or without a layer axis, an unknown `lens` or
            `last_point`, or NaN or inf logits.
    """
    check_lens(lens)
    check_last_point(last_point)
    if states.ndim < 2:
        raise LlmdynError(f"states must be [layer+1, ..., d_model] with a layer axis first, "
                          f"got {tuple(states.shape)}")
    inner = unembed(model, states[:-1], normed=lens == "normed")  # [layer, ..., vocab]
    last = unembed(model, states[-1:], normed=last_point == "block_output")  # [1, ..., vocab]
    return torch.cat([inner, last])  # [layer+1, ..., vocab]


def _check_finite(x: torch.Tensor, what: str) -> None:
    """Raise LlmdynError if `x` holds NaN or inf (an overflowing or corrupt model)."""
    if not all_finite(x):
        bad = int(x.numel() - torch.isfinite(x).sum())
        raise LlmdynError(f"non-finite values in the {what} ({bad} of {x.numel()} entries are "
                          "NaN or inf): a weight is non-finite or the forward pass overflowed; "
                          "check the model's weights, or try dtype=torch.float64")
