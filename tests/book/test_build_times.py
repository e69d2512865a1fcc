"""The time-by-job report on a fabricated build whose totals are known."""

import json
import subprocess
import sys
from pathlib import Path

from llmdyn.book import buildtimes

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _tsv(root: Path, rule: str, name: str, *rows: tuple[float, float]) -> None:
    path = root / "logs" / "benchmarks" / rule / f"{name}.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join(f"{s}\t0:00:00\t512.5\t900\t400\t450\t1\t2\t90.0\t{cpu}\n"
                                     for s, cpu in rows))


def _notebook(root: Path, chapter: str, durations: list[float | None]) -> None:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# title"}]
    cells += [{"cell_type": "code", "metadata": ({"papermill": {"duration": d}} if d is not None
                                                 else {}),
               "source": [f"# comment\nstep_{i} = {i}\n"], "outputs": []}
              for i, d in enumerate(durations)]
    path = root / "book" / "executed" / f"{chapter}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))


def _run(root: Path, *parts: str, wall: float) -> None:
    path = root.joinpath("results", *parts, "run.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"checkpoints": [0, 10], "wall_s": wall, "tokens_per_s": 1.0}))


def _build(root: Path) -> Path:
    _tsv(root, "chapter", "04_jacobian_alignment", (500.0, 1.0), (462.5, 450.25))  # a rerun
    _tsv(root, "chapter", "07_regularity", (340.0, 330.5))
    _tsv(root, "train_run", "s-w64", (100.0, 98.0))
    _tsv(root, "vit_run", "small.fashion-mnist.sd0-wd0.125", (60.0, 59.0))
    _tsv(root, "html", "NA", (30.0, 25.0))
    _notebook(root, "04_jacobian_alignment", [1.0, 440.0, None, 12.0, 3.0])
    _notebook(root, "07_regularity", [2.0, 300.0])
    _run(root, "suite", "s-w64", wall=90.0)  # covered by its benchmark file
    _run(root, "suite", "s-w128", wall=200.0)  # trained before: no benchmark
    _run(root, "vit", "small", "fashion-mnist", "sd0-wd0.125", wall=50.0)  # a dot in its name
    return root


def test_a_grid_job_covers_its_runs(tmp_path):
    # rule vit_grid trains a grid in one job: its runs are in its benchmark, not in a row of
    # their own; a run of another grid still is
    _tsv(tmp_path, "vit_grid", "small.fashion-mnist", (700.0, 650.0))
    _run(tmp_path, "vit", "small", "fashion-mnist", "sd0-wd0.125", wall=50.0)
    _run(tmp_path, "vit", "small", "fashion-mnist", "sd0.1-wd0.5", wall=40.0)
    _run(tmp_path, "vit", "large", "fashion-mnist", "sd0-wd0.125", wall=30.0)
    by = {t.kind: t for t in buildtimes.kind_totals(buildtimes.read_benchmarks(tmp_path),
                                                    buildtimes.read_training(tmp_path / "results"))}
    assert (by["vit_grid"].jobs, by["vit_grid"].cpu_s) == (1, 650.0)
    assert (by["vit_run (no benchmark)"].jobs, by["vit_run (no benchmark)"].wall_s) == (1, 30.0)


def test_totals_by_kind_and_hot_cells(tmp_path):
    root = _build(tmp_path)
    jobs = buildtimes.read_benchmarks(root)
    by = {t.kind: t for t in buildtimes.kind_totals(jobs, buildtimes.read_training(
        root / "results"))}
    assert by["chapter"].jobs == 2 and by["chapter"].cpu_s == 450.25 + 330.5  # last rows only
    assert by["chapter"].wall_s == 462.5 + 340.0
    assert (by["train_run"].cpu_s, by["vit_run"].cpu_s, by["html"].cpu_s) == (98.0, 59.0, 25.0)
    rest = by["train_run (no benchmark)"]
    assert (rest.jobs, rest.cpu_s, rest.wall_s, rest.source) == (1, None, 200.0, "run.json")
    assert "vit_run (no benchmark)" not in by  # its one run has a benchmark file
    cells = buildtimes.read_cells(root / "book" / "executed")
    assert [(c.chapter, c.index, c.seconds) for c in cells if c.chapter == "07_regularity"] == [
        ("07_regularity", 1, 2.0), ("07_regularity", 2, 300.0)]
    assert cells[0].first_line == "step_0 = 0"  # the comment line is skipped
    text = buildtimes.report(root)
    assert "| **all** | 6 | **963** |" in text  # 450.25 + 330.5 + 98 + 59 + 25 = 962.75
    assert "| chapter | 2 | 781 | 81% |" in text
    assert "| 04_jacobian_alignment | 456 | 450 | [2] `step_1 = 1` 440; [4] `step_3 = 3` 12" in text
    lines = text.splitlines()
    assert lines.index(next(x for x in lines if x.startswith("| 04_"))) < lines.index(
        next(x for x in lines if x.startswith("| 07_")))  # the longer chapter first


def test_an_empty_build_says_so(tmp_path):
    text = buildtimes.report(tmp_path)
    assert text.startswith("No benchmark files or training records")


def test_the_tool_prints_and_writes_the_table(tmp_path):
    root, out = _build(tmp_path / "b"), tmp_path / "t.md"
    tool = Path(__file__).resolve().parents[2] / "tools" / "build_times.py"
    done = subprocess.run([sys.executable, str(tool), str(root), "--out", str(out)],
                          capture_output=True, text=True, check=True)
    assert done.stdout == out.read_text() == buildtimes.report(root)


def test_a_build_without_benchmark_files_shows_no_cpu_total(tmp_path):
    _run(tmp_path, "vit", "small", "digits", "a", wall=12.0)
    text = buildtimes.report(tmp_path)
    assert "| vit_run (no benchmark) | 1 | – | – | 12 | run.json |" in text
    assert "| **all** | 1 | **–** |" in text


def test_two_builds_side_by_side_with_ratios(tmp_path):
    before = _build(tmp_path / "before")
    after = tmp_path / "after"
    _tsv(after, "chapter", "04_jacobian_alignment", (300.0, 225.125))  # half of 450.25
    _tsv(after, "train_run", "s-w64", (100.0, 98.0))
    _tsv(after, "convert", "smollm2-135m", (40.0, 39.0))  # a kind the baseline lacks
    text = buildtimes.compare(before, after)
    assert "| chapter | 2 | 1 | 781 | 225 | 0.29 |" in text  # (225.125) / (450.25 + 330.5)
    assert "| train_run | 1 | 1 | 98 | 98 | 1.00 |" in text
    assert "| convert | 0 | 1 | – | 39 | – |" in text
    assert "| **all** | 5 | 3 | 963 | 362 | 0.38 |" in text  # 362.125 / 962.75
    assert "| 04_jacobian_alignment | 450 | 225 | 0.50 |" in text
    assert "| 07_regularity | 330 | – | – |" in text  # 330.5 rounds to even
