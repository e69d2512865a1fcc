"""Every file follows the umask, weights included (safetensors writes 0600 by itself)."""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.models import convert
from llmdyn.models.loading import load_model
from llmdyn.training import suite
from llmdyn.vision import grids as vit
from tests.models.test_convert import fake_packaged  # noqa: F401 -- the fixture, reused
from tests.vision.test_images import write_fashion_mnist

TINY_GRID = dataclasses.replace(vit.GRIDS["tiny"], drop_paths=(0.0,), weight_decays=(0.01,),
                                steps=2, checkpoints=(0, 2))


@pytest.fixture(params=[0o022, 0o027], ids=["umask022", "umask027"])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _modes(root: Path) -> dict[str, int]:
    """Mode of every file and folder under `root` (relative name -> permission bits)."""
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode)
            for p in root.rglob("*") if not p.name.endswith(".lock")}


def _assert_umask(root: Path, umask: int) -> None:
    modes = _modes(root)
    weights = [name for name in modes if name.endswith(".safetensors")]
    assert weights, modes  # the probe's files: every model.safetensors was 0600
    wrong = {name: oct(mode) for name, mode in modes.items()
             if mode != (0o777 if (root / name).is_dir() else 0o666) & ~umask}
    assert not wrong, wrong


def test_suite_checkpoints_follow_the_umask(umask, tmp_path, corpus_dir):
    run = suite.SUITES["tiny"].runs[0]
    suite.train_suite("tiny", tmp_path, runs=[run.name], corpus_dir=corpus_dir, progress=False)
    _assert_umask(tmp_path / run.name, umask)


def test_vit_checkpoints_follow_the_umask(umask, tmp_path):
    (tmp_path / "fmnist").mkdir()
    data = write_fashion_mnist(tmp_path / "fmnist", n_train=64, n_test=32)
    vit.train_grid(TINY_GRID, tmp_path / "vit", dataset=str(data), progress=False)
    _assert_umask(tmp_path / "vit" / TINY_GRID.runs[0].name, umask)


def test_converted_model_follows_the_umask(umask, fake_packaged):  # noqa: F811
    out, _, _ = fake_packaged
    load_model("fake")
    _assert_umask(out, umask)


def test_read_only_model_cache_is_one_sentence(fake_packaged, monkeypatch):  # noqa: F811
    # The probe: a read-only HOME (so ~/.cache/llmdyn) gave a PermissionError traceback.
    def refused(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refused)
    with pytest.raises(LlmdynError, match="cannot write the converted-model cache .*Permission "
                                          "denied.*set LLMDYN_CACHE to a writable directory"):
        load_model("fake")
    monkeypatch.undo()
    assert convert.verify_converted(fake_packaged[0], fake_packaged[2]) is not None  # untouched
