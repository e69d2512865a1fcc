"""Write a notebook from a list of (kind, source) cells, outputs empty (used to author chapters).

Stripping outputs is nbstripout's job (`make strip`, and the git filter `make setup` installs).
"""

from __future__ import annotations

from pathlib import Path

import nbformat


def write(path: str | Path, cells: list[tuple[str, str]]) -> None:
    """Write cells to `path`; a cell whose kind is "parameters" becomes a tagged code cell."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "llmdyn", "display_name": "Python (llmdyn)",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, source in cells:
        source = source.strip("\n")
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(source))
        elif kind == "parameters":
            nb.cells.append(nbformat.v4.new_code_cell(
                source, metadata={"tags": ["parameters", "remove-cell"]}))
        elif kind == "hidden":
            nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": ["remove-input"]}))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(source))
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    nbformat.write(nb, str(path))
