import math

import pytest

from llmdyn import LlmdynError
from llmdyn.claims.claim import at_most, within
from llmdyn.claims.twin_seeds import SeedSpread, rule_text, seed_table, spread_indices, spread_picks


@pytest.mark.parametrize("n, k, expected", [
    (20, 5, [0, 4, 8, 12, 16]),  # step n // k
    (20, 3, [0, 6, 12]),
    (20, 20, list(range(20))),
    (7, 3, [0, 2, 4]),
    (2, 4, [0, 1]),  # fewer items than picks: all of them
    (0, 3, []),
])
def test_spread_indices_known_answers(n, k, expected):
    assert spread_indices(n, k) == expected


def test_spread_indices_match_chapter_07s_formula():
    import numpy as np

    for n in range(1, 30):
        for k in range(1, 25):
            assert spread_indices(n, k) == list(np.arange(0, n, max(1, n // k))[:k])


def test_spread_picks_and_bad_input():
    assert spread_picks("abcdefgh", 4) == ["a", "c", "e", "g"]
    with pytest.raises(LlmdynError, match="n_seed_prompts"):
        spread_indices(5, 0)
    with pytest.raises(LlmdynError, match="sample size"):
        spread_indices(-1, 2)


def test_seed_spread_range_rule_and_text():
    s = SeedSpread({0: 0.5, 1: 0.7, 2: 0.6}, n_prompts=4)
    assert (s.low, s.high) == (0.5, 0.7)
    assert s.holds(at_most(0.7)) and not s.holds(at_most(0.65))
    assert s.text(".2f", at_most(0.75)) == \
        "seeds 0, 1, 2 on 4 prompts: 0.50–0.70 (every seed ≤ 0.75: yes)"
    assert SeedSpread({3: 1.0}, 1).text(".1f") == "seeds 3 on 1 prompt: 1.0–1.0"
    assert SeedSpread({0: -0.5, 1: 0.25}, 2).range_text(".2f") == "-0.50 to 0.25"
    nan = SeedSpread({0: 1.0, 1: float("nan")}, 2)
    assert math.isnan(nan.low) and math.isnan(nan.high) and not nan.holds(at_most(2))
    with pytest.raises(LlmdynError, match="at least one seed"):
        SeedSpread({}, 3)
    with pytest.raises(LlmdynError, match="n_prompts"):
        SeedSpread({0: 1.0}, 0)


def test_seed_table_rows_and_columns():
    rows = [("m: untrained r", SeedSpread({0: 0.9, 1: 0.8}, 3), None),
            ("m: trained/untrained", SeedSpread({0: 0.5, 1: 0.8}, 3), at_most(0.75))]
    lines = seed_table(rows, fmt=".1f").splitlines()
    assert lines[0] == ("| untrained number | prompts | seed 0 | seed 1 | range over seeds | "
                        "every seed clears the claim's rule |")
    assert lines[1] == "| --- | --- | --- | --- | --- | --- |"
    assert lines[2] == "| m: untrained r | 3 | 0.9 | 0.8 | 0.8–0.9 | — |"
    assert lines[3] == "| m: trained/untrained | 3 | 0.5 | 0.8 | 0.5–0.8 | no (≤ 0.75) |"
    assert lines[4:] == ["", "Every seed clears the claim's rule in 0 of 1 rows with a rule; "
                             "not in: m: trained/untrained."]
    assert len(seed_table(rows[:1]).splitlines()) == 3  # no rule, no sentence
    assert seed_table(rows[1:2] + [("n", SeedSpread({0: 0.1}, 1), at_most(0.75))]).endswith(
        "in 1 of 2 rows with a rule; not in: m: trained/untrained.")
    assert rule_text(within(0.25, 0.1)) == "within 0.1 of 0.25"
    with pytest.raises(LlmdynError, match="at least one row"):
        seed_table([])
