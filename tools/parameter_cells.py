"""Write each chapter's parameters cell from its parameter class, or check that it matches.

Each parameter is declared once, on its field in its class (`llmdyn.book.params.chapters` and
`.trained`: ``param(default, doc=...)``); the notebook's literal cell, which papermill needs, is
generated from the defaults and the ``doc`` metadata:

    python tools/parameter_cells.py           # rewrite the cells that differ
    python tools/parameter_cells.py --check   # exit 1, naming the notebooks that differ
"""

from __future__ import annotations

import argparse
import json
import sys

from llmdyn.book.params.cell import parameters_cell, parameters_cell_of, params_class
from llmdyn.core.paths import REPO
from llmdyn.runner.build import chapters


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with --check, compare) every chapter's parameters cell; 1 if any differ."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report cells that differ")
    args = parser.parse_args(argv)
    differ = []
    for name in chapters():
        path = REPO / "notebooks" / f"{name}.ipynb"
        nb = json.loads(path.read_text())
        cell = parameters_cell_of(nb["cells"])
        want = parameters_cell(params_class(nb["cells"]))
        if "".join(cell["source"]) == want:
            continue
        differ.append(name)
        if not args.check:
            cell["source"] = want.splitlines(keepends=True)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    verb = "differ from their classes" if args.check else "rewritten"
    print(f"{len(differ)} parameters cells {verb}" + (f": {', '.join(differ)}" if differ else ""))
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
