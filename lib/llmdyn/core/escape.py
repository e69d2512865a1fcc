"""Outside text (token texts, model names and paths, prompts, file names) as literal Markdown.

A model's vocabulary, a directory's name or a user's prompt is data. Written into the book's
Markdown as it is, ``<img src=x onerror=…>`` becomes an element with a handler, ``[a](b)`` a
link and ``**x**`` bold. :func:`markdown_text` turns any string into Markdown that renders as
exactly that string; :class:`Md` marks text that already is Markdown (composed from
escaped parts), which the renderers (`llmdyn.core.tables.markdown_grid`, the claim renderers)
write as it is. HTML has its own escape, ``html.escape``, which `llmdyn.core.tables.html_table`
applies to every cell that is not `llmdyn.core.tables.Html`.
"""

from __future__ import annotations

import re

# What can open Markdown or MyST syntax within a line, each escaped by a backslash (CommonMark
# lets one escape any ASCII punctuation, and an escaped character is literal text): the
# backslash; code, emphasis, raw HTML and autolinks, table cells and dollar math always; "_"
# where it can open or close emphasis (not between two letters or digits, as in n_prompts);
# "]" where a link, an image or a reference follows; "[^" (a footnote); "~~"; and "&" where it
# would start an entity. The rest of the text, e.g. an interval "[0.4, 0.6]", stays as it is.
_ACTIVE = re.compile(r"[\\`*<$|]|(?<![^\W_])_|_(?![^\W_])|\](?=[(\[:])|\[(?=\^)|~(?=~)|(?<=~)~"
                     r"|&(?=#?\w+;)")
_LINE_BREAK = re.compile(r"\r\n|[\r\n]")


class Md(str):
    """Text that is Markdown already (outside strings in it escaped): written as it is."""

    __slots__ = ()


def markdown_text(text: object) -> Md:
    r"""``str(text)`` as inline Markdown that renders as exactly that text, on one line.

    Every character that could start markup is backslash-escaped and line breaks become spaces,
    so the result is safe anywhere inside a line: a paragraph, a list item, a table cell. A
    `Md` argument is returned as it is (it is escaped already).

    >>> markdown_text("<img src=x onerror=alert(1)> |A|")
    '\\<img src=x onerror=alert(1)> \\|A\\|'
    """
    if isinstance(text, Md):
        return text
    return Md(_ACTIVE.sub(lambda m: "\\" + m.group(), _LINE_BREAK.sub(" ", str(text))))


def markdown_code(text: object) -> Md:
    """``str(text)`` as an inline code span, fenced by more backticks than any run inside it.

    Inside a code span nothing is markup, so only the fence has to be longer than the text's
    own backticks; line breaks become spaces.
    """
    body = _LINE_BREAK.sub(" ", str(text))
    runs = [len(r) for r in re.findall(r"`+", body)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return Md(f"{fence}{pad}{body}{pad}{fence}")
