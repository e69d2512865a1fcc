"""Simulate the coverage of every interval method and write data/coverage.csv and its page table.

The table decides which interval judges which kind of statistic at which n
(`llmdyn.stats.coverage`); ``book/methods.md`` shows it between the ``coverage-table`` markers.
``tests/stats/test_coverage.py`` recomputes it and checks both copies. About 40 s of one CPU core.

    python tools/coverage.py            # write data/coverage.csv and the methods.md table
    python tools/coverage.py --check    # exit 1 when either differs from a fresh simulation
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from llmdyn.core.tables import Md, markdown_table
from llmdyn.stats import coverage

METHODS_MD = Path(__file__).resolve().parents[1] / "book" / "methods.md"
BEGIN, END = "<!-- coverage-table: begin -->", "<!-- coverage-table: end -->"
NAMES = {"t": "t", "bca": "BCa bootstrap", "order": "order statistics",
         "delta_t": "linearised t", "ols_t": "OLS t", "fisher_z": "Fisher z",
         "exact": "Clopper–Pearson", "log_t": "t on the logs", "pitman_morgan": "Pitman–Morgan",
         "pitman_morgan_hc4": "Pitman–Morgan, HC4", "zou": "Zou",
         "welch": "Welch t"}


def markdown(rows: list[dict]) -> str:
    """The table as Markdown: one row per kind and method, one column per n, used ones bold."""
    sizes = sorted({int(r["n"]) for r in rows})
    by = {(r["kind"], int(r["n"]), r["method"]): r for r in rows}
    chosen = {(k, n): _chosen(by, k, n) for k in coverage.KINDS for n in sizes}
    columns = [f"n = {n}" for n in sizes]
    table = []
    for kind in coverage.KINDS:
        for method in coverage.METHODS[kind]:
            cells = []
            for n in sizes:
                r = by.get((kind, n, method))
                if r is None:
                    cells.append("—")
                    continue
                text = f"{100 * float(r['coverage']):.1f} %"
                if r["status"] == "undercovers":
                    text += " ✗"
                cells.append(Md(f"**{text}**") if chosen[(kind, n)] == method else text)
            table.append({"statistic": kind, "interval": NAMES[method],
                          **dict(zip(columns, cells, strict=True))})
    return markdown_table(table, align=dict.fromkeys(columns, "right"))


def _chosen(by: dict, kind: str, n: int) -> str | None:
    """The method `coverage.choose` picks from these rows at a simulated n."""
    for wanted in coverage.USABLE:
        for m in coverage.METHODS[kind]:
            r = by.get((kind, n, m))
            if r is not None and r["status"] == wanted:
                return m
    return None


def page_with_table(page: str, rows: list[dict]) -> str:
    """``page`` with the text between the markers replaced by the table."""
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{METHODS_MD} needs the markers {BEGIN} and {END}")
    head, rest = page.split(BEGIN, 1)
    return head + BEGIN + "\n" + markdown(rows) + "\n" + END + rest.split(END, 1)[1]


def main() -> int:
    """Write the table (or check it with --check); the exit status for the shell."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        rows = coverage.rows()
        with coverage.TABLE.open(newline="", encoding="utf-8") as f:
            committed = list(csv.DictReader(f))
        same = [{k: str(v) for k, v in r.items()} for r in rows] == committed
        page = METHODS_MD.read_text(encoding="utf-8")
        same = same and page_with_table(page, rows) == page
        print("coverage table up to date" if same else "coverage table differs: rerun the tool")
        return 0 if same else 1
    rows = coverage.write()
    METHODS_MD.write_text(page_with_table(METHODS_MD.read_text(encoding="utf-8"), rows),
                          encoding="utf-8")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
