"""The workflow's jobs (`python -m llmdyn.cli.job`): what they run, and a refusal as one line."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import papermill

from llmdyn import LlmdynError
from llmdyn.cli import job
from llmdyn.runner.build import REPO, chapters


def test_a_full_disk_while_a_chapter_is_written_is_one_line(tmp_path, capsys, monkeypatch):
    # The workflow's chapter job died with a traceback in its log.
    def full(source, target, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", target)

    monkeypatch.setattr(papermill, "execute_notebook", full)
    monkeypatch.chdir(tmp_path)
    name = chapters()[0]
    assert job.main(["chapter", name, "--parameters", json.dumps({"model": "tiny-llama"})]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"llmdyn job: error: cannot write {tmp_path}/book/executed/.{name}.") \
        and "no space left on the device; free space" in err and err.count("\n") == 1
    assert not list((tmp_path / "book" / "executed").iterdir())  # no partial notebook left


def test_each_job_calls_its_runner_function_with_typed_arguments(tmp_path, monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(job, "chapter_job", lambda *a: seen.append(("chapter", *a)))
    monkeypatch.setattr(job, "html_job", lambda *a: seen.append(("html", *a)))
    monkeypatch.setattr(job, "convert_packaged", lambda *a: seen.append(("convert", *a)))
    monkeypatch.chdir(tmp_path)
    assert job.main(["chapter", "05_depth_coupling", "--parameters", '{"n_prompts": 2}']) == 0
    assert job.main(["html"]) == 0
    assert job.main(["convert", "smollm2-135m", "stamp.json"]) == 0
    assert seen == [("chapter", "05_depth_coupling", {"n_prompts": 2}, tmp_path),
                    ("html", tmp_path), ("convert", "smollm2-135m", Path("stamp.json"))]

    def refused(here):
        raise LlmdynError("no chapters executed")

    monkeypatch.setattr(job, "html_job", refused)
    assert job.main(["html"]) == 2
    assert capsys.readouterr().err == "llmdyn job: error: no chapters executed\n"


def test_the_snakefile_runs_the_jobs_of_this_module():
    snakefile = (REPO / "workflow" / "Snakefile").read_text()
    for name in ("chapter", "html", "convert"):
        assert f"{{PY}} -m llmdyn.cli.job {name} " in snakefile, name
    out = subprocess.run([sys.executable, "-m", "llmdyn.cli.job", "--help"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "chapter" in out.stdout and "convert" in out.stdout
