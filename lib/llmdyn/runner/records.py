"""The record a chapter's workflow job leaves beside its notebook: a file other chapters wait on.

Chapter 04 caches the last-token Jacobians of its SQuAD questions in the results store, and
chapters 05 and 11 read them (the same draw, ``llmdyn.data.question_texts``), so the workflow
runs them after 04. They take 04's record as input, not its executed notebook, which is the
HTML's: a chapter takes as input only what stands for what it reads, and only the chapter's own
job writes its record. The record holds the chapter and the parameters it
ran with, so a rerun with the same parameters writes the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmdyn.core.atomic import atomic_write
from llmdyn.core.paths import results_root
from llmdyn.runner.digest import file_digest

__all__ = ["grid_record_current", "record_path", "write_grid_record", "write_record"]


def record_path(chapter: str, root: str | Path | None = None) -> str:
    """``<results root>/chapters/<chapter>.json`` (the root: `results_root`, or ``root``)."""
    base = Path(root if root is not None else results_root()).as_posix()
    return f"{base}/chapters/{chapter}.json"


def write_record(chapter: str, parameters: dict[str, Any], directory: Path) -> Path:
    """Write ``chapter``'s record (atomically) and return its path.

    It goes under the results root, taken relative to ``directory`` where the root is relative.
    """
    path = Path(directory) / record_path(chapter)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"chapter": chapter, "parameters": parameters}, indent=1, sort_keys=True)
    atomic_write(path, lambda f: f.write((text + "\n").encode()))
    return path


def write_grid_record(path: Path, grid: str, dataset: str | None,
                      run_dirs: list[Path]) -> dict[str, Any]:
    """Write a ViT grid's record (rule ``vit_grid``'s output, atomically) and return it.

    ``{"grid", "dataset", "runs": {run: digest of its run.json}}``: the job's only output, so a
    failed job deletes no finished run (the training loop skips those when it runs again).
    """
    runs = {d.name: file_digest(d / "run.json") for d in run_dirs}
    summary = {"grid": grid, "dataset": dataset, "runs": runs}
    atomic_write(Path(path), lambda f: f.write(json.dumps(summary, indent=1).encode()))
    return summary


def grid_record_current(path: Path, *, remove: bool = False) -> bool:
    """Whether a ViT grid's record (:func:`write_grid_record`) still describes its runs.

    A run deleted or retrained since makes it stale; with ``remove`` a stale record is deleted,
    so that the workflow plans the grid's job again (which trains only what is missing) and
    chapter 10 reruns after it. Reads no torch.
    """
    try:
        runs = json.loads(path.read_text())["runs"]
        current = all(file_digest(path.parent / run / "run.json") == digest
                      for run, digest in runs.items())  # a missing run: MISSING ≠ digest
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        current = False
    if not current and remove:
        path.unlink(missing_ok=True)
    return current
