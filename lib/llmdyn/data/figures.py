"""The book's figures as data: which paper figure each one regenerates, and what cannot be.

Two committed tables hold the facts; nothing about a figure is typed into a notebook or a page:

- ``data/book_figures.csv``: one row per figure a chapter draws (``name``, ``chapter``,
  ``paper`` as ``"A 3; A 20"``, ``kind``, ``caption`` in our own words). ``kind`` is one of
  ``KINDS``: a figure *regenerates* the paper's figure (the same measurement drawn the same way),
  is a *stand-in* for it (drawn on other models or data because the paper's do not load
  offline), or is a *diagnostic* of ours beside it (or of no paper figure at all).
- ``data/paper_figures.csv``: one row per figure of paper A and paper B (``paper``, ``figure``,
  ``subject``, ``paper_caption``, ``status``, ``reason``). ``paper_caption`` paraphrases the
  paper's own caption in one line (or, where the paper gives none, what its text says of the
  figure). ``status`` is one of ``STATUSES``; every status but
  ``regenerated`` gives its reason, and the gallery prints it.

A chapter draws a registered figure with one call, ``plots.show("coupling-grid")`` in place of
``plt.show()`` (see :mod:`llmdyn.plots.output`); when the chapter's run has finished,
:func:`llmdyn.book.figure_files.publish_chapter_figures` writes ``<name>.png`` and
``<name>.svg`` beside the executed notebook and captions the figure with the paper figures
it regenerates and the notebook cell that made it. The gallery page
(:mod:`llmdyn.book.gallery`) is built from the same tables.

To add a chapter's figures (e.g. ``10_vit``): add one row per figure to ``book_figures.csv``
(its ``chapter`` must be in ``_toc.yml``), end each figure cell with ``plots.show("<name>")``,
and set the paper figures it covers (A 6, A 10, A 11) to ``regenerated`` or ``stand-in`` in
``paper_figures.csv``. ``tests/book/test_figures.py`` checks that the tables agree.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.core.paths import DATA

STATUSES = {
    "regenerated": "regenerated here on the book's models",
    "stand-in": "regenerated with an offline stand-in",
    "not offline": "cannot be regenerated offline",
    "not reproduced": "not reproduced",
}
PAPERS = {"A": "Paper A", "B": "Paper B"}
KINDS = ("regenerates", "stand-in", "diagnostic")  # what a book figure is to its paper figures
METADATA_KEY = "llmdyn_figure"  # a shown figure's output metadata: {"name": ...}
NOT_DRAWN_KEY = "not_drawn"  # in that metadata: the reason a figure was not drawn in this run


@dataclass(frozen=True)
class BookFigure:
    """One figure a chapter draws."""

    name: str  # unique across the book, e.g. "coupling-grid"; the page label is fig-<name>
    chapter: str  # notebook name, e.g. "05_depth_coupling"
    paper: tuple[str, ...]  # paper figures it names, e.g. ("A 3", "A 20"); () for none
    caption: str  # what the figure shows, in our words
    kind: str = "regenerates"  # one of KINDS; a figure that names no paper figure is a diagnostic

    @property
    def label(self) -> str:
        """The figure's target on its chapter page (for ``{ref}`` and the gallery)."""
        return f"fig-{self.name}"

    def paper_text(self) -> str:
        """``"Paper A, Fig 3 and Fig 20"``, or ``"Not a figure of the papers"``."""
        if not self.paper:
            return "Not a figure of the papers"
        by_paper: dict[str, list[str]] = {}
        for ref in self.paper:
            key, number = ref.split()
            by_paper.setdefault(key, []).append(f"Fig {number}")
        return "; ".join(f"{PAPERS[key]}, {' and '.join(figs)}" for key, figs in by_paper.items())

    def lead(self) -> str:
        """The caption's first words, by kind.

        "Regenerates Paper A, Fig 3", "Stand-in for Paper A, Fig 8", "Diagnostic, beside
        Paper A, Fig 1a" or "Diagnostic, not a figure of the papers".
        """
        if self.kind == "regenerates":
            return f"Regenerates {self.paper_text()}"
        if self.kind == "stand-in":
            return f"Stand-in for {self.paper_text()}"
        return f"Diagnostic, beside {self.paper_text()}" if self.paper else \
            "Diagnostic, not a figure of the papers"


