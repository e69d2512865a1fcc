"""Files that appear whole or not at all, with the umask's mode, and who is writing a temp file.

A write never replaces what is not a regular file: a directory, a device (``--out /dev/null``
run as root replaced the device with a file), a FIFO or a socket is refused, by name, before
the write and, where a command checks its output first (:func:`check_new_file`), before any
work.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmdyn import LlmdynError
from llmdyn.core.failures import os_error_message

__all__ = ["apply_umask", "apply_umask_tree", "atomic_write", "check_new_file",
           "check_regular_file", "not_regular", "safe_name", "temp_prefix", "umask",
           "writer_alive", "writer_state"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    """Return `name` with every run of characters outside ``[A-Za-z0-9._-]`` replaced by ``_``.

    Leading and trailing dots and underscores are stripped so that the result can never be
    ``.``/``..`` or a hidden file, e.g. ``"google/gemma-3-270m"`` -> ``"google_gemma-3-270m"``.
    """
    return _UNSAFE.sub("_", name).strip("._")


def umask() -> int:
    """This process's umask, read without changing it (Linux shows it in /proc)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (not thread-safe, but brief)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike, *, directory: bool = False) -> None:
    """Give `path` the mode a plain ``open`` (or ``mkdir``) would have: 0o666 (0o777) & ~umask.

    ``tempfile`` creates files 0600 and directories 0700 whatever the umask, so a file
    renamed from one into place is unreadable by colleagues on a shared cluster; call this
    on the temp file before the rename.
    """
    os.chmod(path, (0o777 if directory else 0o666) & ~umask())


def apply_umask_tree(directory: str | os.PathLike) -> None:
    """`apply_umask` on `directory` and everything in it (files 0o666, folders 0o777 & ~umask).

    safetensors' ``save_file`` (and so ``save_pretrained``) creates its file 0600 whatever the
    umask, so colleagues on a shared cluster could not read the weights; call this on a
    checkpoint's temp directory before renaming it into place.
    """
    directory = Path(directory)
    apply_umask(directory, directory=True)
    for path in directory.rglob("*"):
        if not path.is_symlink():
            apply_umask(path, directory=path.is_dir())


def _host() -> str:
    """This machine's name as it appears in temp names (no dots: they separate the fields)."""
    return safe_name(socket.gethostname()).replace(".", "_") or "host"


def temp_prefix(name: str) -> str:
    """``.<name>.@<host>.<pid>-``: a temp name saying which process on which machine writes it.

    `writer_state` reads it back, so a sweep removes only the files of writers that are gone.
    """
    return f".{name}.@{_host()}.{os.getpid()}-"


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"))


def not_regular(path: str | os.PathLike) -> str | None:
    """What ``path`` is if it exists and is not a regular file (``"a FIFO (named pipe)"``...).

    A symbolic link is followed: a link to ``/dev/null`` is a character device. None for a
    regular file or a path that does not exist.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def check_regular_file(path: str | os.PathLike, arg: str = "output") -> Path:
    """``path`` as a Path unless it exists and is not a regular file.

    Raises:
        LlmdynError: naming ``arg``, the path and what it is, e.g. ``--out /dev/null is a
            character device, not a regular file ...``.
    """
    what = not_regular(path)
    if what is not None:
        raise LlmdynError(f"{arg} {path} is {what}, not a regular file; writing there would "
                          "replace it. Give the path of a new or regular file")
    return Path(path)


def check_new_file(path: str | os.PathLike, arg: str = "output") -> Path:
    """Refuse, before any work, an output path that cannot be written as a regular file.

    Beyond :func:`check_regular_file`, a file is created and removed in the nearest existing
    directory above ``path``, as the final write will (``/proc`` and ``/sys`` accept no new
    file although they look writable; a read-only or full file system says so here).

    Raises:
        LlmdynError: one line naming ``arg``, the path and the reason.
    """
    out = check_regular_file(path, arg)
    parent = next((p for p in Path(os.path.abspath(out)).parents if p.exists()), None)
    if parent is None:
        return out
    if not parent.is_dir():
        raise LlmdynError(f"{arg} {out}: {parent} is a file, not a directory; choose another "
                          "path")
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=temp_prefix(out.name),
                                         suffix=".tmp"):
            pass
    except OSError as err:
        err.filename = str(parent)  # the directory, not the probe's temp name
        raise LlmdynError(f"{arg} {out}: " + (os_error_message(err) or (
            f"cannot create a file in {parent} ({err.strerror}); choose another path"))) from None
    return out


def atomic_write(path: Path, write: Callable[[Any], None]) -> None:
    """Write via `write(fileobj)` to a ``.tmp`` file beside `path`, fsync, then rename onto it.

    The temp name is unique to the process (`temp_prefix`: host, pid and random letters); the
    file gets the mode the umask gives (not tempfile's 0600) before the rename.

    Raises:
        LlmdynError: `path` exists and is not a regular file (:func:`check_regular_file`);
            nothing is written.
    """
    check_regular_file(path)
    tmp = tempfile.NamedTemporaryFile(dir=path.parent, prefix=temp_prefix(path.name),
                                      suffix=".tmp", delete=False)
    try:
        with tmp:
            write(tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        apply_umask(tmp.name)
        os.replace(tmp.name, path)
    except BaseException:
        Path(tmp.name).unlink(missing_ok=True)
        raise


def writer_state(name: str) -> str:
    """Whether the writer of a temp file ``.<file>[.@<host>].<pid>-<random>.tmp`` still runs.

    Returns:
        ``"alive"`` or ``"dead"`` for a writer of this machine (its pid looked up; a name
        without a host is an older llmdyn's, taken as this machine's), ``"unknown"`` for
        another machine's writer or a name not of this form (judged by age by the caller).
    """
    match = re.search(r"(?:\.@([A-Za-z0-9_-]+))?\.(\d+)-[^.]*\.tmp$", name)
    if match is None or (match.group(1) is not None and match.group(1) != _host()):
        return "unknown"
    try:
        os.kill(int(match.group(2)), 0)
    except ProcessLookupError:
        return "dead"
    except (PermissionError, OverflowError, ValueError):
        return "alive"
    return "alive"


def writer_alive(name: str) -> bool:
    """Whether a temp file's writer may still run: False only when it is known to be gone."""
    return writer_state(name) != "dead"
