"""The intro page's "The abstracts, checked": each headline sentence with this build's verdicts.

Built when the book is built (:func:`llmdyn.runner.build.write_generated`), from the claim records
the executed chapters glued (:mod:`llmdyn.claims.collected`) and the headline map
(:mod:`llmdyn.claims.headlines`): one row per sentence of either abstract, one column per model
whose claims the build holds, and in each cell the grade, the number with its interval and a
link to the chapter section that shows it. Paper B's Table 1 follows as its property rows, each
with the paper's Thought-vs-Fixation cells. Nothing here is typed: a sentence no claim tests
shows the map's reason.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from llmdyn.claims.chips import record_chip
from llmdyn.claims.claim import slug
from llmdyn.claims.collected import Published, Record, build_models
from llmdyn.claims.headlines import Headline, best, headline_map
from llmdyn.core.escape import markdown_text
from llmdyn.core.tables import Cell, Html, html_or_markdown, html_table
from llmdyn.stats.bootstrap import LEVEL

PAPER_TITLES = {"A": "Paper A, transformer block coupling",
                "B": "Paper B, thought and fixation"}


def assign(published: Sequence[Published],
           headlines: Sequence[Headline]) -> dict[tuple[str, str], list[tuple[Record, Published]]]:
    """The claims under each headline: ``{(paper, item): [(record, its table), …]}``."""
    out: dict[tuple[str, str], list[tuple[Record, Published]]] = {}
    for table in published:
        slugs = [slug(m) for m in table.models]
        for rec in table.records:
            line = best(headlines, rec.id, slugs)
            if line is not None:
                out.setdefault((line.paper, line.item), []).append((rec, table))
    return out


def uncovered(published: Sequence[Published], headlines: Sequence[Headline]) -> list[str]:
    """Where the map fails the build (empty when it holds).

    Every template must match a claim of some chapter; and in each chapter a headline's
    templates match, every model that chapter holds claims about (its own model, the models it
    compares, or its trained suite) must have a claim under that headline: a ``{model}``
    template covers each model, one without covers the chapter's own.
    """
    problems, found = [], assign(published, headlines)
    for line in headlines:
        hit = [t for t in published if any(line.matches(r.id) for r in t.records)]
        problems += [f"{line.paper} {line.item}: {template} matches no claim"
                     for template in line.templates
                     if not any(line.matches(r.id) == template for t in hit for r in t.records)]
        mine = found.get((line.paper, line.item), [])
        for table in hit:
            for model in dict.fromkeys(r.model for r in table.records):
                if not any(r.model == model and t is table for r, t in mine):
                    problems.append(f"{line.paper} {line.item}: no claim for {model} in "
                                    f"{table.chapter} ({' '.join(line.templates)})")
    return problems


def labelled(rec: Record, line: Headline | None) -> str:
    """What a claim measures, naming the phase split it was judged under (where it has one).

    The same property can be graded under two splits (a verdict that flips with the split is
    shown under both, `llmdyn.claims.render.split_flips`): the label, not a tooltip, says which.
    """
    what = rec.statement.split(": ", 1)[-1] if rec.statement.startswith(rec.model) else \
        rec.statement
    return line.with_split(rec.id, slug(rec.model), what) if line is not None else what


def qualifiers(rec: Record) -> str:
    """What a grade must not be read without: fragile, a stand-in, Holm's move ("" for none).

    A grade that a referee's choice flips, or whose measure stands in for the paper's, is
    never shown as a plain grade.
    """
    parts = ["fragile"] if rec.robustness == "fragile" else []
    parts += ["stand-in"] if rec.stand_in else []
    if rec.unadjusted and rec.unadjusted != rec.grade:
        parts.append(f"Holm-adjusted; unadjusted {rec.unadjusted}")
    return "; ".join(parts)


def _cell(found: list[tuple[Record, Published]], line: Headline | None = None) -> Cell | Html:
    """One model's cell: a line per claim (grade, number, link, what it measures)."""
    if not found:
        return Cell("—", {"class": "none", "title": "not measured on this model",
                          "style": "color: #888"})
    lines = []
    for rec, table in found:
        what = labelled(rec, line)
        against = (f' <span class="bound">(rule: {html.escape(rec.bound)})</span>'
                   if rec.bound else "")
        stand_in = f"<br><em>stand-in: {html.escape(rec.stand_in)}</em>" if rec.stand_in else ""
        qualifier = qualifiers(rec)
        qualifier = (f' <em class="qualifier">({html.escape(qualifier)})</em>'
                     if qualifier else "")
        lines.append(
            f'<div class="claim grade-{slug(rec.grade)}" data-claim="{html.escape(rec.id)}" '
            'style="margin-bottom: 0.6em">'
            f'{record_chip(rec.grade, rec.stand_in, fragile=rec.robustness == "fragile")}'
            f'{qualifier} '
            f'<span class="number">{html.escape(rec.number)}</span>{against} '
            f'<a class="where" href="{table.href}" title="{html.escape(rec.id)}">'
            f'ch.&#160;{table.chapter[:2]}</a><br>'
            f'<small>{html.escape(what)}{stand_in}</small></div>')
    return Html("".join(lines))


