"""Where the repository and its committed data live: found here once for every module."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]  # lib/llmdyn/core/paths.py -> the repository root
DATA = REPO / "data"  # committed tables and texts (not models, not results)


def data_file(name: str) -> Path:
    """The committed file ``data/<name>`` (the path, whether or not it exists)."""
    return DATA / name
