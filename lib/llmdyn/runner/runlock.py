"""One workflow run per directory: llmdyn's own lock (PID and host, ``flock``) beside Snakemake's.

Snakemake's lock files (``.snakemake/locks``) list the files a run writes, not who runs it, so
after a ``kill -9`` or a power loss nobody can tell a stale lock from a live run. llmdyn holds
an ``flock`` on ``.snakemake/llmdyn-workflow.lock`` for the whole run, and Snakemake inherits
the open file, so the lock lasts exactly as long as either process lives: the kernel releases it
when both are gone, whatever killed them. Hence:

- the lock is held: a live run; refuse, naming the live processes that hold it (read from
  /proc: after a ``kill -9`` of llmdyn that is its Snakemake, not the dead llmdyn);
- the lock is free, but a plain ``snakemake`` (the README shows it) works in the directory:
  refuse, naming its PID;
- the lock is free and Snakemake's locks were left by a run on another host, which this machine
  cannot check: refuse, advising ``llmdyn workflow --unlock`` once that run has ended;
- otherwise Snakemake's locks are stale (their holder is gone): clear them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.core.holders import describe, lock_holders, pid_alive, process_argv, process_cwd

__all__ = ["LOCK_NAME", "WorkflowLock", "holder", "snakemake_runs_in", "unlock",
           "workflow_lock"]

LOCK_NAME = "llmdyn-workflow.lock"  # under <directory>/.snakemake


def _recorded(path: Path) -> dict:
    """What the last run wrote into the lock file ({} if nothing readable)."""
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def holder(path: Path) -> str:
    """Who holds the lock at ``path``, in words: the live processes holding it, by PID.

    The PIDs recorded in the file may be dead (``kill -9`` of llmdyn leaves its Snakemake
    holding the lock), so the holders are read from /proc; the record adds host and start time.
    """
    info = _recorded(path)
    pids = lock_holders(path)
    snakemake = info.get("snakemake_pid")
    here = info.get("host") == socket.gethostname()  # a PID of another host means nothing here
    if here and isinstance(snakemake, int) and snakemake not in pids and pid_alive(snakemake):
        pids.append(snakemake)
    if pids:
        who = ", ".join(describe(pid, socket.gethostname()) for pid in pids)
        started = f", started {info['started']}" if info.get("started") else ""
        return f"{who}{started}"
    if info.get("host") and info["host"] != socket.gethostname():
        return f"PID {info.get('pid', '?')} on host {info['host']} (another machine)"
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


def _snakemake_locks(directory: Path) -> list[Path]:
    locks = directory / ".snakemake" / "locks"
    return sorted(locks.glob("*.lock")) if locks.is_dir() else []


_DRY = re.compile(r"^(--dry-?run|--unlock|-[A-Za-z]*n[A-Za-z]*)$")  # runs that write nothing


def _is_snakemake(argv: list[str]) -> bool:
    """Whether a command line runs Snakemake (``snakemake``, ``python -m snakemake``, ...)."""
    head = argv[:3]
    return (any(Path(a).name == "snakemake" for a in head)
            or any(head[i] == "-m" and head[i + 1] == "snakemake" for i in range(len(head) - 1)))


def _run_directory(pid: int, argv: list[str]) -> Path | None:
    """The directory a Snakemake process works in: its ``--directory``, else its own cwd."""
    cwd = process_cwd(pid)
    where = None
    for i, arg in enumerate(argv):
        if arg in ("--directory", "-d") and i + 1 < len(argv):
            where = argv[i + 1]
        elif arg.startswith("--directory="):
            where = arg.split("=", 1)[1]
    if where is None:
        return cwd
    return Path(where) if Path(where).is_absolute() or cwd is None else cwd / where


def snakemake_runs_in(directory: Path) -> list[int]:
    """Live Snakemake processes (not this one, not dry runs) working in ``directory``.

    Snakemake moves into its ``--directory`` when it starts; one still starting is found by
    its ``--directory`` argument. Read from /proc, so only this machine's processes.
    """
    target = Path(directory).resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        argv = process_argv(pid)
        if not _is_snakemake(argv) or any(_DRY.match(a) for a in argv):
            continue
        where = _run_directory(pid, argv)
        try:
            if where is not None and where.resolve() == target and pid_alive(pid):
                found.append(pid)
        except OSError:
            continue
    return sorted(found)


def _check_snakemake_locks(directory: Path, info: dict) -> list[Path]:
    """Snakemake's locks in ``directory`` if their holder is gone; else refuse, naming it."""
    where = Path(directory).resolve()
    live = snakemake_runs_in(where)
    if live:
        raise LlmdynError(
            f"a Snakemake run works in {where}: {', '.join(map(describe, live))}. Wait for it "
            f"to finish, or stop it (kill {live[0]}); a second run would write the same files")
    stale = _snakemake_locks(where)
    host = info.get("host")
    if stale and host and host != socket.gethostname():
        raise LlmdynError(
            f"Snakemake's lock in {where} was left by a run on host {host} (PID "
            f"{info.get('pid', '?')}), which this machine cannot check. If that run has ended, "
            f"clear the lock with `llmdyn workflow --unlock --directory {where}` and run again")
    return stale


@contextlib.contextmanager
def workflow_lock(directory: Path) -> Iterator[WorkflowLock]:
    """Hold the run lock of ``directory`` (refusing a live run there), clearing stale locks.

    Raises:
        LlmdynError: another ``llmdyn workflow`` (or its Snakemake) holds the lock, or a plain
            ``snakemake`` works in ``directory`` (the message names their PIDs), or Snakemake's
            locks there were left by a run on another host (advising ``--unlock``).
    """
    path = Path(directory) / ".snakemake" / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        _take(fd, path, directory)
        stale = _check_snakemake_locks(Path(directory), _recorded(path))
        for lock in stale:
            lock.unlink(missing_ok=True)
        if stale:
            print(f"llmdyn workflow: cleared Snakemake's stale lock in {directory} (the run "
                  "that held it has ended)", flush=True)
        yield WorkflowLock(path, fd)
    finally:
        os.close(fd)  # Snakemake's inherited copy keeps the lock until it exits too


def _take(fd: int, path: Path, directory: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pids = lock_holders(path)  # the live holders: after kill -9 of llmdyn, its Snakemake
        stop = f"kill {' '.join(map(str, pids))}" if pids else "kill <PID>"
        raise LlmdynError(
            f"another llmdyn workflow is running in {Path(directory).resolve()}: "
            f"{holder(path)}. Wait for it to finish, or stop it ({stop}); a second "
            "run would write the same files") from None


def unlock(directory: Path) -> list[Path]:
    """Remove Snakemake's locks in ``directory`` (``llmdyn workflow --unlock``).

    For a lock left by a run on another host, once the user knows that run has ended. A run
    alive on this machine is still refused, as :func:`workflow_lock` does.

    Returns:
        The lock files removed.
    """
    path = Path(directory) / ".snakemake" / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        _take(fd, path, directory)
        stale = _check_snakemake_locks(Path(directory), {})  # the other host's word is taken
        for lock in stale:
            lock.unlink(missing_ok=True)
        os.ftruncate(fd, 0)  # the other host's record goes with its lock
        return stale
    finally:
        os.close(fd)
