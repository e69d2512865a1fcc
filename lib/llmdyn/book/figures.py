"""The book's figures as data: which paper figure each one regenerates, and what cannot be.

Two committed tables hold the facts; nothing about a figure is typed into a notebook or a page:

- ``data/book_figures.csv``: one row per figure a chapter draws (``name``, ``chapter``,
  ``paper`` as ``"A 3; A 20"``, ``caption`` in our own words).
- ``data/paper_figures.csv``: one row per figure of paper A and paper B (``paper``, ``figure``,
  ``subject``, ``status``, ``reason``). ``status`` is one of ``STATUSES``; every status but
  ``regenerated`` gives its reason, and the gallery prints it.

A chapter draws a registered figure with one call, ``plots.show("coupling-grid")`` in place of
``plt.show()`` (see :mod:`llmdyn.plots.output`): that writes ``<name>.png`` and ``<name>.svg``
beside the executed notebook and captions the figure with the paper figures it regenerates and
the notebook cell that made it. The gallery page (:func:`gallery_markdown`) is built from the
same tables.

To add a chapter's figures (e.g. ``10_vit``): add one row per figure to ``book_figures.csv``
(its ``chapter`` must be in ``_toc.yml``), end each figure cell with ``plots.show("<name>")``,
and set the paper figures it covers (A 6, A 10, A 11) to ``regenerated`` or ``stand-in`` in
``paper_figures.csv``. ``tests/test_figures.py`` checks that the tables agree.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from llmdyn import LlmdynError

DATA = Path(__file__).resolve().parents[3] / "data"
STATUSES = {
    "regenerated": "regenerated here on the book's models",
    "stand-in": "regenerated with an offline stand-in",
    "not offline": "cannot be regenerated offline",
    "not reproduced": "not reproduced",
}
PAPERS = {"A": "Paper A", "B": "Paper B"}


@dataclass(frozen=True)
class BookFigure:
    """One figure a chapter draws."""

    name: str  # unique across the book, e.g. "coupling-grid"; the page label is fig-<name>
    chapter: str  # notebook name, e.g. "05_depth_coupling"
    paper: tuple[str, ...]  # paper figures it regenerates, e.g. ("A 3", "A 20"); () for none
    caption: str  # what the figure shows, in our words

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


@dataclass(frozen=True)
class PaperFigure:
    """One figure of paper A or paper B and what the book does with it."""

    paper: str  # "A" or "B"
    figure: int  # the figure's number in the paper
    subject: str  # what it shows, in our words
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
        out[row["name"]] = BookFigure(row["name"], row["chapter"], refs, row["caption"])
    return out


@cache
def paper_figures(data: Path = DATA) -> list[PaperFigure]:
    """Every figure of both papers, with its status and, unless regenerated, the reason."""
    out = []
    for row in _rows("paper_figures.csv", data):
        fig = PaperFigure(row["paper"], int(row["figure"]), row["subject"], row["status"],
                          row["reason"].strip())
        if fig.status not in STATUSES or (fig.status != "regenerated") != bool(fig.reason):
            raise LlmdynError(f"paper_figures.csv {fig.key}: status must be one of "
                              f"{list(STATUSES)}, with a reason unless it is 'regenerated'")
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
    """The book figures that regenerate one paper figure (panels count: "A 1c" draws A 1)."""
    return [f for f in book_figures(data).values()
            if any(re.fullmatch(rf"{paper_figure.key}[a-e]?", ref) for ref in f.paper)]


def figure_myst(entry: BookFigure, stem: str, chapter: str, cell_id: str | None,
                source_url: str) -> str:
    """The MyST figure that shows one published figure on its chapter page.

    Its caption names the paper figure, links the vector file and the notebook cell that drew
    it (by cell id, in the notebook source on the repository and in the executed copy).
    """
    base = f"figures/{chapter}/{stem}"
    cell = f"cell `{cell_id}`" if cell_id else "a cell"
    return (f":::{{figure}} {base}.png\n:name: fig-{stem}\n:alt: {entry.paper_text()}: "
            f"{entry.caption}\n\n**{'Regenerates ' if entry.paper else ''}{entry.paper_text()}.** "
            f"{entry.caption} "
            f"Vector file: {{download}}`{stem}.svg <{base}.svg>`. Drawn by {cell} of "
            f"[`notebooks/{chapter}.ipynb`]({source_url}) (executed copy: "
            f"{{download}}`{chapter}.ipynb <{chapter}.ipynb>`).\n:::\n")


def figure_html(entry: BookFigure, png_base64: str, cell_id: str | None, source_url: str) -> str:
    """The same figure as self-contained HTML, for Jupyter front ends reading the executed copy.

    JupyterLab (a Binder launch, a downloaded notebook) prefers ``text/html`` to
    ``text/markdown`` and would show the MyST directive as text; the book prefers the MyST
    figure (``nb_mime_priority_overrides`` in ``_config.yml``).
    """
    import html

    cell = f" Drawn by cell <code>{html.escape(cell_id)}</code> of" if cell_id else " Drawn in"
    paper = ("Regenerates " if entry.paper else "") + entry.paper_text()
    return (f'<figure><img src="data:image/png;base64,{png_base64}" '
            f'alt="{html.escape(paper)}"/><figcaption><strong>{html.escape(paper)}.</strong> '
            f'{html.escape(entry.caption)}{cell} <a href="{html.escape(source_url)}">'
            f"{html.escape(source_url.rsplit('/', 2)[-2] + '/' + source_url.rsplit('/', 1)[-1])}"
            "</a>.</figcaption></figure>")


def publish(executed: Path, source_url: str, data: Path = DATA) -> list[Path]:
    """Write every shown figure of the executed chapters to files and caption it on the page.

    For each output that ``plots.show`` tagged, writes ``figures/<chapter>/<name>.png`` and
    ``.svg`` beside the executed notebook and adds the MyST figure (:func:`figure_myst`) as the
    output's ``text/markdown``, which the book renders in place of the bare image, and the
    same captioned figure as ``text/html`` (:func:`figure_html`) for Jupyter front ends. A figure
    shown twice by one cell (a loop over models) gets ``<name>-2``, ``<name>-3``, ….
    Running it again rewrites the same files.

    Args:
        executed: the directory of executed chapters (``book/executed``).
        source_url: the repository's address, e.g. ``https://github.com/o/r/blob/main``; the
            caption links ``<source_url>/notebooks/<chapter>.ipynb``.
        data: the directory holding the figure tables.

    Returns:
        The SVG files written.
    """
    import base64

    import nbformat

    from llmdyn.plots.output import METADATA_KEY

    written = []
    for path in sorted(executed.glob("*.ipynb")):
        chapter, nb, seen = path.stem, nbformat.read(path, as_version=4), {}
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                tag = out.get("metadata", {}).get(METADATA_KEY)
                if not tag:
                    continue
                entry = figure(tag["name"], data)
                if entry.chapter != chapter:
                    raise LlmdynError(f"{path.name} shows figure {entry.name!r}, which "
                                      f"book_figures.csv gives to chapter {entry.chapter}")
                seen[entry.name] = seen.get(entry.name, 0) + 1
                stem = entry.name if seen[entry.name] == 1 else f"{entry.name}-{seen[entry.name]}"
                target = executed / "figures" / chapter
                target.mkdir(parents=True, exist_ok=True)
                (target / f"{stem}.png").write_bytes(base64.b64decode(out.data["image/png"]))
                (target / f"{stem}.svg").write_text(out.data["image/svg+xml"], encoding="utf-8")
                url = f"{source_url}/notebooks/{chapter}.ipynb"
                out.data["text/markdown"] = figure_myst(entry, stem, chapter, cell.get("id"), url)
                out.data["text/html"] = figure_html(entry, out.data["image/png"], cell.get("id"),
                                                    url)
                written.append(target / f"{stem}.svg")
        nbformat.write(nb, path)
    return written
