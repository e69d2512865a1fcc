"""Dump every glued value of the executed chapters, or compare two dumps.

A refactoring that promises "numbers unchanged" is checked with this: build the book (or the
smoke run) before and after, dump both, and diff.

    python tools/glued_values.py book/executed > before.json
    python tools/glued_values.py book/executed > after.json
    python tools/glued_values.py --compare before.json after.json
    python tools/glued_values.py --compare --printed before.json after.json   # printed digits

Glued values are the outputs that ``myst_nb.glue`` tags with ``scrapbook`` metadata; a value is
its ``text/plain`` form (for HTML tables, the HTML), so the comparison is exact and textual.

``--printed`` compares what the book prints instead: every text value (a claim's result and
verdict, the HTML tables, which carry numbers as the page shows them) must still be identical,
while a bare number (a claim's full-precision ``_value``, ``_lo``, ``_hi``) need only agree to
``--digits`` significant digits (default 3). Numbers that differ only beyond those digits are
counted and listed separately, so a float32-for-float64 change can show what it moved.
"""

from __future__ import annotations

import argparse
import json
import math
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


def _number(text: str | None) -> float | None:
    """The float a glued ``text/plain`` holds ("0.62", "nan", "-1e-05"), or None for text."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def same_printed(a: str | None, b: str | None, digits: int = 3) -> bool:
    """Whether two glued values print the same: numbers to ``digits`` significant digits."""
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return a == b
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return f"{x:.{digits}g}" == f"{y:.{digits}g}"


def compare(before: dict, after: dict, *, printed: bool = False, digits: int = 3,
            beyond: list[str] | None = None) -> list[str]:
    """One line per chapter or key that is missing on one side or differs.

    With ``printed``, numbers are compared to ``digits`` significant digits (text exactly);
    keys that differ only beyond those digits are appended to ``beyond`` when it is given.
    """
    lines = []
    for chapter in sorted(set(before) | set(after)):
        a, b = before.get(chapter), after.get(chapter)
        if a is None or b is None:
            lines.append(f"{chapter}: only {'after' if a is None else 'before'}")
            continue
        for key in sorted(set(a) | set(b)):
            if a.get(key) == b.get(key):
                continue
            if printed and key in a and key in b and same_printed(a[key], b[key], digits):
                if beyond is not None:
                    beyond.append(f"{chapter}/{key}: {a[key]} -> {b[key]}")
                continue
            lines.append(f"{chapter}/{key}: {str(a.get(key))[:80]!r} -> "
                         f"{str(b.get(key))[:80]!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Dump the glued values of a directory, or compare two dumps (exit 1 if they differ)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--compare", action="store_true", help="compare two JSON dumps")
    parser.add_argument("--printed", action="store_true",
                        help="compare printed digits: text exactly, numbers to --digits")
    parser.add_argument("--digits", type=int, default=3,
                        help="significant digits of bare numbers with --printed (default 3)")
    args = parser.parse_args(argv)
    if not args.compare:
        json.dump(dump(args.paths[0]), sys.stdout, indent=1, sort_keys=True)
        return 0
    before, after = (json.loads(p.read_text()) for p in args.paths)
    beyond: list[str] = []
    diffs = compare(before, after, printed=args.printed, digits=args.digits, beyond=beyond)
    n = sum(len(v) for v in before.values())
    same = "the same to the printed digits" if args.printed else "identical"
    print("\n".join(diffs) or f"{same}: {n} values in {len(before)} chapters")
    if beyond:
        print(f"{len(beyond)} numbers differ beyond {args.digits} significant digits:")
        print("\n".join(f"  {line}" for line in beyond))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
