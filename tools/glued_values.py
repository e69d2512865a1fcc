"""Dump every glued value of the executed chapters, or compare two dumps.

A refactoring that promises "numbers unchanged" is checked with this: build the book (or the
smoke run) before and after, dump both, and diff.

    python tools/glued_values.py book/executed > before.json
    python tools/glued_values.py book/executed > after.json
    python tools/glued_values.py --compare before.json after.json

Glued values are the outputs that ``myst_nb.glue`` tags with ``scrapbook`` metadata; a value is
its ``text/plain`` form (for HTML tables, the HTML), so the comparison is exact and textual.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def glued_values(notebook: Path) -> dict[str, str]:
    """``{glue key: text of its value}`` for one executed notebook."""
    values: dict[str, str] = {}
    for cell in json.loads(notebook.read_text())["cells"]:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is None:
                continue
            # glue writes its data under a mime prefix ("application/papermill.record/text/plain")
            prefix = output["metadata"]["scrapbook"].get("mime_prefix", "")
            data = {key.removeprefix(prefix): value
                    for key, value in output.get("data", {}).items()}
            text = data.get("text/html") or data.get("text/plain") or ""
            values[name] = "".join(text) if isinstance(text, list) else text
    return values


def dump(executed: Path) -> dict[str, dict[str, str]]:
    """``{chapter: {key: value}}`` for every executed notebook in ``executed``."""
    return {nb.stem: glued_values(nb) for nb in sorted(executed.glob("*.ipynb"))}


def compare(before: dict, after: dict) -> list[str]:
    """One line per chapter or key that is missing on one side or differs."""
    lines = []
    for chapter in sorted(set(before) | set(after)):
        a, b = before.get(chapter), after.get(chapter)
        if a is None or b is None:
            lines.append(f"{chapter}: only {'after' if a is None else 'before'}")
            continue
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                lines.append(f"{chapter}/{key}: {str(a.get(key))[:80]!r} -> "
                             f"{str(b.get(key))[:80]!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Dump the glued values of a directory, or compare two dumps (exit 1 if they differ)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--compare", action="store_true", help="compare two JSON dumps")
    args = parser.parse_args(argv)
    if not args.compare:
        json.dump(dump(args.paths[0]), sys.stdout, indent=1, sort_keys=True)
        return 0
    before, after = (json.loads(p.read_text()) for p in args.paths)
    diffs = compare(before, after)
    n = sum(len(v) for v in before.values())
    print("\n".join(diffs) or f"identical: {n} values in {len(before)} chapters")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