def _table(head: list[str], rows: list[list], items: list[str], css: str) -> str:
    """A headlines table: a row per headline (``data-item`` names it), a column per model."""
    return html_table(head, rows, css_class=f"table headlines {css}",
                      row_attrs=[{"data-item": item} for item in items])


def sentence_table(published: Sequence[Published], headlines: Sequence[Headline],
                   models: Sequence[str]) -> str:
    """The abstracts' tested sentences, paper A then B, one column per model."""
    found = assign(published, headlines)
    tested = [h for h in headlines if h.kind == "abstract" and h.templates]
    rows = []
    for line in tested:
        here = found.get((line.paper, line.item), [])
        rows.append([line.paper, Cell(f"“{line.words}”", {"class": "words"}),
                     *(_cell([(r, t) for r, t in here if r.model == m], line) for m in models)])
    return _table(["paper", "the abstract says", *models], rows,
                  [f"{line.paper}-{line.item}" for line in tested], "abstracts")


def untested(headlines: Sequence[Headline]) -> str:
    """The sentences no claim tests, each with the map's reason (a Markdown list)."""
    return "\n".join(f"- Paper {h.paper}: “{h.words}” *({h.reason})*"
                      for h in headlines if h.kind == "abstract" and not h.templates)


def open_questions(published: Sequence[Published], headlines: Sequence[Headline]) -> str:
    """The abstracts' open claims and what would settle each (a Markdown list), or a sentence.

    An open claim is inconclusive or has no verdict; its "to decide" is the n at which its own
    rule would decide with 80 % probability and where that n is set, or why no n would
    (`llmdyn.claims.planning.to_decide`).
    """
    found = assign(published, headlines)
    lines = []
    for line in (h for h in headlines if h.templates):
        for rec, table in found.get((line.paper, line.item), []):
            if rec.to_decide:
                lines.append(f"- Paper {line.paper}, {line.label} ({markdown_text(rec.model)}): "
                             f"{markdown_text(rec.statement)} is **{markdown_text(rec.grade)}** "
                             f"at {markdown_text(rec.number)}; to decide: "
                             f"{markdown_text(rec.to_decide)} "
                             f'(<a href="{table.href}">chapter {table.chapter[:2]}</a>)')
    return "\n".join(lines) or "No claim of the abstracts is open in this build."


def table1(published: Sequence[Published], headlines: Sequence[Headline],
           models: Sequence[str]) -> str:
    """Paper B's Table 1: property, the paper's Thought/Fixation cells, our grade per model."""
    found = assign(published, headlines)
    rows_of = [pair for h in headlines if h.kind == "table1"
               for pair in found.get((h.paper, h.item), [])]
    models = [m for m in models if any(r.model == m for r, _ in rows_of)]  # those measured
    properties = [h for h in headlines if h.kind == "table1"]
    rows = []
    for line in properties:
        here = found.get((line.paper, line.item), [])
        rows.append([line.label, Cell(line.words, {"class": "words"}),
                     *(_cell([(r, t) for r, t in here if r.model == m], line) for m in models)])
    return _table(["property", "paper B: Thought vs Fixation", *models], rows,
                  [f"{line.paper}-{slug(line.item)}" for line in properties], "table1")


def markdown(published: Sequence[Published], headlines: Sequence[Headline] | None = None) -> str:
    """The section for the intro page (MyST with raw HTML tables)."""
    headlines = tuple(headline_map() if headlines is None else headlines)
    models = build_models(published)
    where = ", ".join(f"**{markdown_text(m)}**" for m in models)
    return "\n".join([
        "## The abstracts, checked", "",
        f"Each sentence of the two abstracts that states a finding, and the claims of this "
        f"build that test it, for each model whose claims this build holds ({where}). A cell "
        f"gives the grade, the number with its {round(100 * LEVEL)} % interval and the "
        "chapter section that shows it; the {doc}`scorecard <scorecard>` has every claim with "
        "its rule. The map from sentences to claims is data (`data/headlines.csv`), checked "
        "by the tests against every build. A dash: that claim is not measured on that model.",
        "",
        html_or_markdown(sentence_table(published, headlines, models)), "",
        "The other sentences of the abstracts state no finding to test:", "",
        untested(headlines), "",
        "### Open questions, and what would settle them", "",
        "Each claim above that is inconclusive, or has no verdict for want of units, with the "
        "number of units at which its own rule and interval would decide it in 80 % of "
        "samples drawn from the units observed here (a prediction; the methods page, "
        "\"What would decide it\").", "",
        open_questions(published, headlines), "",
        "### Paper B's Table 1", "",
        "Each property's measure is lower where the property is stronger; a row holds where "
        f"the paper's phase is stronger (its {round(100 * LEVEL)} % interval lies on that side). "
        "CONFIDENT reads "
        "each layer with paper B's own logit lens (no final norm below the last layer); the "
        "normed lens is shown beside it, named.", "",
        html_or_markdown(table1(published, headlines, models)), ""])
