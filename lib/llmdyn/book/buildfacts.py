"""The facts of one book build, for the landing page: model, date, llmdyn version, run time.

They are read, just before the HTML build, from what papermill recorded in each executed
chapter (``metadata.papermill``: parameters, start and end times, duration), so the landing
page can never show numbers from another run.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from llmdyn import LlmdynError, __version__
from llmdyn.core.escape import markdown_code, markdown_text


class BuildFacts(NamedTuple):
    """What the landing page states about the build."""

    models: list[str]  # the `model` parameter of the chapters, distinct, in book order
    chapters: int  # number of executed chapters
    started: dt.datetime  # first chapter's start (UTC)
    finished: dt.datetime  # last chapter's end (UTC)
    run_seconds: float  # sum of the chapters' papermill durations
    built: dt.datetime  # when the HTML build began (UTC)
    version: str  # llmdyn's version


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.timezone.utc)


def collect(executed: Path, chapters: Sequence[str], *,
            now: dt.datetime | None = None) -> BuildFacts:
    """Read the build facts from the executed chapters ``<executed>/<chapter>.ipynb``."""
    import nbformat

    models, starts, ends, total = [], [], [], 0.0
    for name in chapters:
        path = executed / f"{name}.ipynb"
        if not path.exists():
            raise LlmdynError(f"chapter {name} is not executed ({path} is missing); run it "
                              "before building the book")
        meta = nbformat.read(path, as_version=4).metadata.get("papermill", {})
        if not meta.get("end_time"):
            raise LlmdynError(f"{path} has no papermill end time: it did not finish; rerun it")
        model = str(meta.get("parameters", {}).get("model", "the notebook's default model"))
        models += [model] if model not in models else []
        starts.append(_time(meta["start_time"]))
        ends.append(_time(meta["end_time"]))
        total += float(meta.get("duration") or 0.0)
    if not chapters:
        raise LlmdynError("no chapters to describe; _toc.yml lists none")
    return BuildFacts(models, len(chapters), min(starts), max(ends), total,
                      now or dt.datetime.now(dt.timezone.utc), __version__)


def _duration(seconds: float) -> str:
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {sec:02d} s"


def render(facts: BuildFacts, *, measured: Sequence[str] = ()) -> str:
    """The facts as a MyST admonition for the top of the landing page.

    ``measured``: the models whose claims the build holds (the columns of the intro's tables).
    """
    models = ", ".join(markdown_code(m) for m in facts.models)
    columns = (f" Its claims are about {_and([f'**{markdown_text(m)}**' for m in measured])}; the "
               "tables below have one column for each.") if measured else ""
    span = (facts.finished - facts.started).total_seconds()
    return (
        ":::{admonition} This build\n:class: tip\n\n"
        f"Built for **{models}** with llmdyn **{facts.version}** on "
        f"{facts.built:%Y-%m-%d %H:%M} UTC. Its {facts.chapters} "
        f"chapter{'s' if facts.chapters != 1 else ''} ran from "
        f"{facts.started:%Y-%m-%d %H:%M} to {facts.finished:%Y-%m-%d %H:%M} UTC: "
        f"{_duration(facts.run_seconds)} of notebook execution in all "
        f"({_duration(span)} from the first start to the last end; measurements already "
        "cached under `results/` were loaded, not recomputed)."
        f"{columns}\n:::\n")


def _and(items: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 2 else items)
