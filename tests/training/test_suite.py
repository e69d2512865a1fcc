import dataclasses
import json
import os

import pytest
import torch
from safetensors.torch import load_file

from llmdyn import LlmdynError
from llmdyn.models.loading import load_model
from llmdyn.training import loop as training
from llmdyn.training import suite
from llmdyn.training.schedule import checkpoint_steps

TINY = suite.SUITES["tiny"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus_dir):
    root = tmp_path_factory.mktemp("suite")
    return root, suite.train_suite(TINY, root, corpus_dir=corpus_dir, progress=False)


def _weights(run_dir, step):
    return load_file(run_dir / f"step{step}" / training.WEIGHTS)


def test_suite_layout_and_loss_decreases(trained):
    root, results = trained
    assert [r.directory.name for r in results] == [r.name for r in TINY.runs]
    for result in results:
        assert result.steps == [0, 1, 2, 4, 8]
        first = training.read_metrics(result.directory / "step0")
        last = training.read_metrics(result.directory / "step8")
        assert last["heldout_loss"] < first["heldout_loss"] - 0.1
        assert last["train_loss"] < first["train_loss"] - 0.1
        assert last["tokens_seen"] == 8 * TINY.tokens_per_step
        summary = json.loads((result.directory / "run.json").read_text())
        assert summary["flops_per_token"] > 0 and summary["tokens_per_s"] > 0
        assert not list(result.directory.glob(f"step*/{training.OPTIMIZER}"))


def test_second_call_trains_nothing(trained, corpus_dir):
    root, results = trained
    before = {p: p.stat().st_mtime_ns for p in root.rglob("model.safetensors")}
    again = suite.train_suite(TINY, root, corpus_dir=corpus_dir, progress=False)
    assert [r.steps for r in again] == [r.steps for r in results]
    assert before == {p: p.stat().st_mtime_ns for p in root.rglob("model.safetensors")}


def test_training_is_bitwise_deterministic(trained, tmp_path, corpus_dir):
    root, _ = trained
    run = TINY.runs[0]
    suite.train_suite(TINY, tmp_path, runs=[run.name], corpus_dir=corpus_dir, progress=False)
    a, b = _weights(root / run.name, 8), _weights(tmp_path / run.name, 8)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_killed_run_resumes_to_the_same_weights(trained, tmp_path, corpus_dir, monkeypatch):
    root, _ = trained
    run = TINY.runs[1]
    real_batch = suite.LanguageModelTask.batch

    def dies_at_step_6(self, step):
        if step == 6:
            raise KeyboardInterrupt  # as if killed between checkpoints 4 and 8
        return real_batch(self, step)

    monkeypatch.setattr(suite.LanguageModelTask, "batch", dies_at_step_6)
    with pytest.raises(KeyboardInterrupt):
        suite.train_suite(TINY, tmp_path, runs=[run.name], corpus_dir=corpus_dir,
                          progress=False)
    assert (tmp_path / run.name / "step4" / training.OPTIMIZER).exists()
    assert not (tmp_path / run.name / "run.json").exists()
    monkeypatch.setattr(suite.LanguageModelTask, "batch", real_batch)
    suite.train_suite(TINY, tmp_path, runs=[run.name], corpus_dir=corpus_dir, progress=False)
    a, b = _weights(root / run.name, 8), _weights(tmp_path / run.name, 8)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoint_loads_through_transformers_and_load_model(trained):
    from transformers import AutoModelForCausalLM

    root, results = trained
    path = results[1].directory / "step8"
    hf = AutoModelForCausalLM.from_pretrained(path)
    m = load_model(str(path))
    assert m.n_layers == TINY.runs[1].size.n_layers and m.d_model == TINY.runs[1].size.d_model
    ids = m.tokenizer("the whale", return_tensors="pt").input_ids
    with torch.no_grad():
        torch.testing.assert_close(hf(ids).logits, m.hf(ids).logits)


def test_resume_with_another_config_is_refused(trained, corpus_dir):
    root, _ = trained
    changed = dataclasses.replace(TINY, runs=(dataclasses.replace(TINY.runs[0], lr=1e-2),))
    with pytest.raises(LlmdynError, match="another configuration.*lr"):
        suite.train_suite(changed, root, corpus_dir=corpus_dir, progress=False)


