"""The Prompt record, paper B's named prompts, and keeping the end of a long prompt."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from llmdyn import LlmdynError
from llmdyn.core.paths import data_file

__all__ = ["NAMED_PROMPTS", "Prompt", "shorten_prompt"]


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One prompt with a stable identity.

    Attributes:
        id: Stable id "<task>/<native id>", e.g. "gsm8k/123" or "mmlu/anatomy/4".
        text: The string given to the model.
        task: Suite name ("gsm8k", "squad", "named", ...).
        answer: Gold answer text, or None where there is none (ambiguous prompts).
        meta: Extra facts as hashable (key, value) pairs; read one with `Prompt.get`.
    """

    id: str
    text: str
    task: str
    answer: str | None = None
    meta: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        """Return the meta value stored under `key`, or `default`."""
        return dict(self.meta).get(key, default)


# The UK paragraph is in our own words (data/uk_context.txt): a neutral description that, like the
# first paragraph of the Wikipedia article paper B prepends (Fig. 8), does not name the capital.
# The packaged SQuAD v1.1 dev sample has no United Kingdom article, so no SQuAD paragraph fits.
_UK_CONTEXT_FILE = data_file("uk_context.txt")


def _named_prompts() -> dict[str, Prompt]:
    if not _UK_CONTEXT_FILE.is_file():
        raise LlmdynError(
            f"the UK context file is missing at {_UK_CONTEXT_FILE}; use llmdyn from a checkout "
            "of the repository (`pip install -e .`) so that data/ is present"
        )
    uk = " ".join(_UK_CONTEXT_FILE.read_text(encoding="utf-8").split())
    country = "What is the capital of this country? The capital is"
    texts = {  # paper B §3.2 and App. B.1; answers only where the prompt has one
        "france": ("What is the capital of France? The capital is", "Paris"),
        "usa": ("United States of", "America"),
        "colour": ("What is my favourite colour? The answer is", None),
        "birthday": ("Which month is my birthday in? The answer is", None),
        "born": ("What month was I born in? The answer is", None),
        "country": (country, None),
        "country_context": (f"{uk} {country}", "London"),
    }
    own = (("context_source", "own words: data/uk_context.txt"),)
    return {
        k: Prompt(f"named/{k}", t, "named", a, own if k == "country_context" else ())
        for k, (t, a) in texts.items()
    }


NAMED_PROMPTS: Mapping[str, Prompt] = MappingProxyType(_named_prompts())


def shorten_prompt(prompt: str | Prompt, max_chars: int | None) -> str | Prompt:
    """Keep the end of a long prompt: at most `max_chars` characters, from a sentence start.

    Question prompts end with the question and "The answer is:", so the tail keeps them whole
    and drops the beginning of the context. The cut moves forward to the first sentence start
    (after ". ", "! " or "? ") in the first half of the kept window if there is one, else to
    the next word. Used to fit long prompts into small test models or a compute budget.

    Args:
        prompt: a text or :class:`~llmdyn.data.Prompt`.
        max_chars: the longest text kept; None keeps the prompt unchanged.

    Returns:
        The same kind as `prompt`; a shortened Prompt gets the id suffix ``"+tail<max_chars>"``
        and meta ``("shortened_from", <original length>)``.
    """
    text = prompt.text if isinstance(prompt, Prompt) else prompt
    if not isinstance(text, str) or not text.strip():
        raise LlmdynError(f"prompt must be a non-empty str or llmdyn.data.Prompt, got "
                          f"{type(prompt).__name__} {prompt!r:.60}")
    if max_chars is None or len(text) <= max_chars:
        return prompt
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 10:
        raise LlmdynError(f"max_chars must be None or an int >= 10, got {max_chars!r}")
    window = text[len(text) - max_chars:]
    starts = [i + 2 for i in range(len(window) // 2) if window[i:i + 2] in (". ", "! ", "? ")]
    if starts:
        tail = window[starts[0]:]
    else:
        tail = window.split(" ", 1)[-1] if " " in window[1:] else window
    tail = tail.strip()
    if not isinstance(prompt, Prompt):
        return tail
    meta = (*prompt.meta, ("shortened_from", len(text)))
    return Prompt(f"{prompt.id}+tail{max_chars}", tail, prompt.task, prompt.answer, meta)
