"""A lock is cleared only when its holder is gone, and a refusal names the
live holder: a plain `snakemake` in the directory, the Snakemake left after `kill -9` of
llmdyn, or a run on another host (then `--unlock` is advised, and works when followed)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.runner.build import REPO
from llmdyn.runner.runlock import LOCK_NAME, snakemake_runs_in, workflow_lock

ENV = {**os.environ, "PYTHONPATH": str(REPO / "lib")}


def wait_for(condition, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def stale_snakemake_lock(directory: Path) -> Path:
    """What a killed Snakemake leaves behind."""
    locks = directory / ".snakemake" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    (locks / "0.input.lock").write_text("results/x\n")
    return locks


def test_a_plain_snakemake_in_the_directory_is_refused_by_pid_and_cleared_once_gone(tmp_path):
    # While `snakemake --directory W` ran, `llmdyn workflow --directory W` cleared its lock.
    work = tmp_path / "W"
    work.mkdir()
    (tmp_path / "Snakefile").write_text('rule slow:\n    output: "out.txt"\n'
                                        '    shell: "sleep 120 && touch {output}"\n')
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"),
                             "--directory", str(work), "-c1", "out.txt"], cwd=tmp_path, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_for(lambda: list((work / ".snakemake" / "locks").glob("*.lock")))
        assert snakemake_runs_in(work) == [proc.pid]
        assert snakemake_runs_in(tmp_path) == []  # its cwd, not its --directory
        with pytest.raises(LlmdynError, match=rf"^a Snakemake run works in {work}: PID "
                                              rf"{proc.pid} \(.*snakemake.*\)\. Wait for it.*"
                                              rf"kill {proc.pid}"):
            with workflow_lock(work):
                pass
        assert list((work / ".snakemake" / "locks").glob("*.lock"))  # left alone
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and its job, as kill -9 would
        proc.wait()
    assert list((work / ".snakemake" / "locks").glob("*.lock"))  # what kill -9 leaves
    with workflow_lock(work):
        assert not list((work / ".snakemake" / "locks").glob("*.lock"))  # holder gone: cleared


@pytest.mark.parametrize("dry", [True, False])
def test_a_dry_run_snakemake_does_not_count_as_a_run(tmp_path, dry):
    # a stand-in with Snakemake's command line (argv[0] is the name /proc shows); a dry run
    # writes nothing and takes no lock
    proc = subprocess.Popen(["snakemake", "-c", "import time; time.sleep(60)",
                             *(["-n"] if dry else []), "--directory", str(tmp_path)],
                            executable=sys.executable)
    try:
        wait_for(lambda: Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(b"snakemake"))
        assert snakemake_runs_in(tmp_path) == ([] if dry else [proc.pid])
    finally:
        proc.kill()
        proc.wait()


HOLD = """
import subprocess, sys, time
from pathlib import Path
from llmdyn.runner.runlock import workflow_lock
with workflow_lock(Path(sys.argv[1])) as lock:
    # as llmdyn workflow starts Snakemake: the child inherits the locked file
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                             pass_fds=(lock.fd,))
    lock.record(snakemake_pid=child.pid)
    print(child.pid, flush=True)
    time.sleep(120)
"""


def test_after_kill_9_of_llmdyn_the_refusal_names_the_process_still_holding_the_lock(tmp_path):
    # The refusal named the dead llmdyn PID beside the Snakemake PID that was still alive.
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], env=ENV,
                            stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    try:
        with pytest.raises(LlmdynError, match=f"PID {proc.pid} on host"):
            with workflow_lock(tmp_path):  # both alive: the lock's taker is named
                pass
        proc.kill()
        proc.wait()  # reaped: its PID is gone
        with pytest.raises(LlmdynError) as refused:
            with workflow_lock(tmp_path):
                pass
        message = str(refused.value)
        assert f"PID {child} on host {socket.gethostname()} (" in message
        assert f"PID {proc.pid}" not in message and "\n" not in message
    finally:
        os.kill(child, signal.SIGKILL)
    wait_for(lambda: not Path(f"/proc/{child}").exists() or
             Path(f"/proc/{child}/stat").read_text().split()[2] == "Z")
    with workflow_lock(tmp_path):  # both gone: free
        pass


def test_a_lock_left_by_another_host_is_refused_with_unlock_advice_that_works(tmp_path,
                                                                               capsys):
    locks = stale_snakemake_lock(tmp_path)
    (tmp_path / ".snakemake" / LOCK_NAME).write_text(json.dumps(
        {"pid": 4242, "host": "another-node", "started": "2026-01-01 00:00:00 UTC"}))
    with pytest.raises(LlmdynError, match=r"left by a run on host another-node \(PID 4242\), "
                                          r"which this machine cannot check.*`llmdyn workflow "
                                          rf"--unlock --directory {tmp_path}`"):
        with workflow_lock(tmp_path):
            pass
    assert list(locks.iterdir())  # not cleared
    # the advice, followed
    assert main(["workflow", "--unlock", "--directory", str(tmp_path)]) == 0
    assert "removed 1 Snakemake lock file(s)" in capsys.readouterr().out
    assert not list(locks.iterdir())
    stale_snakemake_lock(tmp_path)
    with workflow_lock(tmp_path):  # this host's own record now: a stale lock is cleared
        assert not list(locks.iterdir())


def test_unlock_still_refuses_a_run_alive_here(tmp_path, capsys):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], env=ENV,
                            stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    try:
        assert main(["workflow", "--unlock", "--directory", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert f"PID {proc.pid} on host" in err and err.count("\n") == 1
    finally:
        os.kill(child, signal.SIGKILL)
        proc.kill()
        proc.wait()
