"""Where a build's time went: CPU seconds per job kind and each chapter's hot cells.

Read from the build's own records, never re-measured:

- Snakemake's ``benchmark:`` files, ``logs/benchmarks/<rule>/<wildcards joined by '.'>.tsv``
  (its standard TSV: ``s``, ``h:m:s``, ``max_rss``, …, ``cpu_time``), one per job;
- papermill's cell records in ``book/executed/*.ipynb`` (``metadata.papermill.duration``, wall
  seconds of each cell, and the notebook's own);
- the training runs' ``run.json`` (``wall_s``: seconds of optimizer updates, summed over
  resumes) under ``results/suite`` and ``results/vit``, for runs a benchmark file does not
  cover (trained by an earlier build or outside the workflow).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from llmdyn.core.escape import Md, markdown_code
from llmdyn.core.tables import markdown_table

BENCHMARKS = Path("logs") / "benchmarks"
HOT_CELLS = 3  # cells listed per chapter


@dataclass(frozen=True)
class Job:
    """One job's benchmark record.

    Attributes:
        kind: the rule's name (``chapter``, ``train_run``, ``vit_run``, ``html``, …).
        name: its wildcard values joined by '.' (the file's stem).
        wall_s: wall-clock seconds (Snakemake's ``s``).
        cpu_s: CPU seconds of the job's processes (``cpu_time``; None when not recorded).
        max_rss_mb: peak resident memory in MB (None when not recorded).
    """

    kind: str
    name: str
    wall_s: float
    cpu_s: float | None
    max_rss_mb: float | None


@dataclass(frozen=True)
class Cell:
    """One executed code cell: its chapter, index, first line and papermill's wall seconds."""

    chapter: str
    index: int
    first_line: str
    seconds: float


def _number(value: str | None) -> float | None:
    """A TSV field as a float; Snakemake writes ``NA`` or ``-`` where it measured nothing."""
    try:
        return float(value) if value not in (None, "", "NA", "-") else None
    except ValueError:
        return None


def read_benchmarks(root: Path) -> list[Job]:
    """Every job's record under ``root/logs/benchmarks`` (the last row of each file).

    A job that ran again (``--rerun-triggers``, a repeat benchmark) appends rows or rewrites its
    file; the last row is that job's latest run.
    """
    jobs = []
    for path in sorted((Path(root) / BENCHMARKS).glob("*/*.tsv")):
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        if not rows:
            continue
        row = rows[-1]
        wall = _number(row.get("s"))
        jobs.append(Job(kind=path.parent.name, name=path.stem, wall_s=wall or 0.0,
                        cpu_s=_number(row.get("cpu_time")),
                        max_rss_mb=_number(row.get("max_rss"))))
    return jobs


def read_cells(executed: Path) -> list[Cell]:
    """Every code cell's papermill duration in the executed notebooks, in notebook order."""
    cells = []
    for nb in sorted(Path(executed).glob("*.ipynb")):
        notebook = json.loads(nb.read_text())
        for i, cell in enumerate(notebook.get("cells", [])):
            seconds = cell.get("metadata", {}).get("papermill", {}).get("duration")
            if cell.get("cell_type") != "code" or seconds is None:
                continue
            source = "".join(cell.get("source", ""))
            first = next((line.strip() for line in source.splitlines()
                          if line.strip() and not line.lstrip().startswith("#")), "")
            cells.append(Cell(nb.stem, i, first, float(seconds)))
    return cells


def read_training(results: Path) -> dict[str, list[tuple[str, float]]]:
    """``{"train_run" | "vit_run": [(run, wall_s of updates)]}`` from the runs' ``run.json``.

    A ViT is named as its benchmark file names it, ``<grid>.<data set>.<run>``.
    """
    found: dict[str, list[tuple[str, float]]] = {"train_run": [], "vit_run": []}
    for kind, pattern in (("train_run", "suite/*/run.json"), ("vit_run", "vit/*/*/*/run.json")):
        for path in sorted(Path(results).glob(pattern)):
            try:
                wall = float(json.loads(path.read_text())["wall_s"])
            except (ValueError, KeyError, TypeError):
                continue
            name = ".".join(path.parent.parts[-3:]) if kind == "vit_run" else path.parent.name
            found[kind].append((name, wall))
    return found


@dataclass(frozen=True)
class KindTotal:
    """One job kind's totals: jobs, CPU and wall seconds, and where the figures came from."""

    kind: str
    jobs: int
    cpu_s: float | None
    wall_s: float
    source: str


def kind_totals(jobs: Sequence[Job], training: dict[str, list[tuple[str, float]]]
                ) -> list[KindTotal]:
    """Totals per job kind, most CPU first.

    Training runs that no benchmark file covers come from their ``run.json``: wall seconds of
    updates on one thread, with no CPU figure.
    """
    out = []
    for kind in sorted({j.kind for j in jobs}):
        mine = [j for j in jobs if j.kind == kind]
        cpu = [j.cpu_s for j in mine if j.cpu_s is not None]
        out.append(KindTotal(kind, len(mine), sum(cpu) if cpu else None,
                             sum(j.wall_s for j in mine), "benchmark"))
    for kind, runs in training.items():
        # A benchmark file is named after the job's wildcards joined by dots, the run last
        # (``default.fashion-mnist.sd0-wd0.125-seed0``); run names hold dots of their own.
        # A grid's job (rule vit_grid, ``default.fashion-mnist``) covers each of its runs.
        names = [j.name for j in jobs if j.kind == kind]
        grids = [f"{j.name}." for j in jobs if j.kind == "vit_grid" and kind == "vit_run"]
        rest = [(run, s) for run, s in runs
                if not any(n == run or n.endswith(f".{run}") for n in names)
                and not run.startswith(tuple(grids))]
        if rest:
            out.append(KindTotal(f"{kind} (no benchmark)", len(rest), None,
                                 sum(s for _, s in rest), "run.json"))
    return sorted(out, key=lambda t: -(t.cpu_s if t.cpu_s is not None else t.wall_s))


def _code(line: str, width: int = 40) -> str:
    """A cell's first line, shortened, safe inside a Markdown table's inline code."""
    return line[:width].replace("|", "/").replace("`", "'")


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def render(jobs: Sequence[Job], cells: Sequence[Cell],
           training: dict[str, list[tuple[str, float]]]) -> str:
    """Markdown: CPU seconds per job kind, then each chapter's time and its hottest cells."""
    totals = kind_totals(jobs, training)
    cpus = [t.cpu_s for t in totals if t.cpu_s is not None]
    cpu_all = sum(cpus) if cpus else None  # None: no job recorded its CPU time
    numbers = {"jobs": "right", "CPU s": "right", "share of CPU": "right",
               "wall s (summed over jobs)": "right"}
    rows = [{"job kind": t.kind, "jobs": t.jobs, "CPU s": _seconds(t.cpu_s),
             "share of CPU": f"{t.cpu_s / cpu_all:.0%}" if t.cpu_s is not None and cpu_all
             else "–", "wall s (summed over jobs)": _seconds(t.wall_s), "from": t.source}
            for t in totals]
    if totals:
        rows.append({"job kind": Md("**all**"), "jobs": sum(t.jobs for t in totals),
                     "CPU s": Md(f"**{_seconds(cpu_all)}**"), "share of CPU": "",
                     "wall s (summed over jobs)": _seconds(sum(t.wall_s for t in totals)),
                     "from": ""})
        lines = [markdown_table(rows, align=numbers)]
    else:
        lines = ["No benchmark files or training records were found for this build."]
    chapter_cpu = {j.name: j.cpu_s for j in jobs if j.kind == "chapter"}
    chapters = sorted({c.chapter for c in cells},
                      key=lambda ch: -sum(c.seconds for c in cells if c.chapter == ch))
    rows = []
    for ch in chapters:
        mine = [c for c in cells if c.chapter == ch]
        hot = sorted(mine, key=lambda c: -c.seconds)[:HOT_CELLS]
        rows.append({"chapter": ch, "cells s (papermill)": f"{sum(c.seconds for c in mine):,.0f}",
                     "CPU s (benchmark)": _seconds(chapter_cpu.get(ch)),
                     "hottest cells (s)": Md("; ".join(
                         f"[{c.index}] {markdown_code(_code(c.first_line))} {c.seconds:.0f}"
                         for c in hot))})
    if rows:
        lines += ["", markdown_table(rows, align={"cells s (papermill)": "right",
                                                  "CPU s (benchmark)": "right"})]
    return "\n".join(lines) + "\n"


def _ratio(before: float | None, after: float | None) -> str:
    return "–" if not before or after is None else f"{after / before:.2f}"


def _right(rows: list[dict]) -> dict[str, str]:
    """Every column but the first aligned right (the numbers)."""
    return {column: "right" for column in list(rows[0])[1:]}


def _kind_rows(before: Sequence[Job], after: Sequence[Job]) -> list[dict]:
    """One row per job kind (most CPU first, either build), then the total."""
    totals = [{t.kind: t for t in kind_totals(jobs, {})} for jobs in (before, after)]
    kinds = sorted(set(totals[0]) | set(totals[1]),
                   key=lambda k: -max(side[k].cpu_s or 0 for side in totals if k in side))

    def row(label: str, jobs: list[int], cpu: list[float | None]) -> dict:
        return {"job kind": label, "jobs before": jobs[0], "jobs after": jobs[1],
                "CPU s before": _seconds(cpu[0]), "CPU s after": _seconds(cpu[1]),
                "after / before": _ratio(cpu[0], cpu[1])}

    rows = [row(k, [side[k].jobs if k in side else 0 for side in totals],
                [side[k].cpu_s if k in side else None for side in totals]) for k in kinds]
    rows.append(row(Md("**all**"), [sum(t.jobs for t in side.values()) for side in totals],
                    [sum(t.cpu_s or 0 for t in side.values()) for side in totals]))
    return rows


def _chapter_rows(before: Sequence[Job], after: Sequence[Job]) -> list[dict]:
    """One row per chapter, the baseline's heaviest first."""
    cpu = [{j.name: j.cpu_s for j in jobs if j.kind == "chapter"} for jobs in (before, after)]
    chapters = sorted(set(cpu[0]) | set(cpu[1]), key=lambda c: -(cpu[0].get(c) or 0))
    return [{"chapter": c, "CPU s before": _seconds(cpu[0].get(c)),
             "CPU s after": _seconds(cpu[1].get(c)),
             "after / before": _ratio(cpu[0].get(c), cpu[1].get(c))} for c in chapters]


def compare(before: Path, after: Path) -> str:
    """Markdown: two builds side by side, CPU seconds per job kind and per chapter, with ratios.

    Both are read from their benchmark files, as :func:`report` reads one build; a kind or a
    chapter that one build lacks shows "–" there.
    """
    jobs = read_benchmarks(Path(before)), read_benchmarks(Path(after))
    kinds, chapters = _kind_rows(*jobs), _chapter_rows(*jobs)
    text = markdown_table(kinds, align=_right(kinds))
    if chapters:
        text += "\n\n" + markdown_table(chapters, align=_right(chapters))
    return text + "\n"


def report(root: Path) -> str:
    """The tables for the build in ``root`` (a checkout after ``make book``)."""
    root = Path(root)
    return render(read_benchmarks(root), read_cells(root / "book" / "executed"),
                  read_training(root / "results"))
