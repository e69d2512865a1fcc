"""Write the book's generated summary pages from the executed chapters' claims (at build time).

`llmdyn.runner.build.write_generated` calls :func:`write` before the HTML build. It writes, to
``book/generated/``: ``abstracts.md`` (the intro's "The abstracts, checked",
:mod:`llmdyn.claims.abstracts`), ``scorecard_summary.md`` and ``scorecard_claims.html`` (the
scorecard's grid and interactive table, :mod:`llmdyn.claims.scoreboard`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from llmdyn.claims import abstracts, scoreboard
from llmdyn.claims.collected import Published, build_models, collect

FILES = ("abstracts.md", "scorecard_summary.md", "scorecard_claims.html")


def write(generated: Path, executed: Path, chapters: Sequence[str]) -> list[str]:
    """Write the three files; return the models whose claims the build holds (OWN last)."""
    published: list[Published] = collect(executed, chapters)
    generated.mkdir(parents=True, exist_ok=True)
    models = build_models(published)
    if not models:  # chapters executed before they glued their claim records
        note = ("*No chapter of this build glued its claim records; rerun the chapters to see "
                "this summary.*\n")
        for name in FILES:
            (generated / name).write_text(note if name.endswith(".md") else f"<p>{note}</p>\n")
        return models
    (generated / "abstracts.md").write_text(abstracts.markdown(published))
    (generated / "scorecard_summary.md").write_text(scoreboard.summary(published))
    (generated / "scorecard_claims.html").write_text(scoreboard.interactive(published))
    return models
