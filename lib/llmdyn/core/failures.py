"""What the operating system refused (full disk, read-only store, symlink loop) as one sentence."""

# llmdyn: outside the code hash (no stored array depends on this module; see core/store.py)

from __future__ import annotations

import errno

__all__ = ["os_error_message"]

_WHERE = ("free space or write elsewhere: --out, --root, LLMDYN_RESULTS (results cache) or "
          "LLMDYN_CACHE (converted models)")
_WHY = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ELOOP: "a symbolic link loops",
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
    why = _WHY.get(err.errno)
    if why is None:
        return None
    where = err.filename if err.filename is not None else "a file"
    if err.errno == errno.ELOOP:
        return (f"cannot use {where}: {why}; fix or remove the link (e.g. LLMDYN_RESULTS must "
                "name a directory)")
    return f"cannot write {where}: {why}; {_WHERE}"
