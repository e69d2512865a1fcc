"""A chapter's parameters cell, written from its parameter class: the one place for the docs.

Each parameter is documented once, in its class (`llmdyn.book.params.chapters`): the comment
after the field, or ``#:`` lines just above it when the text is longer than a line. A field
inherited from a shared base (``seed``, ``model``) takes its base's text unless the chapter
declares it again with its own. :func:`parameters_cell` turns a class into the literal cell
papermill needs (``name = default  # doc``, in field order); ``tools/parameter_cells.py``
writes it into the notebooks and a test checks that every notebook's cell is this text.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import re
import textwrap
import tokenize
from typing import Any

DOC_LINE = "#:"  # a doc comment above a field (the Sphinx convention), for long texts


def _docs_of_class(klass: type) -> dict[str, str]:
    """``{field: doc}`` for the fields declared in one class's own body."""
    source = textwrap.dedent(inspect.getsource(klass))
    comments = {tok.start[0]: tok.string for tok in
                tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    body = ast.parse(source).body[0].body  # the class's statements
    docs = {}
    for node in body:
        if not isinstance(node, ast.AnnAssign) or "ClassVar" in ast.unparse(node.annotation):
            continue
        above, line = [], node.lineno - 1
        while comments.get(line, "").startswith(DOC_LINE):
            above.insert(0, comments[line][len(DOC_LINE):].strip())
            line -= 1
        trailing = comments.get(node.end_lineno, "").lstrip("#").strip()
        docs[node.target.id] = " ".join(above) if above else trailing
    return docs


def field_docs(cls: type) -> dict[str, str]:
    """``{field: doc}`` of a parameter class, a subclass's text winning over its base's."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs.update(_docs_of_class(klass))
    return docs


def literal(value: Any) -> str:
    """``value`` as the cell writes it: double-quoted text, lists in brackets, None."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def parameters_cell(cls: type) -> str:
    """The parameters cell of the chapter that ``cls`` describes, defaults and docs included."""
    defaults, docs = cls(), field_docs(cls)
    lines = []
    for f in dataclasses.fields(cls):
        code = f"{f.name} = {literal(getattr(defaults, f.name))}"
        lines.append(f"{code}  # {docs[f.name]}" if docs.get(f.name) else code)
    return "\n".join(lines)


def papermill_readable(doc: str) -> bool:
    """Whether papermill can read a cell line with this doc: it skips lines with two '='."""
    return re.search("=", doc) is None


def params_class(cells: list[dict]) -> type:
    """The parameter class that a chapter's code cells read with ``XParams.from_cell``."""
    import llmdyn.book.params as params

    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    found = re.search(r"(\w+Params)\.from_cell", code)
    if found is None:
        raise ValueError("no `XParams.from_cell(globals())` in the notebook's code")
    return getattr(params, found.group(1))


def parameters_cell_of(cells: list[dict]) -> dict:
    """The notebook's cell tagged ``parameters`` (the one papermill injects after)."""
    return next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
