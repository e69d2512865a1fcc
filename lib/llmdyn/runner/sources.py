"""What a chapter's result depends on: the library files its imports reach, and the data they name.

The library files are the import closure of the notebook's code (:mod:`llmdyn.core.closure`,
which a stored result's code hash uses too); the data are the files of ``data/`` those name.
"""

from __future__ import annotations

import functools
from pathlib import Path

from llmdyn.core.closure import imported_files, lazy_exports, library_closure, module_file, stamp

__all__ = ["imported_files", "lazy_exports", "library_closure", "module_file", "named_data"]


@functools.lru_cache(maxsize=4096)
def _text(path: Path, version: tuple[int, int, int]) -> str:
    del version  # part of the cache key only
    return path.read_text(encoding="utf-8")


def named_data(files: list[Path], data: Path) -> list[Path]:
    """Files directly under ``data`` whose name appears in the text of one of ``files``."""
    texts = [_text(f, stamp(f)) for f in files]
    return [d for d in sorted(data.iterdir()) if d.is_file() and any(d.name in t for t in texts)]
