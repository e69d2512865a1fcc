"""The scorecard's summary grid: a row per chapter table and model, a linked count per grade."""

from llmdyn.claims.collected import Published, Record
from llmdyn.claims.scoreboard import summary


def _rec(cid: str, model: str, grade: str) -> Record:
    return Record(cid, "A", "§5", "s", "p", grade, "", "1.0", "r", "rule", model)


def test_the_summary_grid_links_each_count_and_totals_each_model():
    records = (_rec("a", "m", "holds"), _rec("b", "m", "no verdict"), _rec("c", "m<2", "holds"))
    table = Published("05_depth_coupling", "Coupling across depth: blocks", "scorecard", "x",
                      ("m", "m<2"), records)
    link = '<a href="#scorecard-05">'
    holds = f'{link}<span class="chip chip-holds" title="holds">1</span></a>'
    no_verdict = f'{link}<span class="chip chip-no-verdict" title="no verdict">1</span></a>'
    assert summary([table]) == (
        '<p class="scorecard-count">This build tests <strong>1 distinct claims of the papers'
        "</strong> (2 tests graded by an interval; a claim tested on two models counts once). "
        "Of its 3 rows, 2 carry a grade; not counted as tests: 0 facts about one case, "
        "0 variants of another row (another split or lens), 0 re-grades of another row's "
        "per-unit values and 0 checks of the book's own.</p>"
        '<table class="table scorecard-summary"><thead><tr>'
        "<th>chapter</th><th>model</th><th>holds</th><th>no verdict</th><th>all</th></tr></thead>"
        f"<tbody><tr><td>05 Coupling across depth</td><td>m</td><td>{holds}</td>"
        f"<td>{no_verdict}</td><td>{link}2</a></td></tr>"
        f"<tr><td>05 Coupling across depth</td><td>m&lt;2</td><td>{holds}</td><td>·</td>"
        f"<td>{link}1</a></td></tr>"
        "<tr><td><strong>all chapters</strong></td><td>m</td><td><strong>1</strong></td>"
        "<td>1</td><td><strong>2</strong></td></tr>"
        "<tr><td><strong>all chapters</strong></td><td>m&lt;2</td><td><strong>1</strong></td>"
        "<td>0</td><td><strong>1</strong></td></tr></tbody></table>\n")


def test_counts_leave_facts_variants_regrades_and_own_checks_out():
    from dataclasses import replace

    from llmdyn.claims.counting import count

    base = _rec("geo_a_m1", "m1", "holds")
    records = (
        replace(base, statement="m1: norms grow", data="d1"),
        replace(base, id="geo_a_m2", model="m2", statement="m2: norms grow", data="d2"),
        replace(base, id="table1_a", statement="m1: LINEAR", data="d1", section="Table 1"),
        replace(base, id="geo_a_m1_lss", variant_of="geo_a_m1", data="d3"),
        replace(base, id="fact", fact=True),
        replace(base, id="ctl", section="beyond the paper", data="d4"),
        replace(base, id="nv", grade="no verdict", unadjusted="no verdict"),
        replace(base, id="holm", grade="inconclusive", unadjusted="holds", data="d5",
                statement="m1: entropy falls"),
    )
    found = count([Published("02_x", "t", "scorecard", "x", ("m1", "m2"), records)])
    assert (found.rows, found.graded, found.facts, found.variants, found.regrades,
            found.own_checks, found.tests, found.claims) == (8, 7, 1, 1, 1, 1, 3, 2)