def test_corrupt_checkpoint_is_detected(trained, tmp_path, corpus_dir):
    run = TINY.runs[0]
    suite.train_suite(TINY, tmp_path, runs=[run.name], corpus_dir=corpus_dir, progress=False)
    weights = tmp_path / run.name / "step4" / training.WEIGHTS
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0x01  # one flipped bit in the last tensor
    weights.write_bytes(bytes(data))
    with pytest.raises(LlmdynError, match="does not match the sha256"):
        training.read_metrics(weights.parent)
    (tmp_path / run.name / "step2" / training.METRICS).unlink()
    with pytest.raises(LlmdynError, match="missing or not JSON"):
        training.read_metrics(tmp_path / run.name / "step2")


def test_bad_suite_definitions_are_clear_errors():
    with pytest.raises(LlmdynError, match="not divisible by its 5 heads"):
        suite.Size("odd", 2, 64, 5)
    with pytest.raises(LlmdynError, match="strictly increasing"):
        dataclasses.replace(TINY, checkpoints=(0, 4, 2, 8))
    with pytest.raises(LlmdynError, match="unknown suite 'nope'"):
        suite.get_suite("nope")
    with pytest.raises(LlmdynError, match="no run"):
        suite.train_suite(TINY, "/nonexistent", runs=["t9-seed0"])


def test_pythia_checkpoint_steps():
    assert checkpoint_steps(512) == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert checkpoint_steps(5) == [0, 1, 2, 4, 5]
    steps = checkpoint_steps(1512, n_even=4)
    assert steps[-5:] == [512, 762, 1012, 1262, 1512]


def test_schedule_warms_up_then_decays_to_a_tenth():
    s = training.Schedule(steps=100, lr=1.0, warmup=10)
    assert s.lr_at(0) == pytest.approx(0.1) and s.lr_at(9) == pytest.approx(1.0)
    assert s.lr_at(99) == pytest.approx(0.1, abs=1e-3)
    assert all(s.lr_at(i) >= s.lr_at(i + 1) for i in range(10, 99))


@pytest.mark.parametrize("command", ["train", "train-vit"])
def test_a_root_that_is_a_file_is_refused_before_any_work(tmp_path, capsys, command):
    # NotADirectoryError's traceback.
    from llmdyn.cli import main

    (tmp_path / "afile").write_text("mine")
    assert main([command, "--root", str(tmp_path / "afile")]) == 2
    err = capsys.readouterr().err
    assert err == (f"llmdyn {command}: error: --root {tmp_path / 'afile'} is a file; give a "
                   "directory (it is created if missing)\n")
    assert main([command, "--root", str(tmp_path / "afile" / "runs")]) == 2
    assert "lies under a file" in capsys.readouterr().err
    os.mkfifo(tmp_path / "fifo")  # said as what it is, not "a file"
    assert main([command, "--root", str(tmp_path / "fifo")]) == 2
    assert capsys.readouterr().err == (f"llmdyn {command}: error: --root {tmp_path / 'fifo'} is "
                                       "a FIFO (named pipe); give a directory (it is created "
                                       "if missing)\n")
    assert (tmp_path / "afile").read_text() == "mine"


def test_a_full_disk_while_a_checkpoint_is_written_is_one_line(tmp_path, capsys, corpus_dir,
                                                               monkeypatch):
    # safetensors' own error (not an OSError) escaped as a traceback.
    from safetensors import SafetensorError

    from llmdyn.cli import main
    from llmdyn.training import run_files

    def full(*args, **kwargs):
        raise SafetensorError("Error while serializing: I/O error: No space left on device "
                              "(os error 28)")

    monkeypatch.setattr(run_files, "save_file", full)
    run = TINY.runs[0].name
    args = ["train", "--suite", "tiny", "--run", run, "--root", str(tmp_path), "--corpus",
            str(corpus_dir)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"llmdyn train: error: cannot write {tmp_path / run}/.") and \
        err.count("\n") == 1 and "no space left on the device; free space or write elsewhere" \
        in err
    assert not list((tmp_path / run).glob("step*"))  # nothing half-written is left
