"""The one renderer of the book's tables, as Markdown or as HTML.

The chapters, the library's summaries (chapters 01–11, ``claims``, ``emergence``,
``generalization``, ``vision.analysis``, the build times) and the reports of ``tools/`` and
``bench/`` print their Markdown tables through :func:`markdown_table` (rows of named cells: the
header is written once, as the rows' keys, and a row cannot have a cell too many) or, where a
header repeats a name, :func:`markdown_grid`. Both write every cell and header name as literal
text (`llmdyn.core.escape.markdown_text`: a token's text or a model's directory name never
becomes markup) unless it is `Md`, composed by the caller from escaped parts. The HTML
tables (the scorecard's, the abstracts' and the summary grid, which carry classes, row
attributes and cells of markup) go through :func:`html_table`, which escapes every cell that is
not `Html`. No other module writes a ``| a | b |`` line or a ``<tr>``;
``tests/core/test_tables.py`` checks that.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from llmdyn import LlmdynError
from llmdyn.core.escape import Md, markdown_text

_RULE = {"left": "---", "right": "---:", "center": ":---:"}


def markdown_table(rows: Sequence[Mapping[str, Any]], *,
                   align: Mapping[str, str] | None = None) -> str:
    """``| a | b |`` lines: the first row's keys as the header, each value as literal text.

    A value is written as ``str(value)`` with Markdown's active characters escaped
    (`markdown_text`), or as it is if it is `Md`.

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
        header: the column names, shown as literal text (repeats allowed).
        rows: one sequence of cells per row, each as long as ``header``: literal text, or
            `Md` written as it is (its line breaks spaced).
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
    lines = [list(map(_md_cell, header)), [_RULE[align.get(h, "left")] for h in header]]
    lines += [list(map(_md_cell, row)) for row in rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def _md_cell(cell: Any) -> str:
    """One Markdown cell: `Md` with its line breaks spaced, anything else escaped text."""
    if isinstance(cell, Md):
        return " ".join(cell.splitlines())
    return markdown_text(cell)


def escape_cell(text: str) -> Md:
    """A cell's text as literal Markdown on one line: markup escaped, pipes too, breaks spaced."""
    return markdown_text(text)


class Html(str):
    """Text that already is HTML (escaped where it had to be): `html_table` writes it as it is."""

    __slots__ = ()


@dataclass(frozen=True)
class Cell:
    """An `html_table` cell with attributes on its ``<td>``, e.g. ``Cell("—", {"class": "none"})``.

    ``content`` follows the rule of any cell: an `Html` as it is, anything else escaped.
    """

    content: Any
    attrs: Mapping[str, Any] = field(default_factory=dict)


# an attribute name HTML allows unquoted (class, title, data-item, ...)
_ATTR_NAME = re.compile(r"[A-Za-z_:][-A-Za-z0-9_:.]*")


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, css_class: str = "table",
               row_attrs: Sequence[Mapping[str, Any]] | None = None,
               full_width: bool = False) -> str:
    """One ``<table>`` on one line: a ``<thead>`` row of ``header``, a ``<tbody>`` row per row.

    A cell is escaped text (``str(cell)`` through ``html.escape``), unless it is `Html`, written as
    it is, or a `Cell`, whose content follows the same rule and whose attributes go on its
    ``<td>``. The header's names are text (repeats allowed). Attribute values are escaped, in the
    order given.

    Args:
        header: the column names.
        rows: one sequence of cells per row, each as long as ``header``; none gives the header
            alone.
        css_class: the table's ``class`` ("table" is the theme's table style).
        row_attrs: one mapping per row of its ``<tr>``'s attributes (e.g. ``{"class":
            "verdict-holds"}``, ``{"data-item": "A-1"}``); an empty mapping for none.
        full_width: wrap the table in ``<div class="full-width">``, which lets sphinx-book-theme
            spread a wide table into the page's margin.

    Raises:
        LlmdynError: no header, a row of another length, as many ``row_attrs`` as rows not
            given, or an attribute name HTML does not allow.
    """
    header = [str(h) for h in header]
    if not header:
        raise LlmdynError("html_table needs a header of at least one column")
    short = [i for i, row in enumerate(rows) if len(row) != len(header)]
    if short:
        raise LlmdynError(f"every row must have the {len(header)} cells of {header}; rows {short} "
                          "do not")
    attrs = [{} for _ in rows] if row_attrs is None else list(row_attrs)
    if len(attrs) != len(rows):
        raise LlmdynError(f"row_attrs: {len(attrs)} mappings for {len(rows)} rows; give one per "
                          "row (an empty one for a row without attributes)")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(f"<tr{_attributes(a)}>" + "".join(map(_td, row)) + "</tr>"
                   for row, a in zip(rows, attrs, strict=True))
    table = (f'<table{_attributes({"class": css_class})}><thead><tr>{head}</tr></thead>'
             f"<tbody>{body}</tbody></table>")
    return f'<div class="full-width">{table}</div>' if full_width else table


def _td(cell: Any) -> str:
    """One ``<td>``: a `Cell`'s attributes, its content as `Html` or escaped text."""
    attrs = cell.attrs if isinstance(cell, Cell) else {}
    content = cell.content if isinstance(cell, Cell) else cell
    text = content if isinstance(content, Html) else html.escape(str(content))
    return f"<td{_attributes(attrs)}>{text}</td>"


def _attributes(attrs: Mapping[str, Any]) -> str:
    """`` name="value"`` for each attribute (values escaped), "" for none."""
    bad = [name for name in attrs if not _ATTR_NAME.fullmatch(name)]
    if bad:
        raise LlmdynError(f"{bad} are not HTML attribute names (letters, digits, '-', '_', ':', "
                          "'.', not starting with a digit or '-')")
    return "".join(f' {name}="{html.escape(str(value))}"' for name, value in attrs.items())


class _Rows(HTMLParser):
    """The text of every ``<th>``/``<td>`` of HTML tables, row by row (tags dropped)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("br", "div", "p") and self._cell is not None and "".join(self._cell).strip():
            self._cell.append("; ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(re.sub(r"\s+", " ", "".join(self._cell)).strip(" ;"))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def html_as_markdown(table: str) -> str:
    """An `html_table` as a Markdown table of its cells' text, for builders that drop raw HTML.

    The first row is the header; markup is dropped and line breaks inside a cell become "; ".
    """
    parser = _Rows()
    parser.feed(table)
    rows = [r for r in parser.rows if r]
    if not rows:
        raise LlmdynError("html_as_markdown found no table rows in its input")
    return markdown_grid(rows[0], [[escape_cell(c) for c in r] for r in rows[1:]])


def html_or_markdown(html_text: str, markdown: str | None = None) -> str:
    """Raw HTML for the HTML book and its Markdown form for the PDF (MyST ``{only}`` blocks).

    Args:
        html_text: the HTML (one block, e.g. an `html_table`).
        markdown: its Markdown form; None converts ``html_text``'s table (`html_as_markdown`).
    """
    markdown = html_as_markdown(html_text) if markdown is None else markdown
    return (f"::::{{only}} html\n```{{raw}} html\n{html_text.strip()}\n```\n::::\n\n"
            f"::::{{only}} latex\n{markdown.strip()}\n::::\n")
