"""Render a chapter's claims: its paper-vs-this-run table, its scorecard block and glued numbers.

Where the results live. A chapter glues its claims table as HTML under one key (``scorecard``)
and each claim's numbers under ``<id>_value``, ``<id>_lo``, ``<id>_hi``, ``<id>_verdict``,
``<id>_rule``, ``<id>_result``, ``<id>_kind`` ("estimate", "fact" or "none"), the rule as
numbers, ``<id>_op`` ("" without a rule), ``<id>_threshold`` and ``<id>_tolerance``, and the
units: ``<id>_n``, ``<id>_unit`` (the sampling unit, "" for none), ``<id>_method`` (of the
interval), ``<id>_units`` (JSON: the unit ids and the per-unit values judged, for planning
what would decide an open row) and ``<id>_statistic`` (JSON: the kind of statistic, its pairing,
whether R² is signed), and ``<id>_coverage`` (the interval's level and simulated coverage). A
claim a referee reads again (`llmdyn.claims.review`) also glues its Holm reading,
``<id>_holm`` (the headline grade), ``<id>_holm_level``, ``<id>_holm_lo``, ``<id>_holm_hi``,
``<id>_holm_m`` (the family's size), and its robustness, ``<id>_robustness`` (the word and what
flips it) and ``<id>_specifications`` (JSON: each specification's rule and, for a variant, its
per-unit values and interval, for an independent recomputation). A
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

import html
from collections.abc import Callable, Mapping, Sequence

from llmdyn import LlmdynError
from llmdyn.claims import findings
from llmdyn.claims.breaks import grade_breaks, guard_breaks, rule_breaks
from llmdyn.claims.chips import record_chip
from llmdyn.claims.claim import Claim
from llmdyn.claims.glue_keys import glue_values
from llmdyn.claims.review import Review, review
from llmdyn.core.tables import Html, Md, escape_cell, html_table, markdown_grid, markdown_table
from llmdyn.stats.bootstrap import LEVEL

COLUMNS = ("claim", "paper", "this run", "verdict", "rule")
SCORECARD_KEY = "scorecard"
PART_TITLE = "The table as the chapter shows it"  # the fold around a scorecard part's paste
# The rule of every row, stated once above a table whose "rule" column gives each row's bound.
RULE_ONCE = (f"Each verdict reads the {round(100 * LEVEL)} % interval of the row's quantity "
             "against the bound in its *rule* column: **holds** when the whole interval meets "
             "the bound, **does not hold** when none of it does, **inconclusive** when it "
             "straddles; a *fact* is judged on its value.")


def rule_cell(claim: Claim) -> str:
    """The row's rule in a few characters: its bound ("≥ 2×"), "fact: ≤ 1", or why none."""
    if claim.rule is None:
        return claim.rule_text
    bound = claim.rule.bound(claim.measure)
    return f"fact: {bound}" if claim.measure.kind == "fact" else bound


def _cells(claim: Claim, seen: Review | None = None) -> tuple[str, ...]:
    """One row's cell texts, in COLUMNS order (plain text, not escaped).

    With a review, the verdict cell leads with the headline (Holm-adjusted) grade and says the
    Holm reading and the robustness (`Review.verdict_text`).
    """
    verdict = seen.verdict_text(claim) if seen is not None else claim.verdict.text()
    return (f"{claim.statement} (paper {claim.paper}, {claim.section})", claim.paper_value,
            claim.result_text(), verdict, rule_cell(claim))


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


def claims_table(claims: Sequence[Claim], seen: Review | None = None) -> str:
    """The chapter's paper-vs-this-run table as Markdown (`llmdyn.core.tables`), verdicts bold.

    `RULE_ONCE` comes first: the rule is stated once, and each row gives only its bound.
    """
    _check(claims)
    rows = []
    for claim in claims:
        row = dict(zip(COLUMNS, map(escape_cell, _cells(claim, seen)), strict=True))
        row["verdict"] = Md(f"**{row['verdict']}**")
        rows.append(row)
    return f"{RULE_ONCE}\n\n{markdown_table(rows)}"


def scorecard_html(claims: Sequence[Claim], seen: Review | None = None) -> str:
    """The same table as HTML, for the scorecard's cross-document paste.

    Each row's class names its grade (``verdict-holds``, ``verdict-does-not-hold``); the verdict
    is a chip (`llmdyn.claims.chips`, marked where the claim rests on a stand-in), its reason
    beside it.
    """
    _check(claims)
    rows = []
    for claim in claims:
        cells: list[object] = list(_cells(claim, seen))
        grade = seen.headline(claim) if seen is not None else claim.verdict.grade
        detail = [claim.verdict.reason] if claim.verdict.reason else []
        detail += [seen.note(claim)] if seen is not None and seen.note(claim) else []
        reason = f" ({html.escape('; '.join(detail))})" if detail else ""
        cells[3] = Html(record_chip(grade, claim.stand_in) + reason)
        rows.append(cells)
    heads = [seen.headline(c) if seen is not None else c.verdict.grade for c in claims]
    grades = [{"class": f"verdict-{g.replace(' ', '-')}"} for g in heads]
    return html_table(COLUMNS, rows, css_class="table scorecard", row_attrs=grades)


