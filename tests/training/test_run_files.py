"""A second trainer of one run says which process it waits for."""

from __future__ import annotations

import os
import subprocess
import sys

from llmdyn.runner.build import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
HOLD = ("import sys, time; from llmdyn.training.run_files import run_lock\n"
        "with run_lock(sys.argv[1]):\n    print('held', flush=True)\n"
        "    sys.stdin.readline()\n"  # until the test lets go
        "print('done', flush=True)")


def test_a_run_waiting_for_the_training_lock_names_the_pid_it_waits_for(tmp_path):
    # A second `llmdyn train` on the same run waited for the lock without a word.
    first = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "r0")], env=ENV,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert first.stdout.readline() == "held\n"
    second = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "r0")], env=ENV,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        waiting = second.stderr.readline()
        assert waiting.startswith(f"llmdyn: waiting for PID {first.pid} (") , waiting
        assert f"which is training {tmp_path / 'r0'}" in waiting
        first.stdin.write("\n")
        first.stdin.flush()
        assert first.stdout.readline() == "done\n"
        assert second.stdout.readline() == "held\n"  # its turn once the first let go
        second.stdin.write("\n")
        second.stdin.flush()
        assert second.stdout.readline() == "done\n"
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()
