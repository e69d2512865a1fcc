"""The one table renderer (llmdyn.core.tables, Markdown and HTML) that every table goes through."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.core.paths import REPO
from llmdyn.core.tables import (
    Cell,
    Html,
    escape_cell,
    html_as_markdown,
    html_or_markdown,
    html_table,
    markdown_grid,
    markdown_table,
)


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


# --- HTML -----------------------------------------------------------------------------------

def test_a_known_html_table():
    assert html_table(["a", "b"], [[1, "x"], [2, "y"]]) == (
        '<table class="table"><thead><tr><th>a</th><th>b</th></tr></thead><tbody>'
        "<tr><td>1</td><td>x</td></tr><tr><td>2</td><td>y</td></tr></tbody></table>")


def test_html_cells_are_escaped_unless_they_are_markup():
    row = ['a<b & "c"', Html("<strong>kept</strong>"), Cell("x<y", {"class": "words"}),
           Cell(Html("<em>i</em>"), {"title": 'say "hi" & <go>'})]
    assert html_table(["<h>", "b", "c", "d"], [row]) == (
        '<table class="table"><thead><tr><th>&lt;h&gt;</th><th>b</th><th>c</th><th>d</th></tr>'
        '</thead><tbody><tr><td>a&lt;b &amp; &quot;c&quot;</td><td><strong>kept</strong></td>'
        '<td class="words">x&lt;y</td><td title="say &quot;hi&quot; &amp; &lt;go&gt;"><em>i</em>'
        "</td></tr></tbody></table>")
    # Html is a str: it joins and compares as its text
    assert Html("<b>") == "<b>" and isinstance(Html("<b>"), str)


def test_html_rows_carry_attributes_and_the_table_its_class_and_width():
    page = html_table(["grade"], [["holds"], ["does not hold"]], css_class="table scorecard",
                      row_attrs=[{"class": "verdict-holds", "data-item": "A-1"}, {}],
                      full_width=True)
    assert page == (
        '<div class="full-width"><table class="table scorecard"><thead><tr><th>grade</th></tr>'
        '</thead><tbody><tr class="verdict-holds" data-item="A-1"><td>holds</td></tr>'
        "<tr><td>does not hold</td></tr></tbody></table></div>")
    # no rows: the header alone
    assert html_table(["a"], []) == ('<table class="table"><thead><tr><th>a</th></tr></thead>'
                                     "<tbody></tbody></table>")


@pytest.mark.parametrize("header, rows, row_attrs, match", [
    ([], [], None, "at least one column"),
    (["a", "b"], [[1, 2], [3]], None, r"rows \[1\] do not"),
    (["a"], [[1], [2]], [{}], "1 mappings for 2 rows"),
    (["a"], [[1]], [{"on click": "x"}], "not HTML attribute names"),
    (["a"], [[Cell(1, {'"x': "y"})]], None, "not HTML attribute names"),
])
def test_an_html_table_that_cannot_be_written_is_refused(header, rows, row_attrs, match):
    with pytest.raises(LlmdynError, match=match):
        html_table(header, rows, row_attrs=row_attrs)


def test_an_html_table_has_a_markdown_form_for_the_pdf():
    table = html_table(["grade", "note"], [[Html('<span class="chip">holds</span> 2 [1, 3]<br>'
                                                 "<small>a|b</small>"), "c & d"]])
    assert html_as_markdown(table) == ("| grade | note |\n| --- | --- |\n"
                                       r"| holds 2 [1, 3]; a\|b | c & d |")
    both = html_or_markdown(table)
    assert both.startswith("::::{only} html\n```{raw} html\n<table")
    assert both.endswith("::::{only} latex\n" + html_as_markdown(table) + "\n::::\n")
    with pytest.raises(LlmdynError, match="no table rows"):
        html_as_markdown("<p>no table</p>")


# --- no table is built by hand outside llmdyn.core.tables -----------------------------------

# a Markdown table's rule row (``| --- |``, ``|---:|``, ``" --- |" * n``): a dash run beside a pipe
_RULE_ROW = re.compile(r"\|\s*:?-{3,}|-{3,}:?\s*\|")
# an HTML table's own tags (not <thead>/<tbody> alone: a table that has those has <tr> too)
_HTML_TAG = re.compile(r"<(table|tr|th|td)[\s>]", re.IGNORECASE)
_RENDERER = REPO / "lib" / "llmdyn" / "core" / "tables.py"
# tables still written by hand, each with why (the search skips these files)
HAND_BUILT_ALLOWED: dict[str, str] = {}  # path -> why it may build a table by hand


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
    """``(line, what)`` for each place ``source`` writes a table row itself.

    Three idioms: a string holding a Markdown rule row (``"|---|"``, ``" --- |"``), joining
    cells with a pipe (``" | ".join(cells)``), and a string holding an HTML table tag
    (``<table``, ``<tr``, ``<th``, ``<td``). Docstrings are prose and are not searched.
    """
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in skip and _RULE_ROW.search(node.value)):
            found.append((node.lineno, f"a rule row {node.value.strip()!r}"))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in skip and _HTML_TAG.search(node.value)):
            found.append((node.lineno, f"an HTML tag {_HTML_TAG.search(node.value).group(0)!r}"))
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
    ("cells = f'<td class=\"x\">{v}</td>'", 1),
    ('page = "<table>" + rows + "</table>"', 1),
    ('row = f"<tr data-item={item}>"', 1),  # a tag in an f-string's text
    ('"""<table> in a docstring"""\nx = "<thing>"; y = "<trace>"', 0),
])
def test_the_search_finds_the_hand_built_idioms(source, count):
    assert len(hand_built_rows(source)) == count


def test_no_module_tool_benchmark_or_notebook_builds_a_table_by_hand():
    modules = [p for folder in ("lib", "tools", "bench")
               for p in sorted((REPO / folder).rglob("*.py"))]
    sources = {p: p.read_text() for p in modules
               if p != _RENDERER and str(p.relative_to(REPO)) not in HAND_BUILT_ALLOWED}
    sources |= {p: _notebook_code(p) for p in sorted((REPO / "notebooks").glob("*.ipynb"))}
    seen = {p.relative_to(REPO).parts[0] for p in sources}
    assert len(sources) > 50 and seen == {"lib", "tools", "bench", "notebooks"}
    found = [f"{p.relative_to(REPO)}:{line}: {what}" for p, text in sources.items()
             for line, what in hand_built_rows(text)]
    assert not found, ("these places write a table row by hand; render the table with "
                       "llmdyn.core.tables.markdown_table (named cells), markdown_grid (a "
                       "header that repeats a name) or html_table (HTML: classes, row "
                       "attributes, cells of markup) instead:\n  " + "\n  ".join(found))
