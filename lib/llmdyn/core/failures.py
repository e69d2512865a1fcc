"""What the operating system refused (full disk, read-only store, symlink loop) as one sentence."""

from __future__ import annotations

import errno
import os
import re

__all__ = ["as_os_error", "os_error_message"]

_WHERE = ("write elsewhere: --out, --root, LLMDYN_RESULTS (results cache) or LLMDYN_CACHE "
          "(converted models)")
_FULL = (errno.ENOSPC, errno.EDQUOT)  # only there does freeing space help
_WHY = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ELOOP: "a symbolic link loops",
}
# A path that cannot be one: what is wrong with it, and the one fix there is.
_PATH = {
    errno.ENOTDIR: "a part of the path is a file, not a directory",
    errno.EISDIR: "it is a directory, not a file",
    errno.ENOENT: "no such file or directory (a directory on the way is missing, or the file "
                  "system, e.g. /proc, makes no new files)",
    errno.ENAMETOOLONG: "the name is too long",
}


def os_error_message(err: OSError) -> str | None:
    """One line saying what the OS refused, where, and what to change; None for other errors.

    Args:
        err: an OSError raised while writing results, checkpoints or caches.

    Returns:
        e.g. ``"cannot write /x/results/m/a.npz: no space left on the device; free space or
        write elsewhere: ..."``, or None when ``err.errno`` is not one of the refusals above
        (a bug then keeps its traceback).
    """
    where = err.filename if err.filename is not None else "a file"
    if err.errno in _PATH and err.filename is not None:  # else a bug's: keep its traceback
        return f"cannot use {where}: {_PATH[err.errno]}; give another path"
    why = _WHY.get(err.errno)
    if why is None:
        return None
    if err.errno == errno.ELOOP:
        return (f"cannot use {where}: {why}; fix or remove the link (e.g. LLMDYN_RESULTS must "
                "name a directory)")
    return f"cannot write {where}: {why}; {'free space or ' if err.errno in _FULL else ''}{_WHERE}"


_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def as_os_error(err: Exception, where: object) -> OSError | None:
    """The OSError inside a library's own exception, with ``where`` as its file.

    safetensors' ``SafetensorError`` says ``... (os error 28)``; None when it names no error.
    """
    found = _OS_ERROR.search(str(err))
    if found is None:
        return None
    code = int(found.group(1))
    return OSError(code, os.strerror(code), str(where))
