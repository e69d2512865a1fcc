"""What papermill wrote: a digest of an executed chapter's cells, kept beside it, checked later.

A chapter's executed notebook is what the book renders. A hand-edited one (a number changed in
an output, a cell's source rewritten) would be rendered as if it had been computed, so
:func:`llmdyn.runner.build.run_chapter` records the sha256 of its cells' sources and outputs
when papermill has finished, in a file beside it (``.<chapter>.cells.sha256``: outside the
notebook, which the HTML job's figure step rewrites), and the book refuses a notebook whose
cells no longer match.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from llmdyn.core.atomic import atomic_write
from llmdyn.data.figures import METADATA_KEY

# What the figure step adds to a shown figure's output (llmdyn.book.figure_files): the caption
# as Markdown and HTML. Not digested: the figure itself (its PNG and SVG) is.
FIGURE_ADDS = ("text/markdown", "text/html")


def digest_path(notebook: Path) -> Path:
    """``.<chapter>.cells.sha256`` beside ``<chapter>.ipynb``."""
    return notebook.with_name(f".{notebook.stem}.cells.sha256")


def _output(out: dict[str, Any]) -> dict[str, Any]:
    if not out.get("metadata", {}).get(METADATA_KEY) or "data" not in out:
        return out
    data = {k: v for k, v in out["data"].items() if k not in FIGURE_ADDS}
    return {**out, "data": data}


def cells_digest(path: Path) -> str:
    """sha256 of every cell's type, source and outputs (not its metadata: timings, tags)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    content = [[c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list)
                else c["source"], [_output(o) for o in c.get("outputs", [])]] for c in cells]
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def record(executed: Path, target: Path) -> None:
    """Record the digest of ``executed`` (papermill's finished file) for ``target``."""
    digest = cells_digest(executed)
    atomic_write(digest_path(target), lambda fh: fh.write(f"{digest}\n".encode()))


def edited(notebook: Path) -> str | None:
    """Why ``notebook``'s cells are not what papermill wrote, or None when they are."""
    try:
        recorded = digest_path(notebook).read_text().strip()
    except FileNotFoundError:
        return f"no record of its cells ({digest_path(notebook).name}) from its run"
    if cells_digest(notebook) != recorded:
        return "its cells differ from what papermill wrote (edited after it ran)"
    return None
