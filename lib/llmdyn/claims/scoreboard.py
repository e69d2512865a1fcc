"""The scorecard's summary grid and its one interactive table of every claim, built with the book.

Both are generated from the claim records the executed chapters glued
(:mod:`llmdyn.claims.collected`), never typed:

- the **headline count**: the distinct claims of the papers the build tests
  (`llmdyn.claims.counting`), facts, variants, re-grades and the book's own checks apart;
- the **summary grid**: one row per chapter table and model, one column per grade
  (`llmdyn.claims.GRADES`, those that occur), each count a link to the chapter's section on the
  scorecard page (the label ``scorecard-<chapter>`` or ``scorecard-<key>``);
- the **claims table**: every claim of every chapter as one row, interactive with ITables
  (DataTables) in its offline mode: the library's JavaScript and CSS are inlined in the page, so
  it filters (search panes for paper, chapter, model and grade), sorts and searches from the
  built HTML with no network. Without JavaScript, ITables shows its static preview, and the
  per-chapter tables below it on the page are plain HTML.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Sequence

from llmdyn.claims.chips import chip
from llmdyn.claims.claim import GRADES, JUDGED, slug
from llmdyn.claims.collected import Published, Record, build_models
from llmdyn.claims.counting import count
from llmdyn.claims.findings import SCORECARD_KEY
from llmdyn.claims.headlines import best, headline_map
from llmdyn.core.tables import Html, html_table

TABLE_ID = "scorecard-claims"
COLUMNS = ("paper", "chapter", "model", "claim", "paper says", "this run", "grade", "to decide",
           "rule")
# "this run" is the estimate and its interval; "rule" is the row's bound (the rule itself is
# stated once above the table), with the full result (quantity, n, detail) folded beneath it.
FILTERED = ("paper", "chapter", "model", "grade")  # the columns with a search pane
# The grade cell drawn as a chip (llmdyn.claims.chips' classes) for display only: sorting,
# searching and the search pane read the plain grade.
CHIP_RENDER = ("function (data, type) { if (type !== 'display') { return data; } "
               "return '<span class=\"chip chip-' + data.replace(/ /g, '-') + '\">' + data + "
               "'</span>'; }")


def section_label(table: Published) -> str:
    """The scorecard's label of a published table's section (``scorecard-05``, ``-table1``)."""
    return f"scorecard-{table.chapter[:2]}" if table.key == SCORECARD_KEY else \
        f"scorecard-{slug(table.key)}"


def table_name(table: Published) -> str:
    """The chapter's number and short title, e.g. "05 Coupling across depth".

    The title is cut at a colon and to 32 characters; a second table of a chapter names its key.
    """
    short = table.title.split(":")[0]
    short = short if len(short) <= 32 else short[:31].rstrip() + "…"
    extra = "" if table.key == SCORECARD_KEY else f" ({table.key})"
    return f"{table.chapter[:2]} {short}{extra}"


def summary(published: Sequence[Published]) -> str:
    """The grid as HTML: chapter table × model rows, grade columns, each count a chip and a link.

    Raw HTML (one block, no blank line). It stays in the article's column: the page's margin
    holds the sticky contents box.
    """
    grades = [g for g in GRADES if any(r.grade == g for p in published for r in p.records)]
    rows, totals = [], {}
    for table in published:
        for model in build_models([table]):
            n = Counter(r.grade for r in table.records if r.model == model)
            totals.setdefault(model, Counter()).update(n)
            link = f'<a href="#{section_label(table)}">'
            rows.append([table_name(table), model,
                         *(Html(f"{link}{chip(g, label=str(n[g]))}</a>") if n[g] else "·"
                           for g in grades),
                         Html(f"{link}{sum(n.values())}</a>")])
    for model, n in totals.items():
        rows.append([Html("<strong>all chapters</strong>"), model,
                     *(Html(f"<strong>{n[g]}</strong>") if g in JUDGED else n[g] for g in grades),
                     Html(f"<strong>{sum(n.values())}</strong>")])
    return (f'<p class="scorecard-count">{count(published).sentence()}</p>'
            + html_table(["chapter", "model", *grades, "all"], rows,
                         css_class="table scorecard-summary") + "\n")


def code_spans(text: str) -> str:
    """``text`` as HTML with its `backticked` commands in <code> (a table cell is raw HTML)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _row(rec: Record, table: Published) -> list[str]:
    """One row of the interactive table, cells as HTML (the details fold away).

    The filtered columns hold plain text (a search pane lists their values as they are); the
    link to the chapter's section sits in the claim cell, and a claim judged under one phase
    split names it (the same statement may be graded under two splits).
    """
    esc = html.escape
    line = best(headline_map(), rec.id, [slug(rec.model)])
    statement = (line.with_split(rec.id, slug(rec.model), rec.statement) if line is not None
                 else rec.statement)
    reason = f"<br><small>({esc(rec.reason)})</small>" if rec.reason else ""
    stand_in = f"<br><em>stand-in: {esc(rec.stand_in)}</em>" if rec.stand_in else ""
    reason += f"<br><small>{esc(rec.review)}</small>" if rec.review else ""
    return [rec.paper, esc(table_name(table)), esc(rec.model),
            f'{esc(statement)} <small>({esc(rec.section)}; <a href="{table.href}">'
            f"chapter {table.chapter[:2]}</a>)</small>", esc(rec.paper_value),
            f"{esc(rec.number)}{stand_in}{reason}", esc(rec.grade), code_spans(rec.to_decide),
            f"{esc(rec.bound or '—')}<details><summary>measured</summary><small>"
            f"{esc(rec.result)}</small></details>"]


def interactive(published: Sequence[Published]) -> str:
    """Every claim in one ITables table (offline: its JavaScript and CSS inlined)."""
    import pandas as pd  # optional heavy dependencies: only the book build needs them
    from itables import JavascriptFunction, options, to_html_datatable
    from itables.javascript import generate_init_offline_itables_html

    rows = [_row(rec, table) for table in published for rec in table.records]
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    panes = [COLUMNS.index(c) for c in FILTERED]
    init = generate_init_offline_itables_html(options.dt_bundle)  # the library, inlined
    init = init[:init.index("<div")]  # less its notice for notebooks that are not trusted
    # in the article's column, clear of the contents box; DataTables scrolls it sideways
    return init + '<div class="scorecard-claims">' + to_html_datatable(
        df, connected=False, table_id=TABLE_ID, allow_html=True, maxBytes=0, showIndex=False,
        classes="display compact", pageLength=25, lengthMenu=[10, 25, 100, -1],
        layout={"top1": "searchPanes", "topStart": "pageLength", "topEnd": "search",
                "bottomStart": "info", "bottomEnd": "paging"},
        searchPanes={"columns": panes, "layout": f"columns-{len(panes)}", "cascadePanes": True,
                     "initCollapsed": False, "viewTotal": True},
        columnDefs=[{"searchPanes": {"show": True}, "targets": panes},
                    {"width": "28%", "targets": [COLUMNS.index("claim")]},
                    {"render": JavascriptFunction(CHIP_RENDER),
                     "targets": [COLUMNS.index("grade")]}],
        autoWidth=False, scrollX=True) + "</div>"
