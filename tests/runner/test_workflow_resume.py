"""An interrupted `llmdyn workflow` resumes with the same command.

One directory, interrupted three ways while chapter 01 runs and chapter 05 has finished: SIGTERM
of `llmdyn`, SIGKILL of `llmdyn` alone, and a power loss (SIGKILL of every process of the run
at once). After each, the finished chapter is still there, byte for byte; the cut-off chapter
left no executed notebook; and the same command, run again, finishes the book.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from llmdyn.runner.build import REPO, unfinished
from llmdyn.runner.runlock import LOCK_NAME
from llmdyn.runner.workflow import snakemake_command

pytestmark = pytest.mark.slow
FIRST, CUT = "05_depth_coupling", "01_trajectories"  # with --cores 1, 05 runs first (priority)


def _command(directory: Path) -> list[str]:
    return [sys.executable, "-m", "llmdyn", "workflow", "--only", FIRST, CUT, "--config",
            "chapter_params=tests/smoke", "--cores", "1", "--directory", str(directory)]


def _start(directory: Path) -> subprocess.Popen:
    return subprocess.Popen(_command(directory), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 900) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {what}: {proc.stdout.read()[-3000:]}"
                        f"{proc.stderr.read()[-3000:]}")
        if time.monotonic() > end:
            proc.kill()
            pytest.fail(f"no {what} after {timeout} s")
        time.sleep(0.5)


def _executed(directory: Path, name: str) -> Path:
    return directory / "book" / "executed" / f"{name}.ipynb"


def _cut_chapter_running(directory: Path):
    """Whether a live process is running the cut chapter.

    Its temporary notebook ``.{CUT}.{pid}.partial.ipynb`` names the process. A killed run's
    temporary stays until the chapter's next run sweeps it, so a file alone could be the last
    run's; the kill would then come before the new run had started the chapter, which then
    finished outside the process tree the test killed (seen twice under make test).
    """
    def running() -> bool:
        partials = (directory / "book" / "executed").glob(f".{CUT}.*.partial.ipynb")
        return any(psutil.pid_exists(int(p.name.split(".")[-3])) for p in partials)

    return running


def _tree(proc: subprocess.Popen) -> list[psutil.Process]:
    return [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]


def test_every_interruption_resumes_with_the_same_command_and_loses_nothing(tmp_path):
    executed = tmp_path / "book" / "executed"
    run = _start(tmp_path)
    # A live run in the same directory is refused by name, with its PID. Checked while the first
    # chapter runs: a second `llmdyn` takes seconds to start, and on a loaded machine the cut
    # chapter (a smoke run of about 20 s) had finished by then, before the SIGTERM below.
    _wait_for(lambda: any(executed.glob(f".{FIRST}.*.partial.ipynb"))
              or _executed(tmp_path, FIRST).exists(), run, f"{FIRST} started")
    second = subprocess.run(_command(tmp_path), cwd=REPO, capture_output=True, text=True,
                            timeout=600)
    assert second.returncode == 2 and f"PID {run.pid} on host" in second.stderr, second.stderr

    _wait_for(lambda: _executed(tmp_path, FIRST).exists() and _cut_chapter_running(tmp_path)(),
              run, f"{FIRST} finished and {CUT} started")
    finished = _executed(tmp_path, FIRST).read_bytes()

    # 1. SIGTERM (as Ctrl-C): it stops, says so, and says the truth about what comes next.
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=300)
    assert run.returncode == 2 and "stopped by SIGTERM" in err and "same command" in err, err
    assert _executed(tmp_path, FIRST).read_bytes() == finished
    # No half-run chapter in the book. Twice, with make test and a default build side by side,
    # the stop reached the chapter after its last cell, and its notebook was complete: that one
    # may stay, finished, and goes so that the next interruption has a chapter to cut.
    cut = _executed(tmp_path, CUT)
    if cut.exists():
        assert unfinished(cut) is None, unfinished(cut)
        cut.unlink()

    # 2. SIGKILL of llmdyn alone: its Snakemake and the chapter's processes end with it.
    run = _start(tmp_path)
    _wait_for(_cut_chapter_running(tmp_path), run, f"{CUT} started again")
    tree = _tree(run)
    snakemake = json.loads((tmp_path / ".snakemake" / LOCK_NAME).read_text())["snakemake_pid"]
    assert snakemake in {p.pid for p in tree}
    run.kill()
    run.wait()
    _, alive = psutil.wait_procs(tree, timeout=120)
    assert not alive, f"left running after kill -9 of llmdyn: {alive}"
    assert _executed(tmp_path, FIRST).read_bytes() == finished
    assert not _executed(tmp_path, CUT).exists()

    # 3. Power loss: every process of the run killed at once; Snakemake's lock stays behind.
    run = _start(tmp_path)
    _wait_for(_cut_chapter_running(tmp_path), run, f"{CUT} started a third time")
    tree = _tree(run)
    # All at once, as a power loss: freeze every process first, so that none sees another die
    # and cleans up (killed one by one, Snakemake could see its job fail and remove its lock
    # before its own SIGKILL came; a loaded machine made that race real).
    for process in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.suspend()
    for process in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(tree, timeout=60)
    run.wait()
    assert list((tmp_path / ".snakemake" / "locks").iterdir())  # the stale lock of the probe
    assert _executed(tmp_path, FIRST).read_bytes() == finished

    # The same command resumes: the stale lock is cleared, the cut-off chapter runs again,
    # the finished one is not touched.
    done = subprocess.run(_command(tmp_path), cwd=REPO, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "cleared Snakemake's stale lock" in done.stdout
    assert f"Chapter {FIRST}" not in done.stdout
    assert _executed(tmp_path, FIRST).read_bytes() == finished
    assert unfinished(_executed(tmp_path, CUT)) is None
    assert not list(executed.glob(".*.partial.ipynb"))  # the killed runs' temporaries swept
    assert (tmp_path / "logs" / "benchmarks" / "chapter" / f"{CUT}.tsv").is_file()

    # The book's advice for a chapter it will not render (edited, unfinished),
    # `llmdyn workflow --rerun <chapter>`, plans that chapter where the plain command has
    # "Nothing to be done".
    for extra, planned in (([], "Nothing to be done"), (["--rerun", FIRST], f"Chapter {FIRST}")):
        dry = subprocess.run([*_command(tmp_path), "-n", *extra], cwd=REPO, capture_output=True,
                             text=True, timeout=600)
        assert dry.returncode == 0 and planned in dry.stdout, dry.stdout[-3000:]

    # content, not file times, decides a rerun. In a copy of the sources,
    # an edit of a module only chapter 01 reads, with its time set back before the outputs'
    # (as cp -p or rsync -t leave it), reruns 01 and nothing else.
    _edited_source_with_an_old_time_reruns_its_chapter(tmp_path / "copy", tmp_path)


def _edited_source_with_an_old_time_reruns_its_chapter(copy: Path, directory: Path) -> None:
    for name in ("workflow", "notebooks", "lib", "data", "book", "tests/smoke"):
        shutil.copytree(REPO / name, copy / name, symlinks=True,
                        ignore=shutil.ignore_patterns("executed", "generated", "__pycache__"))
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy2(REPO / name, copy / name)

    def planned() -> str:
        # only the params trigger: the copy's paths and times differ from the repository's
        cmd = snakemake_command(
            targets=[f"book/executed/{c}.ipynb" for c in (FIRST, CUT)], directory=directory,
            config={"chapter_params": "tests/smoke", "only_chapters": [FIRST, CUT]},
            dry_run=True, snakefile=copy / "workflow" / "Snakefile",
            extra=["--rerun-triggers", "params"])
        out = subprocess.run(cmd, cwd=copy, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        return out.stdout

    first = planned()
    assert "Nothing to be done" in first, first[-3000:]  # same contents: same digests
    module = copy / "lib" / "llmdyn" / "trajectories" / "geometry.py"
    old = module.stat()
    module.write_text(module.read_text() + "\n# an edit\n")
    os.utime(module, ns=(old.st_atime_ns, old.st_mtime_ns - 10**12))
    again = planned()
    assert f"Chapter {CUT} with model" in again and f"Chapter {FIRST} with" not in again, again
