"""A child process group stopped with its parent: SIGTERM, SIGHUP or SIGINT forwarded as Ctrl-C."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def forwarding_signals(proc: subprocess.Popen) -> Iterator[list[signal.Signals]]:
    """Stop ``proc``'s process group on SIGTERM, SIGHUP or SIGINT; yield the signals received.

    ``proc`` runs in its own session (so a signal meant for it can reach its jobs too).
    Without this, ``kill <llmdyn pid>`` ends this process and leaves Snakemake running,
    reparented to PID 1. Handlers can only be set in the main thread; elsewhere nothing is
    forwarded.
    """
    received: list[signal.Signals] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def forward(signum: int, frame: Any) -> None:
        received.append(signal.Signals(signum))
        if proc.poll() is None:  # as Ctrl-C does: SIGINT to Snakemake and its local jobs, which
            with contextlib.suppress(ProcessLookupError):  # stop now (on SIGTERM Snakemake
                os.killpg(proc.pid, signal.SIGINT)  # would wait for its jobs to finish)

    previous = {s: signal.signal(s, forward)
                for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
