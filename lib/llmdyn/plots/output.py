"""Show a chapter's figure once, as a raster for the page and a vector file for a paper.

A figure cell ends with ``plots.show("<name>")`` instead of ``plt.show()``; ``<name>`` is a row
of ``data/book_figures.csv`` (see :mod:`llmdyn.data.figures`). The figure is displayed as one output
holding a PNG, an SVG and a plain-text caption, tagged with the figure's name in the output's
metadata. Nothing is written while the kernel runs: when the chapter's run has finished,
:func:`llmdyn.book.figure_files.publish_chapter_figures` reads those outputs from the executed
notebook, writes ``figures/<chapter>/<name>.{png,svg}`` beside it and captions the figure on
the page.

A figure that a chapter does not draw in a run (an optional part with nothing to draw for this
model) ends its cell with ``plots.not_drawn("<name>", "<why>")``: the page says why, and the
gallery lists the figure as not drawn for this model, with that reason.
"""

from __future__ import annotations

import base64
import io

import matplotlib.pyplot as plt
from IPython.display import display
from matplotlib.figure import Figure

from llmdyn import LlmdynError
from llmdyn.core.escape import markdown_text
from llmdyn.data import figures
from llmdyn.data.figures import METADATA_KEY, NOT_DRAWN_KEY


def render(fig: Figure) -> dict[str, str]:
    """The figure as a Jupyter MIME bundle: ``image/png`` (base64) and ``image/svg+xml``."""
    png, svg = io.BytesIO(), io.StringIO()
    fig.savefig(png, format="png")
    fig.savefig(svg, format="svg")
    return {"image/png": base64.b64encode(png.getvalue()).decode("ascii"),
            "image/svg+xml": svg.getvalue()}


def caption_text(name: str) -> str:
    """The plain caption: ``"Regenerates Paper A, Fig 3: <what it shows>"`` (its kind first)."""
    entry = figures.figure(name)
    return f"{entry.lead()}: {entry.caption}"


def show(name: str, fig: Figure | None = None) -> None:
    """Display ``fig`` (default: the current figure) as the registered figure ``name``; close it.

    Args:
        name: a row of ``data/book_figures.csv``; an unknown name raises ``LlmdynError``.
        fig: the figure to show; ``None`` takes ``plt.gcf()``.
    """
    entry = figures.figure(name)  # refuse an unregistered name before drawing anything
    fig = fig if fig is not None else plt.gcf()
    bundle = {**render(fig), "text/plain": caption_text(name)}
    display(bundle, raw=True, metadata={METADATA_KEY: {"name": entry.name}})
    plt.close(fig)  # the inline backend must not draw it a second time


def not_drawn(name: str, reason: str) -> None:
    """Say on the page that the registered figure ``name`` is not drawn in this run, and why.

    The output is tagged like a shown figure, with the reason in place of the image, so the
    gallery lists the figure as "not drawn for this model" with that reason.

    Args:
        name: a row of ``data/book_figures.csv``; an unknown name raises ``LlmdynError``.
        reason: why this run draws nothing, in a sentence (e.g. "no compare model other than
            gemma3-270m was given").
    """
    entry = figures.figure(name)
    if not reason.strip():
        raise LlmdynError(f"plots.not_drawn({name!r}): give the reason the figure is not drawn")
    text = f"{entry.lead()} ({name}) is not drawn for this model: {reason.strip()}"
    display({"text/markdown": f"**Not drawn.** {markdown_text(text)}",
             "text/plain": f"Not drawn. {text}"},
            raw=True, metadata={METADATA_KEY: {"name": entry.name, NOT_DRAWN_KEY: reason.strip()}})
