"""Outside text renders as itself: markdown_text, markdown_code and the tables that use them.

The known answer is the string itself: markdown-it (the parser under MyST, with the book's
dollar math and GFM tables) must turn the escaped text into one paragraph, cell or code span
whose only content is the original string, HTML-escaped, with no element of its own.
"""

from __future__ import annotations

import html

import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from llmdyn.core.escape import Md, markdown_code, markdown_text
from llmdyn.core.tables import markdown_grid, markdown_table

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(2)</script>",
    "<a href=javascript:alert(3)>j</a>",
    "[j](javascript:alert(4))",
    "![i](x.png)",
    "<https://example.com>",
    "**bold** _em_ `code` $x^2$ ~~gone~~",
    "{doc}`intro` &lt; &amp; \\<b> a|b",
    "/tmp/models/x<img src=x onerror=alert(5)>",
    "‘ Paris’ ‘<|endoftext|>’",
]


def _render(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").use(dollarmath_plugin).render(text)


def _escaped(text: str) -> str:
    """The text as markdown-it writes text content (& < > " escaped, ' kept)."""
    return html.escape(text, quote=False).replace('"', "&quot;")


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_renders_as_the_text_itself(text):
    assert _render(markdown_text(text)) == f"<p>{_escaped(text)}</p>\n"


def test_line_breaks_become_spaces_so_no_block_starts_inside():
    assert _render(markdown_text("a\n# heading\r\n- item\r:::{note}")) == \
        "<p>a # heading - item :::{note}</p>\n"


def test_markdown_is_not_escaped_twice():
    once = markdown_text("<b>")
    assert isinstance(once, Md) and markdown_text(once) == once == "\\<b>"


@pytest.mark.parametrize("text", ["a`b<i>", "``x``", "`", "plain"])
def test_a_code_span_holds_any_text(text):
    assert _render(markdown_code(text)) == f"<p><code>{_escaped(text)}</code></p>\n"


def test_table_cells_and_header_are_text_unless_markdown():
    table = markdown_grid(["<h>", "b"], [[text, Md("**kept**")] for text in HOSTILE])
    rendered = _render(table)
    assert "<th>&lt;h&gt;</th>" in rendered
    for text in HOSTILE:
        assert f"<td>{_escaped(text)}</td>\n<td><strong>kept</strong></td>" in rendered
    # what cannot open markup stays as it is: an identifier, an interval
    assert markdown_table([{"a": "_x_ n_prompts [0.4, 0.6]"}]) == \
        "| a |\n| --- |\n| \\_x\\_ n_prompts [0.4, 0.6] |"
