"""A grade as a coloured chip: the one renderer of a grade in the book's HTML tables and sentences.

A chip is a ``<span class="chip chip-<grade>">`` whose text is the grade itself, so a table
read as text (a test, a screen reader, a copy into a spreadsheet) still reads "holds". Its
colour comes from the book's stylesheet (``book/static/llmdyn.css``, served from ``_static``).
A *modifier* qualifies the grade without changing it: "stand-in" marks a verdict measured on a
stand-in for the paper's kind of model or data (`llmdyn.claims.claim.Claim.stand_in`); the chip
then reads "holds · stand-in" and is drawn hatched and dashed. A new modifier is one entry of
`MODIFIERS`.

Example:
    >>> chip("holds")
    '<span class="chip chip-holds" title="holds">holds</span>'
    >>> chip("does not hold", modifiers=("stand-in",))  # doctest: +NORMALIZE_WHITESPACE
    '<span class="chip chip-does-not-hold chip-stand-in"
    title="does not hold, measured on a stand-in">does not hold · stand-in</span>'
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from llmdyn import LlmdynError
from llmdyn.claims.claim import GRADES, slug

# modifier -> (the words beside the grade in the chip, what it means in its tooltip and legend)
MODIFIERS: dict[str, tuple[str, str]] = {
    "stand-in": ("stand-in", "measured on a stand-in, not on the paper's kind of model or data"),
    "fragile": ("fragile", "flipped by a choice a referee would vary: the split, the lens, "
                           "layer L in or out, or a threshold the book chose"),
}
MEANING = {  # the legend's words for each grade
    "holds": "the whole 95 % interval lies on the paper's side of the rule",
    "inconclusive": "the interval straddles the rule's threshold",
    "does not hold": "the whole interval lies on the other side",
    "no verdict": "an estimate without a trustworthy interval: described, not judged",
    "not testable offline": "needs models or data this machine cannot load",
    "not run": "not measured in this build",
    "for comparison": "shown beside the paper's number, with no rule",
}


def css_name(word: str) -> str:
    """A grade or modifier as a CSS class suffix: "does not hold" -> "does-not-hold"."""
    return slug(word).replace("_", "-")


def chip(grade: str, *, modifiers: Sequence[str] = (), label: str | None = None) -> str:
    """The grade as an HTML chip.

    Args:
        grade: one of `llmdyn.claims.claim.GRADES`.
        modifiers: names from `MODIFIERS` (e.g. ``("stand-in",)``), shown after the grade.
        label: text in place of the grade (e.g. "3 holds"); the colour still follows ``grade``.

    Raises:
        LlmdynError: an unknown grade or modifier.
    """
    if grade not in GRADES:
        raise LlmdynError(f"chip: grade must be one of {GRADES}, got {grade!r}")
    unknown = [m for m in modifiers if m not in MODIFIERS]
    if unknown:
        raise LlmdynError(f"chip: modifiers must be among {sorted(MODIFIERS)}, got {unknown}")
    classes = " ".join(["chip", f"chip-{css_name(grade)}",
                        *(f"chip-{css_name(m)}" for m in modifiers)])
    title = ", ".join([grade, *(MODIFIERS[m][1].split(",")[0] for m in modifiers)])
    text = " · ".join([label or grade, *(MODIFIERS[m][0] for m in modifiers)])
    return (f'<span class="{classes}" title="{html.escape(title)}">'
            f"{html.escape(text)}</span>")


def record_chip(grade: str, stand_in: str = "", *, fragile: bool = False,
                label: str | None = None) -> str:
    """The chip of one claim record: its grade, marked as a stand-in and as fragile where it is."""
    modifiers = (("stand-in",) if stand_in else ()) + (("fragile",) if fragile else ())
    return chip(grade, modifiers=modifiers, label=label)


def legend(grades: Sequence[str] = GRADES, *, stand_in: bool = True) -> str:
    """One line of HTML: each grade's chip and what it means, then the modifiers' marks."""
    items = [f"{chip(g)} {html.escape(MEANING[g])}" for g in grades]
    if stand_in:
        items += [f"{chip('holds', modifiers=(name,))} {html.escape(meaning)}"
                  for name, (_, meaning) in MODIFIERS.items()]
    return '<p class="chip-legend">' + " &#160;·&#160; ".join(items) + "</p>"


def legend_text(grades: Sequence[str] = GRADES, *, stand_in: bool = True) -> str:
    """The legend as Markdown, for builders that drop raw HTML (the PDF)."""
    items = [f"**{g}**: {MEANING[g]}" for g in grades]
    if stand_in:
        items += [f"**· {words}**: {meaning}" for words, meaning in MODIFIERS.values()]
    return "; ".join(items) + "."
