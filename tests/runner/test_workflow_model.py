"""One model per book: the workflow's model wins over a params file's (the `--model`
rule). That a second model rebuilds every chapter, and a third build the first model's book again
with nothing left to do, is tested with the HTML in tests/runner/test_book_models.py."""

from __future__ import annotations

import re

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


def test_the_compare_models_of_a_book_on_gemma_are_the_other_packaged_models(tmp_path):
    # On Gemma, chapter 05's fixed list [gemma3-270m] compared Gemma with itself;
    # relative to the model it is SmolLM2, converted by its own job before the chapter runs
    out = run_workflow(chapters=["05_depth_coupling"], model="gemma3-270m", directory=tmp_path,
                       dry_run=True)
    assert re.search(r"Chapter 05_depth_coupling with model gemma3-270m .*\nReason: [^\n]*"
                     r"results/models/smollm2-135m.json", out), out


def test_an_edited_tokenizer_file_of_a_local_model_reruns_its_chapters(tmp_path, monkeypatch):
    # The workflow's inputs are the files the model's identity hashes
    # (llmdyn.models.files.checkpoint_files): merges.txt as much as the weights.
    from llmdyn.models import load_model

    model = tmp_path / "model"
    m = load_model("tiny-llama")
    m.hf.save_pretrained(model)
    m.tokenizer.save_pretrained(model)
    (model / "merges.txt").write_text("#version: 0.2\n")
    directory = tmp_path / "book"
    directory.mkdir()
    monkeypatch.delenv("LLMDYN_RESULTS", raising=False)  # results under the directory
    run = {"model": str(model), "directory": directory,
           "targets": ["results/sources/05_depth_coupling.sha256"]}  # the chapter's input digest
    run_workflow(**run)
    assert "Nothing to be done" in run_workflow(**run, dry_run=True)
    (model / "merges.txt").write_text("#version: 0.2\na b\n")
    assert "Digest the sources of chapter 05_depth_coupling" in run_workflow(**run, dry_run=True)
