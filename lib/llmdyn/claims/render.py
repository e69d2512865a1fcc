"""Render a chapter's claims: its paper-vs-this-run table, its scorecard block and glued numbers.

Where the results live. A chapter glues its claims table as HTML under one key (``scorecard``)
and each claim's numbers under ``<id>_value``, ``<id>_lo``, ``<id>_hi``, ``<id>_verdict``,
``<id>_rule``, ``<id>_result``, ``<id>_kind`` ("estimate", "fact" or "none"), the rule as
numbers, ``<id>_op`` ("" without a rule), ``<id>_threshold`` and ``<id>_tolerance``, and the
units: ``<id>_n``, ``<id>_unit`` (the sampling unit, "" for none), ``<id>_method`` (of the
interval) and ``<id>_units`` (JSON: the unit ids and the per-unit values judged, for planning
what would decide an open row). A
scorecard part in ``book/scorecard_parts/`` holds only a heading and a cross-document paste
of that key::

    ```{glue} scorecard
    :doc: executed/05_depth_coupling.ipynb
    ```

So nothing in ``book/`` holds a result, nothing is written while the chapter runs (papermill
runs from the repository root even for a staged copy, where a written part would land in the
wrong book), and a staged book for another model pastes from its own executed chapters: a part
can never show another model's numbers.
"""

from __future__ import annotations

import ast
import html
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.claims import findings
from llmdyn.claims.claim import GRADES, JUDGED, Claim, Rule
from llmdyn.core.tables import Html, Md, escape_cell, html_table, markdown_grid, markdown_table
from llmdyn.stats.bootstrap import Estimate

COLUMNS = ("claim", "paper", "this run", "verdict", "rule")
SCORECARD_KEY = "scorecard"


def _cells(claim: Claim) -> tuple[str, ...]:
    """One row's cell texts, in COLUMNS order (plain text, not escaped)."""
    return (f"{claim.statement} (paper {claim.paper}, {claim.section})", claim.paper_value,
            claim.result_text(), claim.verdict.text(), claim.rule_text)


def _check(claims: Sequence[Claim]) -> None:
    """Claims must be Claim objects with unique ids."""
    if not claims:
        raise LlmdynError("claims is empty; a chapter lists at least one Claim")
    bad = [c for c in claims if not isinstance(c, Claim)]
    if bad:
        raise LlmdynError(f"claims must be llmdyn.claims.Claim objects, got {type(bad[0])}")
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise LlmdynError(f"claim ids must be unique within a chapter, repeated: {dup}")


def claims_table(claims: Sequence[Claim]) -> str:
    """The chapter's paper-vs-this-run table as Markdown (`llmdyn.core.tables`), verdicts bold."""
    _check(claims)
    rows = []
    for claim in claims:
        row = dict(zip(COLUMNS, map(escape_cell, _cells(claim)), strict=True))
        row["verdict"] = Md(f"**{row['verdict']}**")
        rows.append(row)
    return markdown_table(rows)


def scorecard_html(claims: Sequence[Claim]) -> str:
    """The same table as HTML, for the scorecard's cross-document paste.

    Each row's class names its grade (``verdict-holds``, ``verdict-does-not-hold``); the verdict
    is bold.
    """
    _check(claims)
    rows = []
    for claim in claims:
        cells: list[object] = list(_cells(claim))
        cells[3] = Html(f"<strong>{html.escape(cells[3])}</strong>")
        rows.append(cells)
    grades = [{"class": f"verdict-{c.verdict.grade.replace(' ', '-')}"} for c in claims]
    return html_table(COLUMNS, rows, css_class="table scorecard", row_attrs=grades)


def glue_values(claim: Claim) -> dict[str, float | str]:
    """The glue keys of one claim and their values (numbers as floats, text as str)."""
    est = claim.measure.estimate
    nan = float("nan")
    return {f"{claim.id}_value": est.value if est else nan,
            f"{claim.id}_lo": est.lo if est else nan,
            f"{claim.id}_hi": est.hi if est else nan,
            f"{claim.id}_verdict": claim.verdict.text(),
            f"{claim.id}_rule": claim.rule_text,
            f"{claim.id}_result": claim.result_text(),
            f"{claim.id}_kind": claim.measure.kind if est else "none",
            f"{claim.id}_op": claim.rule.op if claim.rule else "",
            f"{claim.id}_threshold": claim.rule.threshold if claim.rule else nan,
            f"{claim.id}_tolerance": claim.rule.tolerance if claim.rule else nan,
            f"{claim.id}_n": est.n if est else 0,
            f"{claim.id}_unit": claim.measure.sampling_unit,
            f"{claim.id}_method": est.method if est else "",
            f"{claim.id}_units": json.dumps({"ids": list(claim.measure.unit_ids),
                                             "samples": [list(x) for x in claim.measure.samples]},
                                            allow_nan=False) if _finite(claim) else "{}"}


def _finite(claim: Claim) -> bool:
    """Whether a claim's per-unit values can be written as JSON (all finite)."""
    return all(math.isfinite(x) for sample in claim.measure.samples for x in sample)


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
    value gives. A judged row must glue its rule (a non-empty ``_op``).
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
    return breaks


