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
