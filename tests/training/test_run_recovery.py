"""A corrupt resume state or run file, or a full disk, never blocks the next run.

Every test that breaks something checks that each finished file is still there, byte-identical.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.training import loop as training
from llmdyn.training import run_files, suite
from llmdyn.vision import grids as vit
from tests.training.test_checkpoint_recovery import (
    reference,  # noqa: F401 -- the fixture, reused
    train_killed_at_step,
)
from tests.vision.test_images import write_fashion_mnist

TINY = suite.SUITES["tiny"]
RUN = TINY.runs[0]


def _train(root, corpus_dir):
    return suite.train_suite(TINY, root, runs=[RUN.name], corpus_dir=corpus_dir, progress=False)


def _finished_files(run_dir: Path) -> dict[str, bytes]:
    """Every checkpoint file but the resume state, by relative path: what must survive."""
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.glob("step*/*")
            if p.name != training.OPTIMIZER}


def _digests(run_dir):
    return {s: training.read_metrics(run_dir / f"step{s}")["weights_sha256"]
            for s in TINY.checkpoint_steps()}


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_truncated_optimizer_state_falls_back_to_step_0(tmp_path, corpus_dir, monkeypatch,
                                                        reference, caplog):  # noqa: F811
    train_killed_at_step(tmp_path, corpus_dir, monkeypatch)
    run_dir = tmp_path / RUN.name
    state = run_dir / "step4" / training.OPTIMIZER  # the only resume point
    state.write_bytes(state.read_bytes()[:1000])  # truncated: failed on every retry before
    before = _finished_files(run_dir)
    with caplog.at_level(logging.WARNING, logger="llmdyn.training.loop"):
        _train(tmp_path, corpus_dir)
    assert "resume state in step4 is unreadable" in caplog.text
    assert _digests(run_dir) == reference  # bitwise the uninterrupted run
    after = _finished_files(run_dir)
    assert {k: after[k] for k in before} == before  # rebuilt bit for bit: kept untouched


def test_corrupt_run_files_fall_back(tmp_path, corpus_dir, reference, caplog):  # noqa: F811
    _train(tmp_path, corpus_dir)
    run_dir = tmp_path / RUN.name
    before = _finished_files(run_dir)
    (run_dir / "run.json").write_text('{"checkpoints": [0, 2')  # cut mid-write
    with caplog.at_level(logging.WARNING, logger="llmdyn.training.loop"):
        result = _train(tmp_path, corpus_dir)[0]  # a JSONDecodeError traceback before
    assert "run.json is unreadable" in caplog.text and result.steps == TINY.checkpoint_steps()
    assert json.loads((run_dir / "run.json").read_text())["checkpoints"] == result.steps
    assert _finished_files(run_dir) == before

    (run_dir / "run_config.json").write_text("{")  # run.json still names this config
    _train(tmp_path, corpus_dir)
    assert json.loads((run_dir / "run_config.json").read_text())["run"] == RUN.name
    assert _finished_files(run_dir) == before

    (run_dir / "run_config.json").write_text("")  # both gone: retrain from step 0
    (run_dir / "run.json").write_text("")
    _train(tmp_path, corpus_dir)
    assert _digests(run_dir) == reference and _finished_files(run_dir) == before
    assert not list(run_dir.glob(f"step*/{training.OPTIMIZER}"))


def test_vit_advice_works_after_a_corrupt_run_json(tmp_path):
    (tmp_path / "fmnist").mkdir()
    data = str(write_fashion_mnist(tmp_path / "fmnist", n_train=64, n_test=32))
    grid = dataclasses.replace(vit.GRIDS["tiny"], drop_paths=(0.0,), weight_decays=(0.01,),
                               steps=2, checkpoints=(0, 2))
    vit.train_grid(grid, tmp_path / "vit", dataset=data, progress=False)
    run_dir = tmp_path / "vit" / grid.runs[0].name
    before = _finished_files(run_dir)
    (run_dir / "run.json").write_text("not json")
    with pytest.raises(LlmdynError, match="llmdyn train-vit"):
        vit.final_checkpoint(run_dir)
    vit.train_grid(grid, tmp_path / "vit", dataset=data, progress=False)  # the advice
    assert vit.final_checkpoint(run_dir) == run_dir / "step2"
    assert _finished_files(run_dir) == before


def test_full_disk_while_preparing_data_leaves_nothing_behind(tmp_path, corpus_dir,
                                                              monkeypatch, capsys):
    argv = ["train", "--suite", "tiny", "--run", RUN.name, "--root", str(tmp_path),
            "--corpus", str(corpus_dir)]
    monkeypatch.setattr(np, "savez", _no_space)
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("llmdyn train: error: cannot write ") and "\n" not in err
    assert "no space left on the device; free space or write elsewhere: --out, --root" in err
    monkeypatch.undo()
    assert not list(tmp_path.rglob(".streams*")) and not list(tmp_path.rglob("*.tmp*"))
    assert main(argv) == 0  # the retry after freeing space


def test_full_disk_while_checkpointing_keeps_what_was_finished(tmp_path, corpus_dir,
                                                               monkeypatch, reference):  # noqa: F811
    real_save = run_files.save_file
    calls = []

    def full_at_step_4(tensors, path):
        calls.append(path)
        if "step4" in str(path):
            _no_space()
        return real_save(tensors, path)

    monkeypatch.setattr(run_files, "save_file", full_at_step_4)
    with pytest.raises(OSError, match="No space left"):
        _train(tmp_path, corpus_dir)
    monkeypatch.undo()
    run_dir = tmp_path / RUN.name
    assert not list(run_dir.glob(".step*"))  # no half-written checkpoint left to fill the disk
    before = _finished_files(run_dir)
    assert {Path(k).parts[0] for k in before} == {f"step{s}" for s in TINY.checkpoint_steps()
                                                  if s < 4}
    _train(tmp_path, corpus_dir)
    assert _digests(run_dir) == reference
    after = _finished_files(run_dir)
    assert {k: after[k] for k in before} == before
