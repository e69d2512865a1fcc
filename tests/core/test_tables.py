"""The one Markdown table renderer (llmdyn.core.tables) that every chapter's table goes through."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.core.paths import REPO
from llmdyn.core.tables import escape_cell, markdown_grid, markdown_table


def test_a_known_table():
    rows = [{"model": "a", "n": 3, "R²": "0.50"}, {"model": "b", "n": 12, "R²": "—"}]
    assert markdown_table(rows, align={"n": "right"}) == (
        "| model | n | R² |\n| --- | ---: | --- |\n| a | 3 | 0.50 |\n| b | 12 | — |")


@pytest.mark.parametrize("rows, align, match", [
    ([], None, "at least one row"),
    ([{"a": 1}, {"b": 2}], None, r"columns \['a'\]"),
    ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], None, "columns"),  # same keys, other order
    ([{"a": 1}], {"c": "right"}, "names no column"),
    ([{"a": 1}], {"a": "middle"}, "no alignment"),
])
def test_rows_that_do_not_make_a_table_are_refused(rows, align, match):
    with pytest.raises(LlmdynError, match=match):
        markdown_table(rows, align=align)


def test_a_grid_keeps_a_repeated_column_name():
    header = ["predictor", "loss: R²", "p", "gap: R²", "p"]
    assert markdown_grid(header, [["a", 0.5, 0.01, "", 0.2]], align={"p": "right"}) == (
        "| predictor | loss: R² | p | gap: R² | p |\n| --- | --- | ---: | --- | ---: |\n"
        "| a | 0.5 | 0.01 |  | 0.2 |")
    # the named-cell form is the grid of its keys
    assert markdown_table([{"a": 1, "b": 2}]) == markdown_grid(["a", "b"], [(1, 2)])


@pytest.mark.parametrize("header, rows, match", [
    ([], [[1]], "needs a header and at least one row"),
    (["a"], [], "needs a header and at least one row"),
    (["a", "b"], [[1, 2], [3]], r"rows \[1\] do not"),
    (["a"], [["x"]], "names no column"),
])
def test_a_grid_that_is_not_a_table_is_refused(header, rows, match):
    with pytest.raises(LlmdynError, match=match):
        markdown_grid(header, rows, align={"z": "right"} if match == "names no column" else None)


def test_escape_cell_keeps_a_row_one_line_with_its_cells():
    assert escape_cell("m̃ with |A|\npipes") == r"m̃ with \|A\| pipes"


# --- no table is built by hand outside llmdyn.core.tables -----------------------------------

# a Markdown table's rule row (``| --- |``, ``|---:|``, ``" --- |" * n``): a dash run beside a pipe
_RULE_ROW = re.compile(r"\|\s*:?-{3,}|-{3,}:?\s*\|")
_RENDERER = REPO / "lib" / "llmdyn" / "core" / "tables.py"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions (prose, not code)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def hand_built_rows(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each place ``source`` writes a Markdown table row itself.

    Two idioms: a string holding a rule row (``"|---|"``, ``" --- |"``), and joining cells with
    a pipe (``" | ".join(cells)``). Docstrings are prose and are not searched.
    """
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in skip and _RULE_ROW.search(node.value)):
            found.append((node.lineno, f"a rule row {node.value.strip()!r}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "join" and isinstance(node.func.value, ast.Constant)
              and isinstance(node.func.value.value, str) and node.func.value.value.strip() == "|"):
            found.append((node.lineno, f"cells joined with {node.func.value.value!r}"))
    return found


def _notebook_code(path: Path) -> str:
    """A notebook's code cells as one Python source (IPython magics and shell lines dropped)."""
    cells = json.loads(path.read_text())["cells"]
    lines = []
    for cell in cells:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            lines += ["" if line.lstrip().startswith(("%", "!")) else line
                      for line in source.splitlines()]
    return "\n".join(lines)


@pytest.mark.parametrize("source, count", [
    ('lines = ["| a | b |", "|" + " --- |" * 2]', 1),
    ('row = "| " + " | ".join(cells) + " |"', 1),
    ('rule = "|---|---:|"', 1),
    ('"""A docstring may show | a | b |\n| --- | --- |"""\nx = "| parameter | value |"', 0),
    ('text = "---"; y = "a | b"', 0),  # a horizontal rule, a union type in prose
])
def test_the_search_finds_the_hand_built_idioms(source, count):
    assert len(hand_built_rows(source)) == count


def test_no_module_or_notebook_builds_a_markdown_table_by_hand():
    sources = {p: p.read_text() for p in sorted((REPO / "lib").rglob("*.py")) if p != _RENDERER}
    sources |= {p: _notebook_code(p) for p in sorted((REPO / "notebooks").glob("*.ipynb"))}
    assert len(sources) > 50  # the search saw the library and the chapters
    found = [f"{p.relative_to(REPO)}:{line}: {what}" for p, text in sources.items()
             for line, what in hand_built_rows(text)]
    assert not found, ("these places write a Markdown table row by hand; render the table with "
                       "llmdyn.core.tables.markdown_table (named cells) or markdown_grid (a "
                       "header that repeats a name) instead:\n  " + "\n  ".join(found))
