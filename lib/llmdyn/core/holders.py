"""Which live processes hold a lock file, read from Linux's /proc, and each named in words."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["describe", "lock_holders", "pid_alive", "process_argv", "process_cwd"]

PROC = Path("/proc")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # another user's process (or an impossible PID)
    try:  # a killed child not yet reaped by its parent still answers kill(0)
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def process_argv(pid: int) -> list[str]:
    """The command line of ``pid`` ([] if it is gone or unreadable)."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def process_cwd(pid: int) -> Path | None:
    """The working directory of ``pid`` (None if it is gone or unreadable)."""
    try:
        return Path(os.readlink(PROC / str(pid) / "cwd"))
    except OSError:
        return None


def describe(pid: int, host: str | None = None) -> str:
    """``PID 123 [on host h] (python -m snakemake ...)``: the PID and its command line's start."""
    command = " ".join(" ".join(process_argv(pid)).split())  # one line, whatever the arguments
    if len(command) > 80:
        command = command[:77] + "..."
    where = f" on host {host}" if host else ""
    return f"PID {pid}{where} ({command})" if command else f"PID {pid}{where}"


def lock_holders(path: str | os.PathLike) -> list[int]:
    """The live processes (not this one) that hold the ``flock`` on ``path``.

    ``/proc/locks`` names the process that took the lock, but an ``flock`` belongs to the open
    file, which a child inherits: when the taker is gone (``kill -9`` of ``llmdyn workflow``
    while its Snakemake runs on), the holders are the live processes with the file open.
    Processes that wait for the lock are not counted. Empty where /proc cannot tell.
    """
    try:
        inode = os.stat(path).st_ino
    except OSError:
        return []
    takers = []
    try:
        for line in (PROC / "locks").read_text().splitlines():
            fields = line.split()
            if "->" in fields or len(fields) < 6:
                continue  # a process blocked on a lock, not one holding it
            if fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
                takers.append(int(fields[4]))
    except (OSError, ValueError):
        pass
    alive = [pid for pid in takers if pid != os.getpid() and pid_alive(pid)]
    return sorted(set(alive)) if alive else _opened_by(Path(path))


def _opened_by(path: Path) -> list[int]:
    """The live processes (not this one) with ``path`` open."""
    target = os.path.realpath(path)
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue  # gone, or another user's
        for fd in fds:
            try:
                if os.readlink(fd) == target:
                    found.append(int(entry.name))
                    break
            except OSError:
                continue
    return sorted(pid for pid in found if pid_alive(pid))
