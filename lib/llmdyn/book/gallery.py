"""The gallery page: one card per figure of both papers, generated from the figure tables.

Each card shows the thumbnail of the first book figure that regenerates the paper figure and
that this run drew, and links to it on its chapter page. What a chapter drew is read from its
executed notebook (:func:`llmdyn.book.figure_files.chapter_figures`), never from the files that
happen to lie in its figure folder. A paper figure the book does not draw gets a card without a
thumbnail that says why (the ``reason`` of ``data/paper_figures.csv``). A book figure that its
chapter did not draw in this run is listed as "not drawn for this model", with the reason the
chapter gave (``plots.not_drawn``), and the card links to the chapter instead.
"""

from __future__ import annotations

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


def gallery_rows(executed: Path, chapters: Sequence[str], data: Path = DATA) -> list[GalleryRow]:
    """Every paper figure with the book figures that draw it and what this run drew of them.

    ``chapters`` are the book's (a partial book lists figures of the others as not in it).

    Raises ``LlmdynError`` if a figure marked regenerated (or stand-in) is drawn by no book
    figure.
    """
    shown: dict[str, ChapterFigures] = {}
    rows = []
    for fig in paper_figures(data):
        drawn = drawn_by(fig, data)
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


def _card(row: GalleryRow, chapters: Sequence[str]) -> str:
    """One sphinx-design card: thumbnail and link to the figure, or the reason it is absent."""
    fig, drawn = row.figure, row.drawn
    title = f"{PAPERS[fig.paper]}, Fig {fig.figure}"
    lines = [f":::{{grid-item-card}} {title}"]
    in_book = list(dict.fromkeys(f.chapter for f in drawn if f.chapter in chapters))
    if row.thumbnail:
        stem = Path(row.thumbnail).stem
        lines += [f":img-top: executed/{row.thumbnail}", f":img-alt: {title}: {fig.subject}",
                  f":link: fig-{stem}", ":link-type: ref"]
    elif in_book:
        lines += [f":link: executed/{in_book[0]}", ":link-type: doc"]
    status = f"{{{BADGES[fig.status]}}}`{fig.status}`"
    lines += [":class-card: gallery-card", "", fig.subject, "",
              status + (f" {markdown_text(fig.reason)}" if fig.reason else "")]
    if in_book:
        lines += ["", "In " + ", ".join(f"{{doc}}`executed/{c}`" for c in in_book)]
    for f in (f for f in drawn if f.name in row.not_drawn):
        said = "Not drawn for this model" if f.chapter in chapters else "Not in this book"
        lines += ["", f"{said}: `{f.name}`, {markdown_text(row.not_drawn[f.name].rstrip('.'))}."]
    return "\n".join([*lines, ":::"])


def gallery_markdown(executed: Path, chapters: Sequence[str], data: Path = DATA) -> str:
    """The gallery's cards as MyST (sphinx-design grids), one section per paper.

    Image and document paths are relative to ``book/``, where the page including it lives.
    """
    rows = gallery_rows(executed, chapters, data)
    out = []
    for key, paper in PAPERS.items():
        mine = [r for r in rows if r.figure.paper == key]
        counts = {s: sum(r.figure.status == s for r in mine) for s in STATUSES}
        summary = "; ".join(f"{n} {STATUSES[s]}" for s, n in counts.items() if n)
        out += [f"## {paper}", "", f"{len(mine)} figures: {summary}.", "",
                "::::{grid} 1 2 3 3", ":gutter: 2", ""]
        out += [_card(r, chapters) + "\n" for r in mine]
        out += ["::::", ""]
    return "\n".join(out)
