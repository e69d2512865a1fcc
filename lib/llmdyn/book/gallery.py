"""The gallery page: one card per figure of both papers, generated from the figure tables.

Each card gives the paper's caption in one line (``paper_caption`` of ``data/paper_figures.csv``)
beside ours, and shows the thumbnail of the first book figure that regenerates the paper figure and
that this run drew: the thumbnail links to the full-size image, a line under it to the figure on
its chapter page. A later card whose thumbnail an earlier card already showed says "the same figure
as" that card instead of repeating it. What a chapter drew is read from its executed notebook
(:func:`llmdyn.book.figure_files.chapter_figures`), never from the files that happen to lie in its
figure folder. A paper figure the book does not draw gets a card without a thumbnail that says why
(the ``reason`` of ``data/paper_figures.csv``). A book figure that its chapter did not draw in this
run is listed as "not drawn for this model", with the reason the chapter gave
(``plots.not_drawn``), and the card links to the chapter instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from llmdyn import LlmdynError
from llmdyn.book.figure_files import ChapterFigures, chapter_figures
from llmdyn.core.escape import markdown_text
from llmdyn.data.figures import (
    DATA,
    PAPERS,
    STATUSES,
    BookFigure,
    PaperFigure,
    drawn_by,
    paper_figures,
)


class GalleryRow(NamedTuple):
    """One paper figure as the gallery shows it."""

    figure: PaperFigure
    drawn: list[BookFigure]  # the book figures that regenerate it (may be empty)
    thumbnail: str | None  # PNG of the first one this run drew, relative to book/executed
    not_drawn: dict[str, str] = {}  # book figure name -> why this run did not draw it


def _why_not(fig: BookFigure, shown: ChapterFigures, chapters: Sequence[str]) -> str:
    """Why this run did not draw ``fig``: the chapter's own reason, else what is known."""
    if fig.chapter not in chapters:
        return f"chapter {fig.chapter} is not in this book"
    return shown.not_drawn.get(fig.name, f"chapter {fig.chapter} did not draw it in this run")


def _panel(book: BookFigure, paper: PaperFigure) -> str:
    """The panel of ``paper`` that ``book`` draws: "" for the whole figure, else "a" … "e"."""
    return min(ref.split()[1].removeprefix(str(paper.figure)) for ref in book.paper
               if ref.split()[0] == paper.paper
               and re.fullmatch(rf"{paper.figure}[a-e]?", ref.split()[1]))


def gallery_rows(executed: Path, chapters: Sequence[str], data: Path = DATA) -> list[GalleryRow]:
    """Every paper figure with the book figures that draw it and what this run drew of them.

    ``chapters`` are the book's (a partial book lists figures of the others as not in it).

    The book figures of a paper figure come in the order of the panels they draw (the whole
    figure or panel a first), so a card's thumbnail shows the paper's headline panel where this
    run drew it.

    Raises ``LlmdynError`` if a figure marked regenerated (or stand-in) is drawn by no book
    figure.
    """
    shown: dict[str, ChapterFigures] = {}
    rows = []
    for fig in paper_figures(data):
        drawn = sorted(drawn_by(fig, data), key=lambda f: _panel(f, fig))  # panel a leads
        if fig.status in ("regenerated", "stand-in") and not drawn:
            raise LlmdynError(f"paper figure {fig.key} is marked {fig.status!r} but no row of "
                              "book_figures.csv draws it")
        for f in drawn:
            if f.chapter not in shown:
                shown[f.chapter] = (chapter_figures(executed / f"{f.chapter}.ipynb")
                                    if f.chapter in chapters else ChapterFigures({}, {}))
        done = [f for f in drawn if f.name in shown[f.chapter].drawn]
        thumb = f"figures/{done[0].chapter}/{done[0].name}.png" if done else None
        missing = {f.name: _why_not(f, shown[f.chapter], chapters) for f in drawn
                   if f not in done}
        rows.append(GalleryRow(fig, drawn, thumb, missing))
    return rows


