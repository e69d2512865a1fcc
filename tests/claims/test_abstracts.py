"""The intro's "The abstracts, checked" table: a row per sentence, a cell per model."""

from llmdyn.claims.abstracts import labelled, sentence_table
from llmdyn.claims.collected import Published, Record
from llmdyn.claims.headlines import Headline


def test_a_sentence_row_names_its_item_and_marks_a_model_not_measured():
    line = Headline("B", "B4", "abstract", "two stages", 'two "stages" & more', ("geo_{model}",))
    rec = Record("geo_m_a", "B", "§4", "m-a: two stages", "p", "holds", "", "2 [1, 3]", "r",
                 "rule", "m-a")
    page = sentence_table([Published("02_x", "T", "scorecard", "a", ("m-a",), (rec,))], [line],
                          ["m-a", "m-b"])
    assert page == (
        '<table class="table headlines abstracts"><thead><tr>'
        "<th>paper</th><th>the abstract says</th><th>m-a</th><th>m-b</th></tr></thead><tbody>"
        '<tr data-item="B-B4"><td>B</td><td class="words">“two &quot;stages&quot; &amp; more”'
        '</td><td><div class="claim grade-holds" data-claim="geo_m_a" style="margin-bottom: '
        '0.6em"><span class="chip chip-holds" title="holds">holds</span> '
        '<span class="number">2 [1, 3]</span> '
        '<a class="where" href="executed/02_x.html#a" title="geo_m_a">ch.&#160;02</a><br>'
        "<small>two stages</small></div></td>"
        '<td class="none" title="not measured on this model" style="color: #888">—</td>'
        "</tr></tbody></table>")


def test_a_label_names_the_split_its_grade_was_read_under():
    line = Headline("B", "LINEAR", "table1", "LINEAR", "Thought LESS",
                    ("table1_linear_{model}_{split}",))
    rec = Record("table1_linear_m_a_fixed_thirds", "B", "T1", "m-a: LINEAR is stronger", "p",
                 "holds", "", "1", "r", "rule", "m-a")
    assert labelled(rec, line) == "LINEAR is stronger (fixed thirds split)"
    assert labelled(rec, None) == "LINEAR is stronger"


def test_no_fragile_stand_in_or_holm_moved_grade_is_shown_plain():
    from dataclasses import replace

    from llmdyn.claims.abstracts import qualifiers

    rec = Record("a", "B", "§4", "s", "p", "inconclusive", "", "2 [1, 3]", "r", "rule", "m",
                 unadjusted="holds", robustness="fragile", stand_in="SQuAD for WikiText")
    assert qualifiers(rec) == "fragile; stand-in; Holm-adjusted; unadjusted holds"
    assert qualifiers(replace(rec, unadjusted="inconclusive", robustness="robust",
                              stand_in="")) == ""
    line = Headline("B", "B4", "abstract", "two stages", "w", ("a",))
    page = sentence_table([Published("02_x", "T", "scorecard", "a", ("m",), (rec,))], [line],
                          ["m"])
    assert ('<span class="chip chip-inconclusive chip-stand-in chip-fragile" '
            'title="inconclusive, measured on a stand-in, flipped by a choice a referee would '
            'vary: the split">inconclusive · stand-in · fragile</span> <em class="qualifier">'
            "(fragile; stand-in; Holm-adjusted; unadjusted holds)</em> <span") in page
