"""Prompts as independent units for a reading of layer 0, which sees the last token alone."""

from __future__ import annotations

from collections.abc import Sequence

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.data.named import Prompt
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import encode

__all__ = ["distinct_last_tokens"]


def distinct_last_tokens(model: LoadedModel, prompts: Sequence[str | Prompt], n: int, *,
                         cut_long_prompts: bool = False) -> list[str | Prompt]:
    """The first ``n`` prompts, in order, whose last tokens differ under ``model``'s tokenizer.

    A readout of layer 0 sees only the last token (x^0 is its embedding), so prompts that end
    in one token give one value between them: they are one unit, not several. This keeps one
    prompt per last token.

    Args:
        model: a loaded model (its tokenizer decides the last token).
        prompts: candidates, e.g. :func:`llmdyn.data.question_stems`.
        n: how many to keep.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Raises:
        LlmdynError: fewer than ``n`` candidates end in distinct tokens.
    """
    chosen, seen = [], set()
    for prompt, text in zip(prompts, checks.prompt_texts(prompts), strict=True):
        last = int(encode(model, text, cut_long_prompts=cut_long_prompts)[0, -1])
        if last not in seen:
            seen.add(last)
            chosen.append(prompt)
            if len(chosen) == n:
                return chosen
    raise LlmdynError(f"only {len(chosen)} of the {len(prompts)} prompts end in distinct tokens "
                      f"for {model.name}; ask for n <= {len(chosen)} or give more prompts")
