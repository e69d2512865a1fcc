"""One model per book: the workflow's model wins over a params file's, and a second model
rebuilds every chapter (issue 25, items 8 and the `--model` rule)."""

from __future__ import annotations

import json
import re

import pytest

from llmdyn.runner.workflow import run_workflow

SMOKE = {"chapter_params": "tests/smoke"}  # every file there says `model: tiny-llama`
BOTH = ["04_jacobian_alignment", "05_depth_coupling"]


def _planned_models(tmp_path, **kwargs) -> dict[str, str]:
    """Chapter -> model of each chapter job a dry run lists."""
    out = run_workflow(chapters=BOTH, directory=tmp_path, dry_run=True, **kwargs)
    return dict(re.findall(r"Chapter (\S+) with model (\S+) \(papermill\)", out))


def test_the_workflow_model_wins_over_a_params_file_model(tmp_path):
    # The rule: the workflow's model (--model, make book MODEL=, --config model=) if set, else
    # the params file's `model:`, else the chapters' default (smollm2-135m).
    assert _planned_models(tmp_path, model="tiny-gpt2", config=SMOKE) == dict.fromkeys(
        BOTH, "tiny-gpt2")  # the params files said tiny-llama: it used to win
    assert _planned_models(tmp_path, config={**SMOKE, "model": "tiny-neox"}) == dict.fromkeys(
        BOTH, "tiny-neox")
    assert _planned_models(tmp_path, config=SMOKE) == dict.fromkeys(BOTH, "tiny-llama")
    assert _planned_models(tmp_path) == dict.fromkeys(BOTH, "smollm2-135m")


def _executed_model(directory, chapter: str) -> str:
    meta = json.loads((directory / "book" / "executed" / f"{chapter}.ipynb").read_text())
    return meta["metadata"]["papermill"]["parameters"]["model"]


@pytest.mark.slow
def test_a_second_model_rebuilds_every_chapter_and_leaves_nothing_to_do(tmp_path):
    # `make book MODEL=gemma3-270m` after the default build reran 04 but left 05 on the first
    # model: 05's link to 04 was ancient(), and Snakemake skipped 05's own params change.
    for model in ("tiny-llama", "tiny-gpt2"):
        run_workflow(chapters=BOTH, model=model, config=SMOKE, directory=tmp_path, cores=2)
        assert {c: _executed_model(tmp_path, c) for c in BOTH} == dict.fromkeys(BOTH, model)
    again = run_workflow(chapters=BOTH, model="tiny-gpt2", config=SMOKE, directory=tmp_path,
                         dry_run=True)
    assert "Nothing to be done" in again, again
