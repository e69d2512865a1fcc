"""Grade counts per chapter of two builds, and every claim whose grade changed, with its numbers.

A change to how claims are judged (issue "Verdicts a reader can trust") is reported with this:
build the book before and after, then

    python tools/grade_changes.py BEFORE/book/executed AFTER/book/executed

It reads each executed chapter's glued ``<claim>_verdict``, ``_value``, ``_lo`` and ``_hi`` (what
the scorecard pastes), so reading needs no import of either commit's library (the tables are
rendered by this checkout's `llmdyn.core.tables`). Grades are matched by name, old ones
("partly") included, so a retired grade shows in the "before" counts. Output is Markdown: one
table of counts, one of changed rows (claims present in one build only are listed as added or
removed), or a sentence when no grade changed.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from glued_values import glued_values  # noqa: E402

from llmdyn.core.escape import markdown_code  # noqa: E402
from llmdyn.core.tables import markdown_table  # noqa: E402

# llmdyn.claims.GRADES with the retired "partly", written out so no commit's library is imported.
ORDER = ["holds", "partly", "inconclusive", "does not hold", "no verdict", "not testable offline",
         "not run", "for comparison"]
GRADE_NAMES = sorted(ORDER, key=len, reverse=True)  # longest first: "does not hold" before "holds"
_NO_CHANGE = "No claim's grade changed."


def grade_of(verdict: str) -> str:
    """The grade a verdict's text starts with ("inconclusive (straddles …)" -> "inconclusive")."""
    text = verdict.strip().strip("'\"")
    for name in GRADE_NAMES:
        if text.startswith(name):
            return name
    return f"unknown: {text[:30]}"


def _number(text: str | None) -> float:
    try:
        return float(str(text).strip("'\""))
    except (TypeError, ValueError):
        return math.nan


def claims_of(executed: Path) -> dict[str, dict[str, dict]]:
    """``{chapter: {claim id: {"grade", "value", "lo", "hi"}}}`` from one build's notebooks."""
    out = {}
    for notebook in sorted(executed.glob("[0-9][0-9]_*.ipynb")):
        glued = glued_values(notebook)
        rows = {}
        for key, text in glued.items():
            if key.endswith("_verdict"):
                cid = key.removesuffix("_verdict")
                rows[cid] = {"grade": grade_of(text),
                             **{part: _number(glued.get(f"{cid}_{part}"))
                                for part in ("value", "lo", "hi")}}
        out[notebook.stem] = rows
    return out


def _counts(rows: dict) -> str:
    n = Counter(row["grade"] for row in rows.values())
    return " · ".join(f"{n[g]} {g}" for g in ORDER + sorted(set(n) - set(ORDER)) if n[g]) or "—"


def _numbers(row: dict | None) -> str:
    if row is None:
        return "—"
    v, lo, hi = row["value"], row["lo"], row["hi"]
    if math.isnan(v):
        return "no estimate"
    return f"{v:.4g}" if math.isnan(lo) else f"{v:.4g} [{lo:.4g}, {hi:.4g}]"


def report(before: dict, after: dict) -> str:
    """The Markdown report: counts per chapter, then the rows whose grade changed."""
    chapters = sorted(set(before) | set(after))
    counts = markdown_table([{"chapter": chapter, "before": _counts(before.get(chapter, {})),
                              "after": _counts(after.get(chapter, {}))} for chapter in chapters])
    changed = []
    for chapter in chapters:
        old, new = before.get(chapter, {}), after.get(chapter, {})
        for cid in sorted(set(old) | set(new)):
            a, b = old.get(cid), new.get(cid)
            grade_a = a["grade"] if a else "(absent)"
            grade_b = b["grade"] if b else "(absent)"
            if grade_a != grade_b:
                changed.append({"chapter": chapter[:2], "claim": markdown_code(cid),
                                "before": grade_a, "after": grade_b, "numbers before": _numbers(a),
                                "numbers after": _numbers(b)})
    return counts + "\n\n" + (markdown_table(changed) if changed else _NO_CHANGE)


def main(argv: list[str] | None = None) -> int:
    """Print the report for two folders of executed chapters; exit 2 on a folder with none."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="executed notebooks of the earlier build")
    parser.add_argument("after", type=Path, help="executed notebooks of the later build")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not any(folder.glob("[0-9][0-9]_*.ipynb")):
            parser.error(f"{folder}: no executed chapter notebooks (NN_name.ipynb) in it")
    print(report(claims_of(args.before), claims_of(args.after)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
