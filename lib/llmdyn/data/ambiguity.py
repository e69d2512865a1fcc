"""This book's own ambiguous and clear prompts: enough of each to compare the two groups.

Paper B (§4.4, Figs 10–11, App. B) contrasts prompts that cannot be answered ("What is my
favourite colour?") with ones that have one answer ("What is the capital of France?"), but
names only three of the first kind and two of the second (`NAMED_PROMPTS`). A comparison over
3 against 2 prompts has no interval the coverage table allows, so the book adds prompts of its
own, written for this book (they are not the paper's), in the paper's format: a question, then
"The answer is". Every prompt of both groups ends in the same words, so the two groups differ
in what can be known, not in the token the lens reads.

- ambiguous: questions about the unnamed speaker ("my", "I") that any of many words answers;
- clear: general-knowledge questions with one answer, whose next word after "The answer is" is
  that answer (no numbers, which have two spellings, and no answer that starts with "the").
"""

from __future__ import annotations

from llmdyn.data.named import Prompt

__all__ = ["AMBIGUOUS_PROMPTS", "CLEAR_PROMPTS"]

_SOURCE = (("source", "this book's own prompt, not paper B's"),)
_ASK = "The answer is"


def _prompts(task: str, questions: dict[str, tuple[str, str | None]]) -> tuple[Prompt, ...]:
    return tuple(Prompt(f"{task}/{key}", f"{question} {_ASK}", task, answer, _SOURCE)
                 for key, (question, answer) in questions.items())


AMBIGUOUS_PROMPTS: tuple[Prompt, ...] = _prompts("book_ambiguous", {
    "food": ("What is my favourite food?", None),
    "pet": ("What was the name of my first pet?", None),
    "city": ("Which city do I live in?", None),
    "animal": ("What is my favourite animal?", None),
    "sister": ("What is my sister's name?", None),
    "sport": ("Which sport do I play at the weekend?", None),
    "breakfast": ("What did I eat for breakfast today?", None),
    "job": ("What is my job?", None),
    "number": ("What number am I thinking of?", None),
    "holiday": ("Which country did I visit last summer?", None),
    "book": ("What is my favourite book?", None),
    "instrument": ("What instrument do I play?", None),
    "friend": ("What is the name of my best friend?", None),
})
"""13 questions with many plausible answers (the paper's three: ``NAMED_PROMPTS``)."""

CLEAR_PROMPTS: tuple[Prompt, ...] = _prompts("book_clear", {
    "italy": ("What is the capital of Italy?", "Rome"),
    "japan": ("What is the capital of Japan?", "Tokyo"),
    "germany": ("What is the capital of Germany?", "Berlin"),
    "gold": ("What is the chemical symbol for gold?", "Au"),
    "jupiter": ("Which is the largest planet?", "Jupiter"),
    "earth": ("Which planet do we live on?", "Earth"),
    "cold": ("What is the opposite of hot?", "cold"),
    "grass": ("What colour is grass?", "green"),
    "german": ("What language is spoken in Germany?", "German"),
    "president": ("Who was the first President of the USA?", "George Washington"),
    "eiffel": ("In which country is the Eiffel Tower?", "France"),
    "egypt": ("On which continent is Egypt?", "Africa"),
    "shakespeare": ("Who wrote Romeo and Juliet?", "William Shakespeare"),
    "february": ("Which month comes after January?", "February"),
})
"""14 questions with one answer each (the paper's two: ``NAMED_PROMPTS``)."""
