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
    a read-only store) returns 1. Any other exception is a bug and keeps its traceback.
    """
    try:
        return run()
    except LlmdynError as err:  # a refused input: one message, no traceback
        print(f"llmdyn {command}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        message = os_error_message(err)
        if message is None:
            raise
        print(f"llmdyn {command}: error: {message}", file=sys.stderr)
        return 1
