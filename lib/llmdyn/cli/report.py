"""A refusal as one line, ``llmdyn <command>: error: <message>``, and the exit status it gives."""

from __future__ import annotations

import sys
from collections.abc import Callable

from llmdyn import LlmdynError
from llmdyn.core.failures import os_error_message


def one_line(command: str, run: Callable[[], int]) -> int:
    """``run()``'s exit status; a refusal printed as one line on stderr instead of a traceback.

    A refused input (`LlmdynError`) returns 2, as argparse does for a bad option; a refusal of
    the operating system that :func:`llmdyn.core.failures.os_error_message` words (a full disk,
    a read-only store) returns 1, and so does too little memory to load torch or a model
    (:func:`memory_message`). Any other exception is a bug and keeps its traceback.
    """
    try:
        return run()
    except LlmdynError as err:  # a refused input: one message, no traceback
        print(f"llmdyn {command}: error: {err}", file=sys.stderr)
        return 2
    except (MemoryError, ImportError) as err:
        message = memory_message(err)
        if message is None:
            raise
        print(f"llmdyn {command}: error: {message}", file=sys.stderr)
        return 1
    except OSError as err:
        message = os_error_message(err)
        if message is None:
            raise
        print(f"llmdyn {command}: error: {message}", file=sys.stderr)
        return 1


# How the dynamic loader words a shared library it could not map for want of address space
_NO_MAP = ("failed to map segment", "cannot allocate memory")


def memory_message(err: BaseException) -> str | None:
    """One sentence for a ``MemoryError``, or an ``ImportError`` of a library that did not fit.

    Under a low address-space limit (``ulimit -v``) importing torch fails with either; None
    for any other import error (a bug or a missing package keeps its traceback).
    """
    if isinstance(err, ImportError) and not any(w in str(err).lower() for w in _NO_MAP):
        return None
    what = f" ({err})" if str(err) else ""
    return (f"out of memory{what}: loading torch and a model needs more memory or address space "
            "than this process may use; raise the limit (ulimit -v unlimited) or free memory, "
            "then run again")