def publish(claims: Sequence[Claim], *, key: str = SCORECARD_KEY,
            glue: Callable[..., object] | None = None):
    """Glue every claim's numbers and the scorecard table; return the chapter's table.

    Args:
        claims: the chapter's claims, in the order of the table.
        key: glue key of the HTML table the scorecard part pastes (one per table).
        glue: the glue function (default ``myst_nb.glue``; tests pass a recorder).

    Returns:
        An ``IPython.display.Markdown`` of the table: the chapter cell's last expression.
    """
    from IPython.display import HTML, Markdown

    if glue is None:
        from myst_nb import glue
    _check(claims)
    refuse_broken(claims)
    for claim in claims:
        for name, value in glue_values(claim).items():
            glue(name, value, display=False)
    glue(key, HTML(scorecard_html(claims)), display=False)
    findings.publish_findings(claims, key=key, glue=glue)  # the box atop the chapter, the records
    return Markdown(claims_table(claims))


def refuse_broken(claims: Sequence[Claim]) -> None:
    """Raise, naming the rows, if any claim's grade is not the one its interval gives.

    A chapter's rule may word its verdict, but never decide it against the three-grade rule
    (`grade_breaks`), nor judge an estimate without an interval (`rule_breaks`): the build
    fails rather than print a broken grade.
    """
    values = {k: v for claim in claims for k, v in glue_values(claim).items()}
    broken = grade_breaks(values) + [f"{cid}: judged with no interval"
                                      for cid in rule_breaks(values)]
    if broken:
        raise LlmdynError("these claims' grades break the three-grade rule (holds: the "
                          "interval wholly on the paper's side; does not hold: wholly on the "
                          "other; inconclusive: straddling), so the chapter is not published: "
                          + "; ".join(broken))


def part_source(title: str, chapter: str, *, key: str = SCORECARD_KEY, intro: str = "") -> str:
    """The text of a scorecard part: a heading, optional prose, and the paste of ``key``.

    Args:
        title: the part's heading, e.g. "Coupling across depth".
        chapter: the chapter's name, e.g. "05_depth_coupling".
        key: the glued table to paste.
        intro: prose above the table; it must not state a result.
    """
    lines = [f"### {title} ({{doc}}`chapter {chapter[:2]} <executed/{chapter}>`)", ""]
    if intro:
        lines += [intro.strip(), ""]
    lines += [f"```{{glue}} {key}", f":doc: executed/{chapter}.ipynb", "```", ""]
    return "\n".join(lines)


def split_grid(claims: dict[str, Sequence[Claim]], *, label: Callable[[Claim], str] | None = None):
    """One row per claim, one column per phase split: value [interval] and verdict.

    Paper B's Thought/Fixation contrasts depend on where the boundary is drawn; this table
    shows each contrast under every split side by side (chapters 02 and 04).

    Args:
        claims: split name -> the same claims, in the same order, judged under that split.
        label: a row's label from its claim (default: the statement).

    Returns:
        An ``IPython.display.Markdown`` table.
    """
    from IPython.display import Markdown

    if not claims:
        raise LlmdynError("split_grid needs at least one split")
    names = list(claims)
    rows = [list(claims[n]) for n in names]
    if len({len(r) for r in rows}) != 1:
        raise LlmdynError("split_grid: every split must hold the same claims, got counts "
                          f"{[len(r) for r in rows]}")
    label = label or (lambda c: c.statement)
    # a grid, not named cells: a split may be called "claim" too
    cells = [[label(same[0]), *map(_grid_cell, same)] for same in zip(*rows, strict=True)]
    return Markdown(markdown_grid(["claim", *names], [list(map(escape_cell, row))
                                                      for row in cells]))


def _grid_cell(claim: Claim) -> str:
    """One cell of `split_grid`: value [interval] **grade**."""
    est = claim.measure.estimate
    value = claim.measure.number(est.value) if est else "n/a"
    return Md(f"{escape_cell(value + _interval(claim))} **{escape_cell(claim.verdict.grade)}**")


def split_flips(claims: Mapping[str, Sequence[Claim]], chosen: str) -> list[Claim]:
    """The chosen split's claims, each followed by its twins under splits that grade it otherwise.

    For the scorecard and the intro: a verdict that flips with the split is shown under both.

    Args:
        claims: split name -> the same claims, in the same order, judged under that split
            (ids differ by split, as `split_grid` takes them).
        chosen: the split the chapter publishes first (its ``phase_criterion``).
    """
    if chosen not in claims:
        raise LlmdynError(f"split_flips: the chosen split {chosen!r} is not one of "
                          f"{list(claims)}")
    out = []
    for i, mine in enumerate(claims[chosen]):
        out.append(mine)
        out += [claims[how][i] for how in claims if how != chosen
                and claims[how][i].verdict.grade != mine.verdict.grade]
    return out


def _interval(claim: Claim) -> str:
    """" [lo, hi]" in the measure's format, or "" without an interval."""
    est = claim.measure.estimate
    if est is None or not est.has_interval:
        return ""
    return f" [{claim.measure.number(est.lo)}, {claim.measure.number(est.hi)}]"