BADGES = {"regenerated": "bdg-success", "stand-in": "bdg-warning",  # sphinx-design badge roles
          "not offline": "bdg-danger", "not reproduced": "bdg-secondary"}


def _card(row: GalleryRow, chapters: Sequence[str], first_shown: dict[str, str]) -> str:
    """One sphinx-design card: the paper's caption beside ours, and our figure or why not.

    The thumbnail is an image with a width, so Sphinx links it to the full-size PNG; a text link
    leads to the figure on its chapter page. ``first_shown`` maps each thumbnail already shown
    to the card that showed it: a later card that would repeat it names that card instead.
    """
    fig, drawn = row.figure, row.drawn
    title = f"{PAPERS[fig.paper]}, Fig {fig.figure}"
    lines = [f":::{{grid-item-card}} {title}"]
    in_book = list(dict.fromkeys(f.chapter for f in drawn if f.chapter in chapters))
    shown_by = first_shown.get(row.thumbnail or "")
    if row.thumbnail and shown_by:
        lines += [f":link: fig-{Path(row.thumbnail).stem}", ":link-type: ref"]
    elif not row.thumbnail and in_book:
        lines += [f":link: executed/{in_book[0]}", ":link-type: doc"]
    lines += [":class-card: gallery-card", ""]
    if row.thumbnail and not shown_by:
        first_shown[row.thumbnail] = title
        stem = Path(row.thumbnail).stem
        lines += [f"```{{image}} executed/{row.thumbnail}", f":alt: {title}: {fig.subject}",
                  ":width: 100%", "```", "",
                  f"**Ours:** {drawn_caption(row, stem)} ({{ref}}`on its page <fig-{stem}>`).",
                  ""]
    elif shown_by:
        lines += [f"**Ours:** the same figure as {shown_by}.", ""]
    lines += [f"**The paper:** {fig.paper_caption}", ""]
    status = f"{{{BADGES[fig.status]}}}`{fig.status}`"
    lines += [status + (f" {markdown_text(fig.reason)}" if fig.reason else "")]
    if in_book:
        lines += ["", "In " + ", ".join(f"{{doc}}`executed/{c}`" for c in in_book)]
    for f in (f for f in drawn if f.name in row.not_drawn):
        said = "Not drawn for this model" if f.chapter in chapters else "Not in this book"
        lines += ["", f"{said}: `{f.name}`, {markdown_text(row.not_drawn[f.name].rstrip('.'))}."]
    return "\n".join([*lines, ":::"])


def drawn_caption(row: GalleryRow, stem: str) -> str:
    """The first sentence of our caption of the thumbnail's figure."""
    fig = next(f for f in row.drawn if f.name == stem)
    return fig.caption.split(". ")[0].rstrip(".")


def gallery_markdown(executed: Path, chapters: Sequence[str], data: Path = DATA) -> str:
    """The gallery's cards as MyST (sphinx-design grids), one section per paper.

    Image and document paths are relative to ``book/``, where the page including it lives.
    """
    rows = gallery_rows(executed, chapters, data)
    first_shown: dict[str, str] = {}  # thumbnail -> the title of the card that shows it
    out = []
    for key, paper in PAPERS.items():
        mine = [r for r in rows if r.figure.paper == key]
        counts = {s: sum(r.figure.status == s for r in mine) for s in STATUSES}
        summary = "; ".join(f"{n} {STATUSES[s]}" for s, n in counts.items() if n)
        out += [f"## {paper}", "", f"{len(mine)} figures: {summary}.", "",
                "::::{grid} 1 2 2 2", ":gutter: 2", ""]  # two a row: thumbnails wide enough to read
        out += [_card(r, chapters, first_shown) + "\n" for r in mine]
        out += ["::::", ""]
    return "\n".join(out)