@dataclass(frozen=True)
class PaperFigure:
    """One figure of paper A or paper B and what the book does with it."""

    paper: str  # "A" or "B"
    figure: int  # the figure's number in the paper
    subject: str  # what it shows, in our words
    paper_caption: str  # the paper's caption (or its text about the figure), paraphrased in a line
    status: str  # a key of STATUSES
    reason: str  # why it is not regenerated as the paper drew it ("" when regenerated)

    @property
    def key(self) -> str:
        """``"A 3"``: the paper's letter and the figure's number."""
        return f"{self.paper} {self.figure}"


def _rows(name: str, data: Path) -> list[dict[str, str]]:
    path = data / name
    if not path.exists():
        raise LlmdynError(f"figure table {path} is missing; it is committed with the repository")
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@cache
def book_figures(data: Path = DATA) -> dict[str, BookFigure]:
    """The registered figures by name, in table order."""
    out: dict[str, BookFigure] = {}
    for row in _rows("book_figures.csv", data):
        refs = tuple(r.strip() for r in row["paper"].split(";") if r.strip())
        bad = [r for r in refs if not re.fullmatch(r"[AB] \d+[a-e]?", r)]
        if bad or row["name"] in out:
            raise LlmdynError(f"book_figures.csv row {row['name']!r}: names must be unique and "
                              f"paper figures look like 'A 3' or 'A 1c'; got {bad or 'a repeat'}")
        kind = row.get("kind", "")
        if kind not in KINDS or (not refs and kind != "diagnostic"):
            raise LlmdynError(f"book_figures.csv row {row['name']!r}: kind must be one of "
                              f"{list(KINDS)} ('diagnostic' when it names no paper figure), "
                              f"got {kind!r}")
        out[row["name"]] = BookFigure(row["name"], row["chapter"], refs, row["caption"], kind)
    return out


@cache
def paper_figures(data: Path = DATA) -> list[PaperFigure]:
    """Every figure of both papers, with its status and, unless regenerated, the reason."""
    out = []
    for row in _rows("paper_figures.csv", data):
        fig = PaperFigure(row["paper"], int(row["figure"]), row["subject"],
                          row.get("paper_caption", "").strip(), row["status"],
                          row["reason"].strip())
        if fig.status not in STATUSES or (fig.status != "regenerated") != bool(fig.reason):
            raise LlmdynError(f"paper_figures.csv {fig.key}: status must be one of "
                              f"{list(STATUSES)}, with a reason unless it is 'regenerated'")
        if not fig.paper_caption:
            raise LlmdynError(f"paper_figures.csv {fig.key}: give paper_caption, the paper's "
                              "caption in one line (or what the paper's text says of the figure)")
        out.append(fig)
    return out


def figure(name: str, data: Path = DATA) -> BookFigure:
    """The registered figure ``name``; an unknown name lists the chapter's known ones."""
    figures = book_figures(data)
    if name not in figures:
        raise LlmdynError(f"figure {name!r} is not in data/book_figures.csv; add a row for it "
                          f"(known: {', '.join(figures)})")
    return figures[name]


def drawn_by(paper_figure: PaperFigure, data: Path = DATA) -> list[BookFigure]:
    """The book figures that regenerate one paper figure or stand in for it.

    Panels count ("A 1c" draws A 1); a diagnostic drawn beside it does not draw it.
    """
    return [f for f in book_figures(data).values() if f.kind != "diagnostic"
            and any(re.fullmatch(rf"{paper_figure.key}[a-e]?", ref) for ref in f.paper)]
