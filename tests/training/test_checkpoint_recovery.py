"""A deleted or corrupt checkpoint is rebuilt by the next run, exactly."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil

import pytest

from llmdyn import LlmdynError
from llmdyn.training import loop as training
from llmdyn.training import suite
from llmdyn.training.checkpoints import suite_checkpoints
from llmdyn.vision import coupling as vit_coupling
from llmdyn.vision import grids as vit
from tests.vision.test_images import write_fashion_mnist

TINY = suite.SUITES["tiny"]
RUN = TINY.runs[0]


@pytest.fixture(scope="module")
def reference(tmp_path_factory, corpus_dir):
    """One tiny run trained without interruption: its weights' digests per step."""
    root = tmp_path_factory.mktemp("ref")
    suite.train_suite(TINY, root, runs=[RUN.name], corpus_dir=corpus_dir, progress=False)
    return {s: training.read_metrics(root / RUN.name / f"step{s}")["weights_sha256"]
            for s in TINY.checkpoint_steps()}


def _train(root, corpus_dir):
    return suite.train_suite(TINY, root, runs=[RUN.name], corpus_dir=corpus_dir,
                             progress=False)


def train_killed_at_step(root, corpus_dir, monkeypatch, step: int = 6) -> None:
    """Train the tiny run until a KeyboardInterrupt at ``step`` (a kill between checkpoints)."""
    real_batch = suite.LanguageModelTask.batch

    def dies(self, at):
        if at == step:
            raise KeyboardInterrupt
        return real_batch(self, at)

    monkeypatch.setattr(suite.LanguageModelTask, "batch", dies)
    with pytest.raises(KeyboardInterrupt):
        _train(root, corpus_dir)
    monkeypatch.setattr(suite.LanguageModelTask, "batch", real_batch)


def _digests(run_dir):
    return {s: training.read_metrics(run_dir / f"step{s}")["weights_sha256"]
            for s in TINY.checkpoint_steps()}


def test_deleted_checkpoint_is_rebuilt_from_step_0(tmp_path, corpus_dir, reference, caplog):
    _train(tmp_path, corpus_dir)
    run_dir = tmp_path / RUN.name
    shutil.rmtree(run_dir / "step4")  # what the old message told the user to do
    with pytest.raises(LlmdynError, match="rebuilds this checkpoint by retraining the run from "
                                          r"its newest checkpoint that resumes exactly"):
        training.read_metrics(run_dir / "step4")
    with caplog.at_level(logging.WARNING, logger="llmdyn.training.loop"):
        _train(tmp_path, corpus_dir)  # exited 0 with step4 still missing before
    assert "step4 missing or corrupt" in caplog.text
    assert "retraining the run from step 0" in caplog.text
    assert _digests(run_dir) == reference  # bitwise the uninterrupted run
    assert (run_dir / "run.json").exists()
    assert not list(run_dir.glob(f"step*/{training.OPTIMIZER}"))
    assert [c.step for c in suite_checkpoints([str(run_dir / "step4")])] == [4]


def test_corrupt_checkpoint_is_rebuilt(tmp_path, corpus_dir, reference):
    _train(tmp_path, corpus_dir)
    weights = tmp_path / RUN.name / "step2" / training.WEIGHTS
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0x01
    weights.write_bytes(bytes(data))
    _train(tmp_path, corpus_dir)
    assert _digests(tmp_path / RUN.name) == reference


def test_killed_run_resumes_before_its_first_bad_checkpoint(tmp_path, corpus_dir, reference,
                                                           monkeypatch):
    train_killed_at_step(tmp_path, corpus_dir, monkeypatch)
    run_dir = tmp_path / RUN.name
    assert (run_dir / "step4" / training.OPTIMIZER).exists()  # resume state at step 4
    shutil.rmtree(run_dir / "step2")  # ... but step 2 is gone: resuming at 4 never rebuilds it
    assert training._latest(run_dir, before=2) is None
    _train(tmp_path, corpus_dir)
    assert _digests(run_dir) == reference


# --- ViTs: chapter 10 measures the grid's final step, never another -------------------------

TINY_GRID = dataclasses.replace(vit.GRIDS["tiny"], drop_paths=(0.0,), weight_decays=(0.01,))
FINAL_ONLY = dataclasses.replace(TINY_GRID, name="tiny-final", checkpoints=None)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Fake Fashion-MNIST files, as in test_vit."""
    return str(write_fashion_mnist(tmp_path_factory.mktemp("fmnist"), n_train=300, n_test=80))


@pytest.mark.parametrize("grid", [TINY_GRID, FINAL_ONLY], ids=["steps-0-3-6", "final-only"])
def test_vit_final_checkpoint_deleted_is_refused_then_rebuilt(grid, tmp_path, dataset):
    vit.train_grid(grid, tmp_path, dataset=dataset, progress=False)
    run_dir = tmp_path / grid.runs[0].name
    final = run_dir / f"step{grid.steps}"
    before = training.read_metrics(final)["weights_sha256"]
    shutil.rmtree(final)
    # the tiny grid silently used step3 as "final", the default grid raised a raw ValueError
    with pytest.raises(LlmdynError, match=f"final checkpoint step{grid.steps} is missing or "
                                          "corrupt.*llmdyn train-vit"):
        vit.final_checkpoint(run_dir)
    with pytest.raises(LlmdynError, match=f"step{grid.steps} is missing"):
        vit_coupling.measure_grid(grid, tmp_path, n_images=2, dataset=dataset, progress=False)
    vit.train_grid(grid, tmp_path, dataset=dataset, progress=False)  # said done before
    assert vit.final_checkpoint(run_dir) == final
    assert training.read_metrics(final)["weights_sha256"] == before
    assert json.loads((run_dir / "run.json").read_text())["checkpoints"][-1] == grid.steps


def test_vit_grid_must_save_its_final_step():
    with pytest.raises(LlmdynError, match="checkpoints must include the final step 6"):
        dataclasses.replace(TINY_GRID, checkpoints=(0, 3))
