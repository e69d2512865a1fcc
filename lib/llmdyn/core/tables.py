"""Markdown tables from rows of named cells: the one renderer of the book's tables.

The chapters and the library's summaries (chapters 01–11, ``emergence``, ``generalization``,
``vision.analysis``, the build times) all print their tables through :func:`markdown_table`, so
the header is written once, as the rows' keys, and a row cannot have a cell too many.
"""
# llmdyn: outside the code hash (text only; no stored array depends on it)

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llmdyn import LlmdynError

_RULE = {"left": "---", "right": "---:", "center": ":---:"}


def markdown_table(rows: Sequence[Mapping[str, Any]], *,
                   align: Mapping[str, str] | None = None) -> str:
    """``| a | b |`` lines: the first row's keys as the header, each value as ``str(value)``.

    Args:
        rows: one mapping per row, every row with the same keys in the same order.
        align: ``{column: "right" | "center"}`` for columns not left-aligned.

    Raises:
        LlmdynError: no rows, a row with other keys, or an unknown alignment.
    """
    if not rows:
        raise LlmdynError("markdown_table needs at least one row")
    header = list(rows[0])
    for row in rows:
        if list(row) != header:
            raise LlmdynError(f"every row must have the columns {header}, got {list(row)}")
    align = dict(align or {})
    unknown = {k: v for k, v in align.items() if k not in header or v not in _RULE}
    if unknown:
        raise LlmdynError(f"align: {unknown} names no column of {header} or no alignment of "
                          f"{sorted(_RULE)}")
    lines = [header, [_RULE[align.get(h, "left")] for h in header]]
    lines += [[str(row[h]) for h in header] for row in rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)
