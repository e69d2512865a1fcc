"""The workflow's ``convert`` job: each packaged model converted once, before its chapters run.

Chapters depend on the job's stamp (``results/models/<model>.json``), so no chapter converts and
no two chapters wait on one conversion. The conversion itself is
:func:`llmdyn.models.packaged.packaged_safetensors` (under its own file lock).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmdyn.core.atomic import atomic_write

__all__ = ["convert_packaged", "convert_stamp_valid"]


def convert_packaged(model: str, stamp: Path) -> dict[str, Any]:
    """The ``convert`` job: convert packaged ``model`` once, then write ``stamp`` (atomically).

    The stamp records the converted directory and its digests.
    """
    from llmdyn.models.packaged import packaged_safetensors

    directory, identity = packaged_safetensors(model)
    record = {"model": model, "directory": str(directory), **identity}
    stamp.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    atomic_write(stamp, lambda f: f.write(text.encode()))  # never onto a device or FIFO
    return record


def convert_stamp_valid(stamp: Path, *, remove: bool = False) -> bool:
    """Whether a ``convert`` stamp's directory still holds a finished conversion.

    A stamp whose directory is gone (the cache was emptied) or unreadable is invalid; with
    ``remove`` it is deleted, so the workflow converts again before the chapters run.
    """
    from llmdyn.models.convert import MANIFEST

    if not stamp.exists():
        return False
    try:
        valid = (Path(json.loads(stamp.read_text())["directory"]) / MANIFEST).is_file()
    except (OSError, ValueError, KeyError, TypeError):
        valid = False
    if not valid and remove:
        stamp.unlink(missing_ok=True)
    return valid
