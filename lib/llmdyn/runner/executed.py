"""Whether an executed chapter may be rendered: papermill finished it, and no one edited it."""

from __future__ import annotations

from pathlib import Path

from llmdyn.runner import cells_digest


def unfinished(path: Path) -> str | None:
    """Why the executed notebook at ``path`` is not a finished papermill run, or None.

    Finished means: papermill recorded an end time and no exception, and every code cell has
    papermill's status "completed" (a run cut off by a signal leaves cells "pending").
    """
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
    except FileNotFoundError:
        return "not executed"
    except (OSError, ValueError) as err:
        return f"unreadable ({err})"
    meta = nb.metadata.get("papermill", {})
    if meta.get("exception"):
        return "failed"  # a cell raised an error
    code = [c for c in nb.cells if c.cell_type == "code"]
    done = sum(c.metadata.get("papermill", {}).get("status") == "completed" for c in code)
    if done < len(code):
        return f"{done} of its {len(code)} code cells ran"
    if not meta.get("end_time"):
        return "papermill recorded no end time"
    return None


def not_rendered(path: Path) -> str | None:
    """Why the book must not render ``path``: :func:`unfinished`, or edited since; else None."""
    return unfinished(path) or cells_digest.edited(path)
