"""A chapter's parameters cell, written from its parameter class: the one place for the docs.

Each parameter is declared once, on its field (:func:`llmdyn.core.declared.param`): its
``metadata["doc"]`` is its one-line documentation. A field inherited from a shared base
(``seed``, ``model``) keeps its base's doc unless the chapter declares it again.
:func:`parameters_cell` turns a class into the literal cell papermill needs
(a line saying so and from which class, then ``name = default  # doc`` in field order);
``tools/parameter_cells.py`` writes it into the notebooks and a test checks that every
notebook's cell is this text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from llmdyn.core.declared import DOC, parameter_fields


def field_docs(cls: type) -> dict[str, str]:
    """``{parameter: doc}`` of a parameter class, as its fields declare them."""
    return {f.name: f.metadata.get(DOC, "") for f in parameter_fields(cls)}


def literal(value: Any) -> str:
    """``value`` as the cell writes it: double-quoted text, lists in brackets, None."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def generated_note(cls: type) -> str:
    """The cell's first line: it is generated, from which class, and where to change a default."""
    return (f"# Generated from {cls.__module__}.{cls.__qualname__} by tools/parameter_cells.py: "
            "change a default or doc there, then rerun it (a hand edit fails its --check)")


def parameters_cell(cls: type) -> str:
    """The parameters cell of the chapter that ``cls`` describes, defaults and docs included.

    It opens with :func:`generated_note`, so a reader of the notebook knows where a default lives.
    """
    defaults, docs = cls(), field_docs(cls)
    lines = [generated_note(cls)]
    for f in parameter_fields(cls):
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
