"""One workflow run per directory: llmdyn's own lock (PID and host, ``flock``) beside Snakemake's.

Snakemake's lock files (``.snakemake/locks``) list the files a run writes, not who runs it, so
after a ``kill -9`` or a power loss nobody can tell a stale lock from a live run. llmdyn holds
an ``flock`` on ``.snakemake/llmdyn-workflow.lock`` for the whole run, and Snakemake inherits
the open file, so the lock lasts exactly as long as either process lives: the kernel releases it
when both are gone, whatever killed them. Hence:

- the lock is held by someone: a live run; refuse, naming its PID and host (from the file);
- the lock is free: no llmdyn run is alive here, so Snakemake's own locks are stale; clear them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from llmdyn import LlmdynError

__all__ = ["LOCK_NAME", "WorkflowLock", "holder", "workflow_lock"]

LOCK_NAME = "llmdyn-workflow.lock"  # under <directory>/.snakemake


def holder(path: Path) -> str:
    """Who holds the lock at ``path``, in words (from what it wrote there)."""
    try:
        info = json.loads(path.read_text())
        who = f"PID {info['pid']} on host {info['host']}"
        if info.get("snakemake_pid"):
            who += f" (its Snakemake: PID {info['snakemake_pid']})"
        return f"{who}, started {info.get('started', '?')}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not written its PID yet"


class WorkflowLock:
    """The held lock: its open file (``fd``, to pass to Snakemake) and what it records."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd
        self.info = {"pid": os.getpid(), "host": socket.gethostname(),
                     "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        self._write()

    def record(self, **more: object) -> None:
        """Add facts to the lock file (e.g. Snakemake's PID once it runs)."""
        self.info.update(more)
        self._write()

    def _write(self) -> None:
        data = (json.dumps(self.info) + "\n").encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)


def _clear_stale_snakemake_locks(directory: Path) -> list[Path]:
    locks = directory / ".snakemake" / "locks"
    stale = sorted(locks.glob("*.lock")) if locks.is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


@contextlib.contextmanager
def workflow_lock(directory: Path) -> Iterator[WorkflowLock]:
    """Hold the run lock of ``directory`` (refusing a live run there), clearing stale locks.

    Raises:
        LlmdynError: another ``llmdyn workflow`` (or its Snakemake) is running in
            ``directory``; the message names its PID and host.
    """
    path = Path(directory) / ".snakemake" / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LlmdynError(
                f"another llmdyn workflow is running in {Path(directory).resolve()}: "
                f"{holder(path)}. Wait for it to finish, or stop it (kill <PID>); a second "
                "run would write the same files") from None
        stale = _clear_stale_snakemake_locks(Path(directory))
        if stale:
            print(f"llmdyn workflow: cleared Snakemake's stale lock in {directory} (the run "
                  "that held it has ended)", flush=True)
        yield WorkflowLock(path, fd)
    finally:
        os.close(fd)  # Snakemake's inherited copy keeps the lock until it exits too
