"""Every model-taking chapter runs with only `-p model` on other architectures.

Only sample sizes are cut (prompts, twins, compare models); blocks, k and prompt lengths keep
their defaults, which is what this tests: they must resolve for a 3-block, 32-wide model with
a 64-token context as well as for the packaged models. ``make test`` runs the minimum matrix
(each chapter on one non-default architecture and on a checkpoint of the training suite);
``make test-models`` (``pytest --models``) runs every chapter on every model.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from llmdyn.claims.breaks import read_glued
from llmdyn.training import suite

CHAPTERS = ["01_trajectories", "02_geometry_along_depth", "03_uncertainty",
            "04_jacobian_alignment", "05_depth_coupling", "06_token_coupling", "07_regularity",
            "11_spectra_and_prompts"]
MODELS = ["tiny-gpt2", "tiny-llama", "tiny-neox", "tiny-gemma3", "suite-checkpoint",
          "saved-pretrained"]

# Sample sizes only: the fewest prompts, one twin, no compare model.
FEWER = {
    "01_trajectories": {"n_prompts": 1, "twin_seeds": [0]},
    "02_geometry_along_depth": {"n_prompts": 2, "twin_seeds": [0]},
    "03_uncertainty": {"n_prompts": 2, "twin_seeds": [0]},
    "04_jacobian_alignment": {"n_prompts": 2, "n_compare_prompts": 1, "n_lens_prompts": 2,
                              "twin_seeds": [0], "n_seed_prompts": 1},
    "05_depth_coupling": {"n_prompts": 1, "n_compare_prompts": 2, "twin_seeds": [0],
                          "n_seed_prompts": 1},
    "06_token_coupling": {"n_prompts": 1, "twin_seeds": [0]},
    "07_regularity": {"n_per_task": 1, "twin_seeds": [0], "n_seed_prompts": 1},
    "11_spectra_and_prompts": {"n_prompts": 1, "n_compare_prompts": 2, "n_draws": 1,
                               "n_lin_prompts": 1, "n_gsm8k": 3,
                               "n_per_task": 1, "twin_seeds": [0], "n_seed_prompts": 1},
}
# The minimum matrix: the checkpoint, and the architectures in turn (each met at least once).
MINIMUM = {(chapter, model) for chapter, model in zip(
    CHAPTERS, itertools.cycle(["tiny-gpt2", "tiny-neox", "tiny-gemma3", "saved-pretrained"]))}
MINIMUM |= {(chapter, "suite-checkpoint") for chapter in CHAPTERS}


@pytest.fixture(scope="module")
def local_models(tmp_path_factory, corpus_dir):
    """The two local directories: a training-suite checkpoint and a save_pretrained tiny."""
    from llmdyn.models import load_model

    root = tmp_path_factory.mktemp("suite")
    tiny = suite.SUITES["tiny"]
    run = tiny.runs[1]  # t2: 3 blocks, d_model 48 (t1's 2 blocks leave no depth to fit)
    suite.train_suite(tiny, root, runs=[run.name], corpus_dir=corpus_dir, progress=False)
    saved = tmp_path_factory.mktemp("saved") / "tiny-neox-saved"
    m = load_model("tiny-neox", seed=3)
    m.hf.save_pretrained(saved)
    m.tokenizer.save_pretrained(saved)
    return {"suite-checkpoint": str(root / run.name / f"step{tiny.checkpoint_steps()[-1]}"),
            "saved-pretrained": str(saved)}


def _matrix():
    for chapter, model in itertools.product(CHAPTERS, MODELS):
        marks = [pytest.mark.slow] + ([] if (chapter, model) in MINIMUM else
                                      [pytest.mark.models])
        yield pytest.param(chapter, model, marks=marks, id=f"{chapter[:2]}-{model}")


def _run(chapter: str, model: str, local_models: dict, directory) -> None:
    """Run one chapter with only the model given (and sample sizes cut)."""
    from llmdyn.runner.build import run_chapter

    spec = local_models.get(model, model)
    fewer = {"compare_models": [], **FEWER[chapter]} if chapter != "06_token_coupling" else \
        FEWER[chapter]  # chapter 06 has no compare models
    out = run_chapter(chapter, directory / "executed", {"model": spec, **fewer}, cwd=directory)
    ran = json.loads(out.read_text())["metadata"]["papermill"]["parameters"]
    assert ran["model"] == spec, f"{chapter} ran {ran['model']!r}, not {spec!r}"
    # every claim the chapter made on this model carries a grade or the reason it has none
    verdicts = {k: v for k, v in read_glued(out).items() if k.endswith("_verdict")}
    assert verdicts, f"{chapter} on {model}: no claim was glued"
    assert all(isinstance(v, str) and v.strip() for v in verdicts.values()), verdicts


@pytest.fixture(scope="module")
def minimum_runs(local_models, tmp_path_factory):
    """The minimum matrix, two chapters at a time: ``{(chapter, model): exception or None}``.

    Each run is one kernel process that mostly waits on one core, so two side by side take
    about half the time on the 2-core CI machine; every pair is still reported by its own test.
    """
    from concurrent.futures import ThreadPoolExecutor

    def attempt(pair):
        try:
            _run(*pair, local_models, tmp_path_factory.mktemp(f"{pair[0][:2]}-{pair[1]}"))
        except Exception as err:  # reported by the pair's own test below
            return err
        return None

    pairs = sorted(MINIMUM)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(pairs, pool.map(attempt, pairs), strict=True))


@pytest.mark.parametrize("chapter, model", list(_matrix()))
def test_chapter_runs_with_only_the_model_given(chapter, model, request, tmp_path):
    if (chapter, model) in MINIMUM:
        error = request.getfixturevalue("minimum_runs")[(chapter, model)]
        if error is not None:
            raise error
        return
    _run(chapter, model, request.getfixturevalue("local_models"), tmp_path)


# Every family of llmdyn.models.ARCHITECTURES end to end, as a user runs it: its tiny model saved
# with save_pretrained, then `llmdyn measure coupling --model DIR` and the chapter 01 and 05
# smoke runs with `-p model DIR`. The families are read from the records.
FAMILY_CHAPTERS = ["01_trajectories", "05_depth_coupling"]
SMOKE = Path(__file__).resolve().parents[1] / "smoke"


def _family_params():
    from llmdyn.models.architectures import TINY_CONFIGS

    for name in sorted(TINY_CONFIGS):
        yield pytest.param(name, marks=[pytest.mark.slow, pytest.mark.models], id=name)


def _smoke(chapter: str) -> dict:
    import yaml

    params = yaml.safe_load((SMOKE / f"{chapter}.yaml").read_text())
    return {**params, "compare_models": []}  # the family alone


@pytest.mark.parametrize("family", list(_family_params()))
def test_every_family_measures_and_runs_chapters_01_and_05(family, tmp_path, capsys):
    from llmdyn.cli import main
    from llmdyn.models import load_model
    from llmdyn.runner.build import run_chapter
    from llmdyn.sweep import read_result

    saved = tmp_path / family
    m = load_model(family, seed=3)
    m.hf.save_pretrained(saved)
    m.tokenizer.save_pretrained(saved)
    out = tmp_path / "coupling.json"
    assert main(["measure", "coupling", "--model", str(saved), "--out", str(out), "--k", "4",
                 "--n-per-task", "1", "--tasks", "mmlu", "--max-chars", "40", "--no-cache"]) == 0
    result = read_result(out)
    assert result.model["routes"] == m.identity["routes"], family  # recorded in provenance
    for chapter in FAMILY_CHAPTERS:
        executed = run_chapter(chapter, tmp_path / "executed", {**_smoke(chapter),
                                                                 "model": str(saved)},
                               cwd=tmp_path)
        verdicts = {k: v for k, v in read_glued(executed).items() if k.endswith("_verdict")}
        assert verdicts and all(isinstance(v, str) and v.strip() for v in verdicts.values())
