"""A child process group stopped with its parent: signals forwarded as Ctrl-C, and on its death."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
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


# Set in Snakemake's environment by `llmdyn workflow`: the Snakefile then stops its process
# group (itself and its local jobs) when this signal arrives, i.e. when llmdyn has died.
PARENT_DIED = signal.SIGUSR1
PARENT_DIED_ENV = "LLMDYN_STOP_ON_PARENT_DEATH"


def stoppable_child() -> Callable[[], None]:
    """A ``preexec_fn`` for Snakemake: SIGINT at its default, and :data:`PARENT_DIED` with us.

    - SIGINT is how this module stops the child's group (:func:`forwarding_signals`,
      :func:`stop_group_when_parent_dies`). A process that a non-interactive shell starts in
      the background (``make book &`` in a script) inherits SIGINT ignored, and exec keeps it
      ignored; Snakemake and its jobs then ignored the stop and a stopped run went on computing.
      The child gets SIGINT's default back (Python then turns it into KeyboardInterrupt).
    - The parent's death: Linux's ``PR_SET_PDEATHSIG`` (where there is none, the forwarding
      above still covers every signal but SIGKILL). libc is loaded here, in the parent: the
      child between fork and exec only calls it. If the parent is already gone by then, the
      signal is sent at once.
    """
    prctl = _libc_prctl()
    parent = os.getpid()

    def preexec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if prctl is None:
            return
        prctl(1, int(PARENT_DIED), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os.kill(os.getpid(), PARENT_DIED)

    return preexec


def _libc_prctl() -> Callable[..., int] | None:
    """The C library's ``prctl``, or None where there is none."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").prctl
    except (OSError, AttributeError):
        return None


def stop_group_when_parent_dies() -> None:
    """In Snakemake (called by the Snakefile): on :data:`PARENT_DIED`, Ctrl-C its own group.

    Only when ``llmdyn workflow`` started it (:data:`PARENT_DIED_ENV` set); SIGINT to the group
    stops Snakemake and its running local jobs together, as a Ctrl-C in a terminal does, so a
    ``kill -9`` of ``llmdyn`` leaves no Snakemake or chapter running on its own.
    """
    if (os.environ.get(PARENT_DIED_ENV) != "1"
            or threading.current_thread() is not threading.main_thread()):
        return  # not started by llmdyn, or handlers cannot be set here

    def stop(signum: int, frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgid(0), signal.SIGINT)

    signal.signal(PARENT_DIED, stop)