def publish(claims: Sequence[Claim], *, key: str = SCORECARD_KEY,
            glue: Callable[..., object] | None = None, family: Sequence[Claim] | None = None,
            family_name: str = "this chapter",
            variants: Mapping[str, Mapping[str, Claim]] | None = None,
            unidentified: Mapping[str, str] | None = None):
    """Glue every claim's numbers and the scorecard table; return the chapter's table.

    Each row is read as a referee would (`llmdyn.claims.review`): Holm over the chapter's
    family, and its grade under each specification a referee would vary.

    Args:
        claims: the chapter's claims, in the order of the table.
        key: glue key of the HTML table the scorecard part pastes (one per table).
        glue: the glue function (default ``myst_nb.glue``; tests pass a recorder).
        family: every claim of the chapter's family when it publishes more than one table
            (default: ``claims``).
        family_name: how rows name the family, e.g. "chapter 04".
        variants: claim id -> {specification name: the same claim under it} (other splits,
            the other lens).
        unidentified: claim id -> why it is fragile by construction (a split not identified).

    Returns:
        An ``IPython.display.Markdown`` of the table: the chapter cell's last expression.
    """
    from IPython.display import HTML, Markdown

    if glue is None:
        from myst_nb import glue
    _check(claims)
    seen = review(claims, family=family, family_name=family_name, variants=variants,
                  unidentified=unidentified)
    values = _glued(claims, seen)
    _refuse(values)
    for name, value in values.items():
        glue(name, value, display=False)
    glue(key, HTML(scorecard_html(claims, seen)), display=False)
    findings.publish_findings(claims, key=key, glue=glue, seen=seen)  # the box, the records
    return Markdown(claims_table(claims, seen))


def refuse_broken(claims: Sequence[Claim], seen: Review | None = None) -> None:
    """Raise, naming the rows, if any claim's grade is not the one its interval gives.

    A chapter's rule may word its verdict, but never decide it against the three-grade rule
    (`grade_breaks`), nor judge an estimate without an interval (`rule_breaks`), nor show an
    interval that the interval rules refuse (`guard_breaks`: n below the floor, reversed,
    off-centre, an unknown unit, a graded fact that is not one): the build fails rather than
    print a broken grade.
    """
    _refuse(_glued(claims, seen))


def _glued(claims: Sequence[Claim], seen: Review | None) -> dict[str, object]:
    """Every glue key of the claims, in order: computed once, checked, then glued."""
    return {k: v for claim in claims for k, v in glue_values(claim, seen).items()}


def _refuse(values: Mapping[str, object]) -> None:
    """`refuse_broken` on glued values."""
    broken = grade_breaks(values) + [f"{cid}: judged with no interval"
                                      for cid in rule_breaks(values)]
    if broken:
        raise LlmdynError("these claims' grades break the three-grade rule (holds: the "
                          "interval wholly on the paper's side; does not hold: wholly on the "
                          "other; inconclusive: straddling), so the chapter is not published: "
                          + "; ".join(broken))
    refused = guard_breaks(values)
    if refused:
        raise LlmdynError("these claims show an interval the book's rules refuse, so the "
                          "chapter is not published: " + "; ".join(refused))


def part_source(title: str, chapter: str, *, key: str = SCORECARD_KEY, intro: str = "") -> str:
    """The text of a scorecard part: a heading, optional prose, and the paste of ``key``.

    The paste is folded away (a dropdown): the scorecard's one filterable table shows every
    row, and the part keeps the chapter's own table one click away (and in the PDF).

    Args:
        title: the part's heading, e.g. "Coupling across depth".
        chapter: the chapter's name, e.g. "05_depth_coupling".
        key: the glued table to paste.
        intro: prose above the table; it must not state a result.
    """
    lines = [f"### {title} ({{doc}}`chapter {chapter[:2]} <executed/{chapter}>`)", ""]
    if intro:
        lines += [intro.strip(), ""]
    lines += [f":::{{admonition}} {PART_TITLE}", ":class: dropdown", "",
              f"```{{glue}} {key}", f":doc: executed/{chapter}.ipynb", "```", ":::", ""]
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
