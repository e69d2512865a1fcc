"""A grade under every specification a referee would vary: robust or fragile (known answers)."""

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.claims.claim import Claim, Measure, above, at_least, at_most, within
from llmdyn.claims.review import review
from llmdyn.claims.robustness import (
    across,
    assess,
    chosen_threshold,
    flip_points,
    moved_rules,
    split_identified,
)

UNIT = {"sampling_unit": "prompt", "fmt": ".2f"}


def _ratio(scale, rule, cid="r"):
    a = np.array([1.0, 1.1, 0.9, 1.05, 0.95] * 4)
    return Claim(cid, "A", "§1", "s", "p", Measure.ratio(a * scale, np.ones(20), "ratio",
                                                         unit="×", **UNIT), rule)


def test_a_chosen_threshold_moves_by_a_quarter_of_its_distance_from_no_effect():
    claim = _ratio(2.2, at_least(2))  # 2.2× [2.15, 2.25]: holds against 2, not against 2.25
    assert chosen_threshold(claim)
    assert [(name, r.threshold) for name, r in moved_rules(claim)] == [
        ("threshold 1.75×", 1.75), ("threshold 2.25×", 2.25)]
    rob = assess(claim)
    assert rob.word == "fragile" and [s.name for s in rob.flips] == ["threshold 2.25×"]
    assert rob.text() == "fragile (flips with: threshold 2.25× → inconclusive)"
    lo = claim.measure.estimate.lo
    assert flip_points(claim) == f"flips at threshold {lo:.2f}×"


def test_no_effect_thresholds_do_not_move_and_bands_move_their_width():
    diff = Claim("d", "A", "§1", "s", "p", Measure.difference(
        np.arange(10.0) + [1, 2] * 5, np.arange(10.0), "x", **UNIT), above(0))
    assert not chosen_threshold(diff) and moved_rules(diff) == []
    assert assess(diff).word == "robust" and assess(diff).specifications == ()
    band = Claim("b", "A", "§1", "s", "p", Measure.mean(np.linspace(0.2, 0.3, 20), "x", **UNIT),
                 within(0.25, 0.1))
    assert [r.tolerance for _, r in moved_rules(band)] == pytest.approx([0.075, 0.125])


def test_variants_flip_and_a_split_not_identified_is_fragile_by_construction():
    mine, other = _ratio(3, at_least(2), "a_consensus"), _ratio(1, at_least(2), "a_entropy")
    by = across({"consensus": [mine], "entropy": [other]}, "consensus")
    assert by == {"a_consensus": {"entropy": other}}
    rob = assess(mine, by["a_consensus"])
    assert rob.word == "fragile" and rob.flips[0].grade == "does not hold"
    why = split_identified({"lss_peak": 15, "entropy_spread": 6, "norm_velocity": 22}, 30)
    assert why.startswith("split not identified: the criteria give layers lss_peak 15, "
                          "entropy_spread 6, norm_velocity 22, 16 apart")
    assert split_identified({"a": 7, "b": 9, "c": 10}, 18) == ""  # 3 ≤ 18/4
    same = assess(_ratio(3, at_least(2)), by_construction=why)
    assert same.word == "fragile" and same.text().startswith("fragile (flips with: split not")
    with pytest.raises(LlmdynError, match="same claims"):
        across({"consensus": [mine], "entropy": []}, "consensus")


def test_review_leaves_published_twins_out_of_the_holm_family():
    mine, twin = _ratio(3, at_least(2), "a_consensus"), _ratio(1, at_least(2), "a_entropy")
    seen = review([mine, twin], variants={"a_consensus": {"entropy": twin}})
    assert set(seen.adjusted) == {"a_consensus"} and seen.adjusted["a_consensus"].m == 1
    assert seen.word(mine) == "fragile" and seen.headline(mine) == "holds"
    assert seen.verdict_text(mine).startswith("holds (Holm over 1 test: holds at 95 %; fragile")
    ungraded = Claim("u", "A", "§1", "s", "p", Measure.single(1.0, "x"), at_most(2))
    assert seen.word(ungraded) == "" and seen.note(ungraded) == ""
    with pytest.raises(LlmdynError, match="not published here"):
        review([mine], variants={"zzz": {"entropy": twin}})


def test_a_row_that_fails_only_the_books_threshold_says_so():
    from llmdyn.claims.robustness import threshold_note

    short = _ratio(1.5, at_least(2))  # 1.5× [1.47, 1.53]: not 2×, but clearly above 1×
    assert short.verdict.grade == "does not hold"
    assert threshold_note(short) == ("2.00× is the book's choice, not no effect (1.00×); it "
                                     "fails only that choice: its interval excludes no effect "
                                     "on the paper's side")
    assert threshold_note(_ratio(2.5, at_least(2))) == \
        "2.00× is the book's choice, not no effect (1.00×)"
    null = _ratio(1.0, at_least(1))  # the no-effect threshold itself: no tag
    assert threshold_note(null) == ""
