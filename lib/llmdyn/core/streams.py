"""Output streams that never fail on a character: a result is never lost to a print."""

from __future__ import annotations

import io
import sys

__all__ = ["safe_streams"]


def safe_streams() -> None:
    r"""Make stdout and stderr write any character, whatever the locale and PYTHONIOENCODING.

    Under ``PYTHONIOENCODING=ascii`` (or a Latin-1 terminal) printing "m̃" raises
    UnicodeEncodeError, and after `llmdyn measure coupling` has written its result that fails
    the job, so Snakemake deletes the finished file. Characters the stream's encoding lacks are
    written as backslash escapes (``m\u0303``) instead; the encoding itself is kept.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # closed or detached: nothing to print to anyway
                pass
