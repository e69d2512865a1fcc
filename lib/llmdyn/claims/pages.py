"""Write the book's generated summary pages from the executed chapters' claims (at build time).

`llmdyn.runner.build.write_generated` calls :func:`write` before the HTML build. It writes, to
``book/generated/``: ``answer.md`` (the intro's first screen, :mod:`llmdyn.claims.answer`),
``abstracts.md`` (the intro's "The abstracts, checked", :mod:`llmdyn.claims.abstracts`),
``scorecard_summary.md`` and ``scorecard_claims.html`` (the scorecard's grid and interactive
table, :mod:`llmdyn.claims.scoreboard`), and every claim as CSV under ``csv/`` with the
scorecard's list of those files, ``scorecard_csv.md`` (:mod:`llmdyn.claims.export`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from llmdyn.claims import abstracts, answer, export, scoreboard
from llmdyn.claims.breaks import read_glued
from llmdyn.claims.chips import legend, legend_text
from llmdyn.claims.collected import OWN, Published, build_models, collect
from llmdyn.core.tables import html_as_markdown, html_or_markdown

FILES = ("answer.md", "abstracts.md", "scorecard_summary.md", "scorecard_claims.html",
         "scorecard_csv.md")


def write(generated: Path, executed: Path, chapters: Sequence[str], *,
          described: Mapping[str, str] | None = None) -> list[str]:
    """Write the files; return the models whose claims the build holds (OWN last).

    ``described``: model name -> a few words for the scale sentence (the packaged models'
    names and quantisation, from `llmdyn.models.packaged`); others are named as they are.
    """
    published: list[Published] = collect(executed, chapters)
    generated.mkdir(parents=True, exist_ok=True)
    models = build_models(published)
    if not models:  # chapters executed before they glued their claim records
        note = ("*No chapter of this build glued its claim records; rerun the chapters to see "
                "this summary.*\n")
        for name in FILES:
            (generated / name).write_text(note if name.endswith(".md") else f"<p>{note}</p>\n")
        return models
    scale = answer.scale_sentence([m for m in models if m != OWN], dict(described or {}),
                                  cores=os.cpu_count() or 1, trained_here=OWN in models)
    (generated / "answer.md").write_text(answer.markdown(published, scale=scale))
    (generated / "abstracts.md").write_text(abstracts.markdown(published))
    grid = scoreboard.summary(published)
    (generated / "scorecard_summary.md").write_text(html_or_markdown(
        legend() + "\n" + grid, f"{legend_text()}\n\n{html_as_markdown(grid)}"))
    (generated / "scorecard_claims.html").write_text(scoreboard.interactive(published))
    write_csv(generated / "csv", executed, published)
    (generated / "scorecard_csv.md").write_text(
        export.links(list(dict.fromkeys(t.chapter for t in published))))
    return models


def write_csv(folder: Path, executed: Path, published: Sequence[Published]) -> None:
    """``claims.csv`` (every claim) and ``<chapter>.csv`` (each chapter's) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    names = list(dict.fromkeys(t.chapter for t in published))
    glued = {name: read_glued(Path(executed) / f"{name}.ipynb") for name in names}
    (folder / "claims.csv").write_text(export.claims_csv(published, glued))
    for name in names:
        (folder / f"{name}.csv").write_text(
            export.claims_csv([t for t in published if t.chapter == name], glued))
