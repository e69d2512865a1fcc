"""The gallery page: one card per figure of both papers, generated from the figure tables.

Each card shows the thumbnail of the first book figure that regenerates the paper figure and
links to it on its chapter page. A paper figure the book does not draw gets a card without a
thumbnail that says why (the ``reason`` of ``data/paper_figures.csv``). A figure whose chapter
did not draw it in this run (a skipped optional part) links to the chapter instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from llmdyn import LlmdynError
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
    thumbnail: str | None  # path of the first drawn figure's PNG, relative to book/executed


def gallery_rows(executed: Path, chapters: Sequence[str], data: Path = DATA) -> list[GalleryRow]:
    """Every paper figure with the book figures that draw it and the thumbnail of this run.

    Raises ``LlmdynError`` if a book figure names a chapter that is not in the book, or if a
    figure marked regenerated (or stand-in) is drawn by no book figure.
    """
    rows = []
    for fig in paper_figures(data):
        drawn = drawn_by(fig, data)
        missing = [f"{f.name} ({f.chapter})" for f in drawn if f.chapter not in chapters]
        if missing:
            raise LlmdynError(f"paper figure {fig.key} is drawn by {missing}, chapters that are "
                              f"not in _toc.yml ({', '.join(chapters)})")
        if fig.status in ("regenerated", "stand-in") and not drawn:
            raise LlmdynError(f"paper figure {fig.key} is marked {fig.status!r} but no row of "
                              "book_figures.csv draws it")
        pngs = [f"figures/{f.chapter}/{f.name}.png" for f in drawn]
        thumb = next((p for p in pngs if (executed / p).exists()), None)
        rows.append(GalleryRow(fig, drawn, thumb))
    return rows


BADGES = {"regenerated": "bdg-success", "stand-in": "bdg-warning",  # sphinx-design badge roles
          "not offline": "bdg-danger", "not reproduced": "bdg-secondary"}


def _card(row: GalleryRow) -> str:
    """One sphinx-design card: thumbnail and link to the figure, or the reason it is absent."""
    fig, drawn = row.figure, row.drawn
    title = f"{PAPERS[fig.paper]}, Fig {fig.figure}"
    lines = [f":::{{grid-item-card}} {title}"]
    if row.thumbnail:
        stem = Path(row.thumbnail).stem
        lines += [f":img-top: executed/{row.thumbnail}", f":img-alt: {title}: {fig.subject}",
                  f":link: fig-{stem}", ":link-type: ref"]
    elif drawn:
        lines += [f":link: executed/{drawn[0].chapter}", ":link-type: doc"]
    status = f"{{{BADGES[fig.status]}}}`{fig.status}`"
    lines += [":class-card: gallery-card", "", fig.subject, "",
              status + (f" {fig.reason}" if fig.reason else "")]
    if drawn:
        chapters = dict.fromkeys(f.chapter for f in drawn)
        lines += ["", "In " + ", ".join(f"{{doc}}`executed/{c}`" for c in chapters)
                  + ("" if row.thumbnail else " (not drawn in this run: an optional part of the "
                     "chapter was skipped)")]
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
        out += [_card(r) + "\n" for r in mine]
        out += ["::::", ""]
    return "\n".join(out)
