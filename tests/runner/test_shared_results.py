"""Two directories sharing one results root never keep a measurement of other parameters."""

from __future__ import annotations

import json

import pytest

from llmdyn.runner import workflow
from llmdyn.sweep.job import MeasureParams, result_path


@pytest.fixture
def snakemake_command(monkeypatch):
    """The Snakemake command a run would start (nothing runs)."""
    started = []

    def record(cmd, cwd, lock, watch):
        started.append(cmd)
        return "", 0, ""

    monkeypatch.setattr(workflow, "_run_snakemake", record)
    return started


def measured(k: int):
    """A result file under the shared root, measured with ``k`` (as `llmdyn measure` writes it)."""
    path = result_path("tiny-llama")
    path.parent.mkdir(parents=True, exist_ok=True)
    params = MeasureParams(k=k, n_per_task=2, tasks=("gsm8k",), max_chars=60).as_dict()
    path.write_text(json.dumps({"params": params}))
    return path


def run(tmp_path, k: int) -> None:
    (tmp_path / "second").mkdir(exist_ok=True)
    workflow.run_workflow(targets=["measure_all"], directory=tmp_path / "second", dry_run=True,
                          config={"measure_models": ["tiny-llama"],
                                  "measure": {"k": k, "n_per_task": 2, "tasks": ["gsm8k"],
                                              "max_chars": 60}})


def test_another_k_in_another_directory_measures_again(tmp_path, monkeypatch, snakemake_command):
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path / "shared"))  # one absolute root
    path = measured(k=4)
    run(tmp_path, k=8)
    cmd = snakemake_command[-1]
    assert cmd[cmd.index("--forcerun") + 1] == path.as_posix()
    run(tmp_path, k=4)  # the same parameters: Snakemake's own rules decide
    assert "--forcerun" not in snakemake_command[-1]


def test_no_result_yet_forces_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path / "shared"))
    config = workflow.check_config(workflow.merged_config({"measure_models": ["tiny-llama"]}))
    assert workflow.stale_measurements(config, tmp_path) == []
