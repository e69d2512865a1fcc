"""`llmdyn workflow`'s options as `run_workflow` gets them: --rerun, --keep-going, --config."""

from __future__ import annotations

import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.cli import workflow as workflow_command


@pytest.fixture
def calls(monkeypatch):
    """Each `run_workflow` call's keyword arguments, instead of running Snakemake."""
    seen = []
    monkeypatch.setattr(workflow_command, "run_workflow", lambda **kw: seen.append(kw))
    return seen


def test_rerun_names_chapters_rules_or_files_and_nothing_else(calls):
    assert main(["workflow", "-n", "--rerun", "05_depth_coupling", "train_run"]) == 0
    assert calls[-1]["extra"] == ["--forcerun", "book/executed/05_depth_coupling.ipynb",
                                  "train_run"]
    assert main(["workflow", "-n", "--keep-going"]) == 0
    assert calls[-1]["extra"] == ["--keep-going"]
    assert main(["workflow", "-n", "--rerun", "05_depth_couplng"]) == 2  # a typo: refused
    with pytest.raises(SystemExit):  # argparse: an option, not a name
        main(["workflow", "-n", "--rerun", "--delete-all-output"])


def test_options_reach_run_workflow_typed(calls, tmp_path):
    assert main(["workflow", "measure_all", "-n", "--model", "tiny-llama",
                 "--only", "05_depth_coupling", "--cores", "3", "--directory", str(tmp_path),
                 "--config", "seed=2",
                 "chapter_params=tests/smoke", "--set-resources", "chapter:mem_mb=8000",
                 "--resources", "gpu=1"]) == 0
    assert calls[-1] == dict(model="tiny-llama", profile=None, chapters=["05_depth_coupling"],
                             targets=["measure_all"], cores=3,
                             config={"seed": 2, "chapter_params": "tests/smoke"},
                             directory=tmp_path, dry_run=True,
                             set_resources=["chapter:mem_mb=8000"], resources=["gpu=1"],
                             extra=[])


def test_config_values_read_json_and_refuse_an_item_without_a_value():
    assert workflow_command.config_values(["a=1", "b=[1, 2]", "c=text", "d="]) == {
        "a": 1, "b": [1, 2], "c": "text", "d": ""}
    with pytest.raises(LlmdynError, match="--config takes KEY=VALUE, got 'foo'"):
        workflow_command.config_values(["foo"])
