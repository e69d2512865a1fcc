"""Every claim of a built book as CSV: grade, estimate, interval, units, rule and per-unit values.

Written with the book (:func:`llmdyn.claims.pages.write`) from what the executed chapters
glued: the claim records (:mod:`llmdyn.claims.collected`) for the words, and each claim's glued
numbers (:func:`llmdyn.claims.breaks.read_glued`: ``<id>_value``, ``_lo``, ``_hi``, ``_method``,
``_units``) for the figures, so a reader can recompute any interval from the per-unit values.
One file for the whole book and one per chapter; the scorecard links them (`links`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence

from llmdyn.claims.collected import Published, Record

COLUMNS = ("paper", "chapter", "table", "model", "id", "section", "statement", "paper_value",
           "grade", "reason", "stand_in", "quantity", "estimate", "lo", "hi", "n", "unit",
           "interval_method", "rule", "bound", "unit_ids", "unit_values", "to_decide")


def _number(value: object) -> str:
    """A glued number as CSV text ("" where there is none)."""
    if isinstance(value, (int, float)) and math.isfinite(value):
        return repr(float(value))
    return ""


def _units(glued: object) -> tuple[str, str]:
    """The per-unit ids and values (JSON lists; paired samples as lists of lists)."""
    try:
        found = json.loads(str(glued))
    except (TypeError, ValueError):
        return "", ""
    if not found or not isinstance(found, dict):
        return "", ""
    samples, ids = found.get("samples", []), found.get("ids", [])
    if not samples:
        return "", ""
    values = samples[0] if len(samples) == 1 else samples  # paired samples: one list each
    return (json.dumps(ids) if ids else ""), json.dumps(values)


def row(rec: Record, table: Published, glued: Mapping[str, object]) -> dict[str, str]:
    """One claim's CSV row."""
    ids, values = _units(glued.get(f"{rec.id}_units", "{}"))
    return {"paper": rec.paper, "chapter": table.chapter, "table": table.key,
            "model": rec.model, "id": rec.id, "section": rec.section,
            "statement": rec.statement, "paper_value": rec.paper_value, "grade": rec.grade,
            "reason": rec.reason, "stand_in": rec.stand_in, "quantity": rec.result.split(":")[0],
            "estimate": _number(glued.get(f"{rec.id}_value")),
            "lo": _number(glued.get(f"{rec.id}_lo")), "hi": _number(glued.get(f"{rec.id}_hi")),
            "n": "" if rec.n is None else str(rec.n), "unit": rec.unit,
            "interval_method": str(glued.get(f"{rec.id}_method", "")), "rule": rec.rule,
            "bound": rec.bound, "unit_ids": ids, "unit_values": values,
            "to_decide": rec.to_decide}


def claims_csv(published: Sequence[Published],
               glued: Mapping[str, Mapping[str, object]]) -> str:
    """The CSV text of every claim of ``published`` (``glued``: chapter -> its glued values)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for table in published:
        for rec in table.records:
            writer.writerow(row(rec, table, glued.get(table.chapter, {})))
    return out.getvalue()


def links(chapters: Sequence[str]) -> str:
    """The scorecard's list of the CSV files (MyST, paths relative to ``book/``)."""
    lines = ["- every claim of the book: {download}`claims.csv <generated/csv/claims.csv>`"]
    lines += [f"- chapter {c[:2]}: {{download}}`{c}.csv <generated/csv/{c}.csv>`"
              for c in chapters]
    return "\n".join(lines) + "\n"
