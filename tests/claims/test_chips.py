"""Grades as chips: the colour class follows the grade, the text still names it."""

import re

import pytest

from llmdyn import LlmdynError
from llmdyn.claims.chips import MEANING, chip, legend, legend_text, record_chip
from llmdyn.claims.claim import GRADES


def test_a_chip_names_its_grade_and_carries_its_class():
    assert chip("does not hold") == ('<span class="chip chip-does-not-hold" '
                                     'title="does not hold">does not hold</span>')
    assert chip("holds", label="3 holds").endswith(">3 holds</span>")


def test_a_stand_in_chip_is_distinct_and_says_so():
    plain, stand_in = record_chip("holds"), record_chip("holds", "our suite")
    assert "chip-stand-in" in stand_in and "chip-stand-in" not in plain
    assert re.sub(r"<[^>]+>", "", stand_in) == "holds · stand-in"


def test_every_grade_has_a_meaning_and_the_legend_shows_each_once():
    assert set(MEANING) == set(GRADES)
    html = legend()
    assert all(html.count(f">{g}</span>") == 1 for g in GRADES if g != "holds")
    assert html.count(">holds · stand-in</span>") == 1
    assert "<" not in legend_text()


@pytest.mark.parametrize(("grade", "modifiers"), [("partly", ()), ("holds", ("fragile?",))])
def test_an_unknown_grade_or_modifier_is_refused(grade, modifiers):
    with pytest.raises(LlmdynError, match="chip: "):
        chip(grade, modifiers=modifiers)
