"""The checks a chapter's glued values must pass: rules, grades read from intervals, the guard.

A build is read back from its executed notebooks (:func:`read_glued`); each check returns what
is wrong, as "<id>: why" lines, and an empty list when nothing is:

- :func:`rule_breaks`: a verdict on an estimate that has no interval;
- :func:`grade_breaks`: a grade (95 % or Holm) that its own interval does not give;
- :func:`guard_breaks`: numbers no interval rule allows (n below the coverage table's floor, a
  reversed interval, an estimate off the centre of a symmetric one, an unknown unit, a graded
  fact that has an interval).

`llmdyn.claims.render.publish` refuses a table any of them breaks.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping
from pathlib import Path

from llmdyn.claims.claim import GRADES, JUDGED, Rule
from llmdyn.stats.bootstrap import Estimate


def read_glued(notebook: str | Path) -> dict[str, object]:
    """The values an executed chapter glued: ``{key: value}``, text parsed back to Python.

    ``myst_nb.glue`` stores each value's ``text/plain`` repr in an output tagged with
    ``scrapbook`` metadata (under a mime prefix); numbers and strings are read back with
    ``ast.literal_eval`` ("nan" as a float), anything else (HTML tables) stays text.
    """
    values: dict[str, object] = {}
    for cell in json.loads(Path(notebook).read_text())["cells"]:
        for output in cell.get("outputs", []):
            book = output.get("metadata", {}).get("scrapbook", {})
            if "name" not in book:
                continue
            prefix = book.get("mime_prefix", "")
            text = output.get("data", {}).get(prefix + "text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            values[book["name"]] = _literal(text)
    return values


def _literal(text: str) -> object:
    """A glued text/plain repr as a Python value where it is one."""
    if text.strip() == "nan":
        return math.nan
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def rule_breaks(values: Mapping[str, object]) -> list[str]:
    """Claim ids whose verdict judges an estimate that has no interval (the scorecard's rule).

    A verdict (holds, inconclusive, does not hold) needs a fact (``<id>_kind == "fact"``) or an
    interval (finite ``<id>_lo`` and ``<id>_hi``); ``values`` are a chapter's glued values, as
    `glue_values` or `read_glued` give them. A chapter glued before ``_kind`` existed counts
    every claim as an estimate.
    """
    breaks = []
    for key, verdict in values.items():
        if not key.endswith("_verdict") or str(verdict).split(" (")[0] not in JUDGED:
            continue
        cid = key.removesuffix("_verdict")
        ends = [values.get(f"{cid}_{end}", math.nan) for end in ("lo", "hi")]
        interval = all(isinstance(x, (int, float)) and math.isfinite(x) for x in ends)
        if values.get(f"{cid}_kind", "estimate") != "fact" and not interval:
            breaks.append(cid)
    return breaks


def grade_breaks(values: Mapping[str, object]) -> list[str]:
    """Rows whose grade is not the one their interval gives: "<id>: what is wrong" each.

    The three-grade rule, checked on a chapter's glued values (`glue_values`, `read_glued`):
    every grade is one of ``GRADES`` ("partly" is retired); an estimate's verdict must be the
    one `Rule.judge` reads from its glued interval and rule (holds: wholly on the paper's side;
    does not hold: wholly on the other; inconclusive: straddling), and a fact's the one its
    value gives. A judged row must glue its rule (a non-empty ``_op``). A Holm-adjusted
    grade (``_holm``) must be the one its rule reads from the interval it names
    (``_holm_lo``, ``_holm_hi``, at ``_holm_level``), a level at least the row's 95 %.
    """
    breaks = []
    for key, verdict in values.items():
        if not key.endswith("_verdict"):
            continue
        cid, grade = key.removesuffix("_verdict"), str(verdict).split(" (")[0]
        if grade not in GRADES:
            breaks.append(f"{cid}: grade {grade!r} is not one of {GRADES}")
            continue
        op = values.get(f"{cid}_op", "")
        if grade not in JUDGED:
            continue
        if not op:
            breaks.append(f"{cid}: graded {grade!r} with no rule glued (_op is empty)")
            continue
        num = {k: values.get(f"{cid}_{k}", math.nan) for k in ("value", "lo", "hi", "threshold",
                                                             "tolerance")}
        fact = values.get(f"{cid}_kind") == "fact"
        rule = Rule(str(op), float(num["threshold"]),
                    float(num["tolerance"]) if op == "within" else 0.0)
        est = Estimate(float(num["value"]), float(num["lo"]), float(num["hi"]), 2, exact=fact)
        expected = rule.judge(est)[0]
        if expected != grade:
            breaks.append(f"{cid}: graded {grade!r}, its {'value' if fact else 'interval'} "
                          f"[{num['lo']}, {num['hi']}] against {op} {num['threshold']} gives "
                          f"{expected!r}")
        if f"{cid}_holm" in values:
            breaks += _holm_breaks(values, cid, rule, float(num["value"]))
    return breaks


SYMMETRIC_METHODS = ("t", "welch", "ols_t", "delta_t")  # estimate ± t·se: centred on the value


def guard_breaks(values: Mapping[str, object]) -> list[str]:
    """Rows whose glued numbers no interval rule allows: "<id>: what is wrong" each.

    Checked on a chapter's glued values (`glue_values`, `read_glued`), for every row that
    shows an interval or a grade:

    - an interval over fewer units than the smallest n the coverage table simulated
      (`llmdyn.stats.coverage.SIZES`, the floor methods state);
    - a reversed interval (lo > hi);
    - an estimate outside an interval that is symmetric about it (`SYMMETRIC_METHODS`), or
      one such interval not centred on its estimate;
    - a sampling unit that is not an independent unit (`llmdyn.claims.units.UNITS`);
    - a graded fact that is not one: a fact is one case's deterministic outcome (n = 1, no
      interval), so a row that calls itself a fact cannot escape the interval's rules.
    """
    from llmdyn.claims.units import UNITS
    from llmdyn.stats.coverage import SIZES

    breaks = []
    for key in values:
        if not key.endswith("_verdict"):
            continue
        cid = key.removesuffix("_verdict")
        grade = str(values[key]).split(" (")[0]
        num = {k: values.get(f"{cid}_{k}", math.nan) for k in ("value", "lo", "hi", "n")}
        num = {k: float(v) if isinstance(v, (int, float)) else math.nan for k, v in num.items()}
        interval = math.isfinite(num["lo"]) and math.isfinite(num["hi"])
        unit, method = values.get(f"{cid}_unit", ""), values.get(f"{cid}_method", "")
        if values.get(f"{cid}_kind") == "fact":
            if grade in JUDGED and (interval or num["n"] != 1):
                breaks.append(f"{cid}: graded as a fact, but it has "
                              + (f"an interval [{num['lo']}, {num['hi']}]" if interval
                                 else f"n = {num['n']:g}")
                              + "; a fact is one case's outcome, n = 1 and no interval")
            continue
        if unit not in ("", *UNITS):
            breaks.append(f"{cid}: unknown sampling unit {unit!r}; one of {sorted(UNITS)}")
        if not interval:
            continue
        if num["n"] < SIZES[0]:
            breaks.append(f"{cid}: an interval over n = {num['n']:g} units, below the floor "
                          f"of {SIZES[0]} (the smallest n data/coverage.csv simulated)")
        if num["lo"] > num["hi"]:
            breaks.append(f"{cid}: reversed interval [{num['lo']}, {num['hi']}]")
        if method in SYMMETRIC_METHODS:
            value, lo, hi = num["value"], num["lo"], num["hi"]
            slack = 1e-9 * max(1.0, abs(lo), abs(hi))
            if not lo - slack <= value <= hi + slack or abs((lo + hi) / 2 - value) > \
                    1e-6 * max(hi - lo, slack):
                breaks.append(f"{cid}: the estimate {value} is not the centre of its "
                              f"symmetric {method} interval [{lo}, {hi}]")
    return breaks


def _holm_breaks(values: Mapping[str, object], cid: str, rule: Rule, value: float) -> list[str]:
    """What is wrong with a row's Holm grade: not its interval's, or read at too low a level."""
    grade, level = str(values[f"{cid}_holm"]), float(values.get(f"{cid}_holm_level", math.nan))
    lo, hi = (float(values.get(f"{cid}_holm_{end}", math.nan)) for end in ("lo", "hi"))
    if not level >= 0.95:
        return [f"{cid}: Holm grade {grade!r} read at level {level}, below the row's 95 %"]
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [] if grade == "inconclusive" else [
            f"{cid}: Holm grade {grade!r} with no interval at level {level}"]
    expected = rule.judge(Estimate(value, lo, hi, 2))[0]
    if expected != grade:
        return [f"{cid}: Holm grade {grade!r}, its {100 * level:.3g} % interval [{lo}, {hi}] "
                f"against {rule.op} {rule.threshold} gives {expected!r}"]
    return []
