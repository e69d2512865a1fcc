"""The book's figures on its pages: each shown figure written to files and captioned in place.

What each figure is to the paper's figures (it regenerates one, stands in for one, or is a
diagnostic beside one) is data (:mod:`llmdyn.data.figures`); this module turns the outputs
that ``plots.show`` tagged in the executed chapters into files and MyST figures.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.data.figures import DATA, METADATA_KEY, BookFigure, figure


def figure_myst(entry: BookFigure, stem: str, chapter: str, cell_id: str | None,
                source_url: str) -> str:
    """The MyST figure that shows one published figure on its chapter page.

    Its caption names the paper figure, links the vector file and the notebook cell that drew
    it (by cell id, in the notebook source on the repository and in the executed copy).
    """
    base = f"figures/{chapter}/{stem}"
    cell = f"cell `{cell_id}`" if cell_id else "a cell"
    return (f":::{{figure}} {base}.png\n:name: fig-{stem}\n:alt: {entry.paper_text()}: "
            f"{entry.caption}\n\n**{entry.lead()}.** "
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
    cell = f" Drawn by cell <code>{html.escape(cell_id)}</code> of" if cell_id else " Drawn in"
    paper = entry.lead()
    return (f'<figure><img src="data:image/png;base64,{png_base64}" '
            f'alt="{html.escape(paper)}"/><figcaption><strong>{html.escape(paper)}.</strong> '
            f'{html.escape(entry.caption)}{cell} <a href="{html.escape(source_url)}">'
            f"{html.escape(source_url.rsplit('/', 2)[-2] + '/' + source_url.rsplit('/', 1)[-1])}"
            "</a>.</figcaption></figure>")


def write_figure_files(executed: Path, source_url: str, *, out: Path,
                       data: Path = DATA) -> list[Path]:
    """Copy the executed chapters to ``out`` with every shown figure written to files and captioned.

    For each output that ``plots.show`` tagged, writes ``out/figures/<chapter>/<name>.png`` and
    ``.svg`` and adds the MyST figure (:func:`figure_myst`) as the output's ``text/markdown``,
    which the book renders in place of the bare image, and the same captioned figure as
    ``text/html`` (:func:`figure_html`) for Jupyter front ends; the captioned notebook is
    written to ``out/<chapter>.ipynb``. A figure shown twice by one cell (a loop over models)
    gets ``<name>-2``, ``<name>-3``, …. Running it again rewrites the same files.

    The notebooks in ``executed`` are only read: the workflow's chapters are inputs of other
    jobs, and a rewritten one would make Snakemake run those again after every book build.

    Args:
        executed: the directory of executed chapters (``book/executed``).
        source_url: the repository's address, e.g. ``https://github.com/o/r/blob/main``; the
            caption links ``<source_url>/notebooks/<chapter>.ipynb``.
        out: where the captioned chapters and their figures go (the HTML build's copy of
            ``book/executed``); not ``executed`` itself.
        data: the directory holding the figure tables.

    Returns:
        The SVG files written.
    """
    import nbformat  # here: the `llmdyn` command imports this module; nbformat takes ~1.7 s

    if Path(out).resolve() == Path(executed).resolve():
        raise LlmdynError(f"write_figure_files: out is the executed chapters' own directory "
                          f"({executed}); give the HTML build's copy, e.g. _build/source/book/"
                          "executed")
    written = []
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(executed.glob("[!.]*.ipynb")):  # not a running chapter's temporary
        chapter, nb, seen = path.stem, nbformat.read(path, as_version=4), {}
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                tag = output.get("metadata", {}).get(METADATA_KEY)
                if not tag:
                    continue
                entry = figure(tag["name"], data)
                if entry.chapter != chapter:
                    raise LlmdynError(f"{path.name} shows figure {entry.name!r}, which "
                                      f"book_figures.csv gives to chapter {entry.chapter}")
                seen[entry.name] = seen.get(entry.name, 0) + 1
                stem = entry.name if seen[entry.name] == 1 else f"{entry.name}-{seen[entry.name]}"
                target = out / "figures" / chapter
                target.mkdir(parents=True, exist_ok=True)
                (target / f"{stem}.png").write_bytes(base64.b64decode(output.data["image/png"]))
                (target / f"{stem}.svg").write_text(output.data["image/svg+xml"],
                                                    encoding="utf-8")
                url = f"{source_url}/notebooks/{chapter}.ipynb"
                output.data["text/markdown"] = figure_myst(entry, stem, chapter, cell.get("id"),
                                                           url)
                output.data["text/html"] = figure_html(entry, output.data["image/png"],
                                                       cell.get("id"), url)
                written.append(target / f"{stem}.svg")
        nbformat.write(nb, out / path.name)
    return written
