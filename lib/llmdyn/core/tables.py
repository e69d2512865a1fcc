"""Markdown tables: the one renderer of the book's tables.

The chapters and the library's summaries (chapters 01–11, ``claims``, ``emergence``,
``generalization``, ``vision.analysis``, the build times) all print their tables through
:func:`markdown_table` (rows of named cells: the header is written once, as the rows' keys, and a
row cannot have a cell too many) or, where a header repeats a name, :func:`markdown_grid`. No
other module writes a ``| a | b |`` line; ``tests/core/test_tables.py`` checks that.
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
    return markdown_grid(header, [[row[h] for h in header] for row in rows], align=align)


def markdown_grid(header: Sequence[str], rows: Sequence[Sequence[Any]], *,
                  align: Mapping[str, str] | None = None) -> str:
    """`markdown_table` from a header and rows of cells in its order: a header may repeat a name.

    For column groups such as ``R² | p | slope`` under each of several measures.

    Args:
        header: the column names, shown as given (repeats allowed).
        rows: one sequence of cells per row, each as long as ``header``.
        align: ``{column: "right" | "center"}``; a repeated name aligns every column so named.

    Raises:
        LlmdynError: no header, no rows, a row of another length, or an unknown alignment.
    """
    header = [str(h) for h in header]
    if not header or not rows:
        raise LlmdynError(f"markdown_grid needs a header and at least one row, got {len(header)} "
                          f"columns and {len(rows)} rows")
    short = [i for i, row in enumerate(rows) if len(row) != len(header)]
    if short:
        raise LlmdynError(f"every row must have the {len(header)} cells of {header}; rows {short} "
                          "do not")
    align = dict(align or {})
    unknown = {k: v for k, v in align.items() if k not in header or v not in _RULE}
    if unknown:
        raise LlmdynError(f"align: {unknown} names no column of {header} or no alignment of "
                          f"{sorted(_RULE)}")
    lines = [header, [_RULE[align.get(h, "left")] for h in header]]
    lines += [[str(cell) for cell in row] for row in rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def escape_cell(text: str) -> str:
    """A cell's text made safe inside a Markdown table row: pipes escaped, line breaks spaced."""
    return text.replace("|", r"\|").replace("\n", " ")
