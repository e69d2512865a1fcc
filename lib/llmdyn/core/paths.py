"""Where the repository, its committed data and llmdyn's results live: found here once."""

from __future__ import annotations

import os
from pathlib import Path

from llmdyn import LlmdynError

REPO = Path(__file__).resolve().parents[3]  # lib/llmdyn/core/paths.py -> the repository root
DATA = REPO / "data"  # committed tables and texts (not models, not results)
RESULTS_ENV = "LLMDYN_RESULTS"  # the one setting for every result llmdyn writes


def data_file(name: str) -> Path:
    """The committed file ``data/<name>`` (the path, whether or not it exists)."""
    return DATA / name


def env_dir(name: str, default: str | os.PathLike) -> Path:
    """The directory environment variable ``name`` gives, or ``default`` when it is unset.

    Set but empty (``LLMDYN_RESULTS=``) is refused: it would silently mean the working
    directory.
    """
    value = os.environ.get(name)
    if value is None:
        return Path(default)
    if not value.strip():
        raise LlmdynError(f"{name} is set but empty, which would write into the working "
                          f"directory; unset it (unset {name}) for the default {default}, or "
                          "give a directory")
    return Path(value)


def results_root() -> Path:
    """Where every result goes: ``$LLMDYN_RESULTS``, else ``results`` (relative to the cwd).

    The store's arrays, the training suites (``<root>/suite``), the ViT grids
    (``<root>/vit``), the measurement files (``<root>/measure``), the population tables
    (``<root>/generalization``) and the workflow's stamps (``<root>/models``) all live under
    it, so one setting moves them all.
    """
    return env_dir(RESULTS_ENV, "results")
