"""The one Markdown table renderer (llmdyn.core.tables) that every chapter's table goes through."""

import pytest

from llmdyn import LlmdynError
from llmdyn.core.tables import markdown_table


def test_a_known_table():
    rows = [{"model": "a", "n": 3, "R²": "0.50"}, {"model": "b", "n": 12, "R²": "—"}]
    assert markdown_table(rows, align={"n": "right"}) == (
        "| model | n | R² |\n| --- | ---: | --- |\n| a | 3 | 0.50 |\n| b | 12 | — |")


@pytest.mark.parametrize("rows, align, match", [
    ([], None, "at least one row"),
    ([{"a": 1}, {"b": 2}], None, r"columns \['a'\]"),
    ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], None, "columns"),  # same keys, other order
    ([{"a": 1}], {"c": "right"}, "names no column"),
    ([{"a": 1}], {"a": "middle"}, "no alignment"),
])
def test_rows_that_do_not_make_a_table_are_refused(rows, align, match):
    with pytest.raises(LlmdynError, match=match):
        markdown_table(rows, align=align)
