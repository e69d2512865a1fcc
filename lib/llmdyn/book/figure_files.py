"""The book's figures on its pages: each shown figure written to files and captioned in place.

What each figure is to the paper's figures (it regenerates one, stands in for one, or is a
diagnostic beside one) is data (:mod:`llmdyn.data.figures`); this module turns the outputs
that ``plots.show`` tagged in an executed chapter into files and MyST figures, once, when the
chapter's run has finished (:func:`publish_chapter_figures`). A chapter's folder
``figures/<chapter>/`` is replaced as a whole by each run, so it holds only what that run drew;
the book reads which figures a chapter drew, or did not draw and why, from its executed
notebook (:func:`chapter_figures`), never from the files that happen to be there.
"""

from __future__ import annotations

import base64
import html
import json
import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

from llmdyn import LlmdynError
from llmdyn.data.figures import DATA, METADATA_KEY, NOT_DRAWN_KEY, BookFigure, figure


def png_width(png: bytes) -> int:
    """The pixel width of a PNG image, read from its header (the IHDR chunk)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise LlmdynError("a figure output is not a PNG image; draw it with plots.show")
    return int.from_bytes(png[16:20], "big")


def figure_myst(entry: BookFigure, stem: str, chapter: str, cell_id: str | None,
                source_url: str, width: int | None = None) -> str:
    """The MyST figure that shows one published figure on its chapter page.

    Its caption names the paper figure, links the vector file and the notebook cell that drew
    it (by cell id, in the notebook source on the repository and in the executed copy).
    ``width`` (the PNG's pixel width) is given to the figure, so the page draws it at most that
    wide and Sphinx links the image to its full-size file.
    """
    base = f"figures/{chapter}/{stem}"
    cell = f"cell `{cell_id}`" if cell_id else "a cell"
    sized = f":width: {width}px\n" if width else ""
    return (f":::{{figure}} {base}.png\n:name: fig-{stem}\n{sized}:alt: {entry.paper_text()}: "
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


class ChapterFigures(NamedTuple):
    """What one executed chapter drew, as its notebook names it."""

    drawn: dict[str, list[str]]  # figure name -> its file stems in order (name, name-2, …)
    not_drawn: dict[str, str]  # figure name -> the reason the chapter gave (plots.not_drawn)


def _tagged(nb: dict[str, Any]):
    """``(cell, output, tag)`` of each output tagged by ``plots.show`` or ``plots.not_drawn``."""
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            tag = out.get("metadata", {}).get(METADATA_KEY)
            if tag:
                yield cell, out, tag


def _stems(nb: dict[str, Any]):
    """``(cell, output, name, stem)`` of each shown figure; a name shown twice gets ``-2``."""
    seen: dict[str, int] = {}
    for cell, out, tag in _tagged(nb):
        if NOT_DRAWN_KEY in tag:
            continue
        seen[tag["name"]] = seen.get(tag["name"], 0) + 1
        n = seen[tag["name"]]
        yield cell, out, tag["name"], tag["name"] if n == 1 else f"{tag['name']}-{n}"


def chapter_figures(notebook: Path) -> ChapterFigures:
    """The figures an executed chapter drew and those it said it did not draw (with why).

    A chapter that was not executed drew nothing and gave no reason.
    """
    if not notebook.exists():
        return ChapterFigures({}, {})
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    drawn: dict[str, list[str]] = {}
    for _, _, name, stem in _stems(nb):
        drawn.setdefault(name, []).append(stem)
    not_drawn = {tag["name"]: tag[NOT_DRAWN_KEY] for _, _, tag in _tagged(nb)
                 if NOT_DRAWN_KEY in tag and tag["name"] not in drawn}
    return ChapterFigures(drawn, not_drawn)


def _sweep(folder: Path, chapter: str) -> None:
    """Remove folders of ``chapter``'s earlier runs (``.<chapter>.<pid>.*``) no process owns."""
    for old in folder.glob(f".{chapter}.*"):
        try:
            os.kill(int(old.name.split(".")[-2]), 0)
        except (ValueError, IndexError, ProcessLookupError):
            shutil.rmtree(old, ignore_errors=True)
        except PermissionError:
            pass  # another user's live run


def publish_chapter_figures(notebook: Path, chapter: str, executed: Path, source_url: str,
                            data: Path = DATA) -> Path:
    """Write the figures a finished chapter showed into a new folder and caption them in place.

    For each output that ``plots.show`` tagged in ``notebook`` (the run's own copy, not yet
    in place), writes ``<stem>.png`` and ``.svg`` into a new folder beside
    ``executed/figures/<chapter>`` and adds the MyST figure (:func:`figure_myst`) as the output's
    ``text/markdown``, which the book renders in place of the bare image, and the same captioned
    figure as ``text/html`` (:func:`figure_html`) for Jupyter front ends. A figure shown twice by
    one cell (a loop over models) gets ``<name>-2``, ``<name>-3``, ….
    :func:`replace_figure_folder` then puts the folder in place of the previous run's.

    Args:
        notebook: the executed notebook (it is rewritten with the captions).
        chapter: its chapter name (``notebook`` may have a temporary name).
        executed: the directory of executed chapters (``book/executed``).
        source_url: the repository's address, e.g. ``https://github.com/o/r/blob/main``; the
            caption links ``<source_url>/notebooks/<chapter>.ipynb``.
        data: the directory holding the figure tables.

    Returns:
        The new folder, at a temporary name.

    Raises:
        LlmdynError: the notebook shows a figure that ``book_figures.csv`` gives to another
            chapter.
    """
    import nbformat  # here: the `llmdyn` command imports this module; nbformat is slow

    folder = executed / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    _sweep(folder, chapter)
    staged = folder / f".{chapter}.{os.getpid()}.partial"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir()
    nb = nbformat.read(notebook, as_version=4)
    url = f"{source_url}/notebooks/{chapter}.ipynb"
    for cell, out, name, stem in _stems(nb):
        entry = figure(name, data)
        if entry.chapter != chapter:
            raise LlmdynError(f"{chapter}.ipynb shows figure {entry.name!r}, which "
                              f"book_figures.csv gives to chapter {entry.chapter}")
        png = base64.b64decode(out.data["image/png"])
        (staged / f"{stem}.png").write_bytes(png)
        (staged / f"{stem}.svg").write_text(out.data["image/svg+xml"], encoding="utf-8")
        out.data["text/markdown"] = figure_myst(entry, stem, chapter, cell.get("id"), url,
                                                png_width(png))
        out.data["text/html"] = figure_html(entry, out.data["image/png"], cell.get("id"), url)
    nbformat.write(nb, notebook)
    return staged


def replace_figure_folder(staged: Path, chapter: str, executed: Path) -> Path:
    """Put a run's figure folder in place of ``executed/figures/<chapter>``; return that path.

    Two renames (the old folder aside, the new one in): a run cut off between them leaves no
    folder, which the HTML build refuses (:func:`named_figure_files`), never an old one.
    """
    target = executed / "figures" / chapter
    aside = target.with_name(f".{chapter}.{os.getpid()}.old")
    if target.exists():
        os.replace(target, aside)
    os.replace(staged, target)
    shutil.rmtree(aside, ignore_errors=True)
    return target


def named_figure_files(executed: Path, chapter: str) -> list[Path]:
    """The PNG and SVG files an executed chapter names, checked against its notebook.

    Raises:
        LlmdynError: a figure of the notebook is not captioned (executed before its run
            published its figures), or its file is missing or holds another run's image.
    """
    path = executed / f"{chapter}.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    files = []
    for _, out, _, stem in _stems(nb):
        png = executed / "figures" / chapter / f"{stem}.png"
        data = out.get("data", {})
        if f":name: fig-{stem}\n" not in "".join(data.get("text/markdown", "")):
            why = "its figures were not captioned by its run (executed by an older llmdyn?)"
        elif not png.exists() or not png.with_suffix(".svg").exists():
            why = f"figure file {png.relative_to(executed)} (or its .svg) is missing"
        elif png.read_bytes() != base64.b64decode("".join(data["image/png"])):
            why = f"figure file {png.relative_to(executed)} is from another run"
        else:
            files += [png, png.with_suffix(".svg")]
            continue
        raise LlmdynError(f"chapter {chapter}: {why}; run the chapter again (llmdyn workflow "
                          f"--rerun {chapter}, or llmdyn book --only {chapter})")
    return files


def copy_vector_files(executed: Path, chapters: list[str], out: Path) -> None:
    """Replace ``out`` with the SVG files the chapters name: ``out/<chapter>/<stem>.svg``."""
    shutil.rmtree(out, ignore_errors=True)
    for chapter in chapters:
        for svg in named_figure_files(executed, chapter)[1::2]:
            (out / chapter).mkdir(parents=True, exist_ok=True)
            shutil.copy2(svg, out / chapter / svg.name)


def copy_chapter_figures(source: Path, executed: Path, chapter: str) -> None:
    """Replace ``executed/figures/<chapter>`` with that of the executed chapters in ``source``."""
    shutil.rmtree(executed / "figures" / chapter, ignore_errors=True)
    if (source / "figures" / chapter).is_dir():
        shutil.copytree(source / "figures" / chapter, executed / "figures" / chapter)
