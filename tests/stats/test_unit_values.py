"""One number per unit from sub-item values: known summaries, unit order, clear refusals."""

from __future__ import annotations

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.stats.unit_values import per_unit, per_unit_groups

TOKENS = {("p2", 0): 1.0, ("p2", 1): 5.0, ("p2", 2): 2.0,  # keyed by (prompt, token)
          ("p1", 0): 4.0, ("p1", 1): 6.0}


def test_each_unit_gets_its_named_summary_in_unit_order():
    assert per_unit(TOKENS, "median") == {"p1": 5.0, "p2": 2.0}
    assert per_unit(TOKENS, "mean") == {"p1": 5.0, "p2": pytest.approx(8 / 3)}
    assert list(per_unit(TOKENS, "mean")) == ["p1", "p2"]  # ordered by unit id
    runs = {3: [1.0, 2.0], 10: np.array([4.0]), 1: (0.5, 0.5, 2.0)}  # numeric ids sort as numbers
    assert per_unit_groups(runs, "median") == {1: 0.5, 3: 1.5, 10: 4.0}
    assert list(per_unit_groups(runs, "median")) == [1, 3, 10]


def test_the_result_is_one_value_per_unit_not_per_sub_item():
    draws = {(f"p{i}", d): float(i + d) for i in range(16) for d in range(8)}  # 8 noise draws
    values = per_unit(draws, "mean", unit="prompt", within="noise draw")
    assert len(values) == 16 and values["p3"] == pytest.approx(3 + 3.5)


def test_an_empty_or_missing_unit_stops_with_its_name():
    with pytest.raises(LlmdynError, match="prompt 'p3' has no tokens"):
        per_unit(TOKENS, "mean", units=["p1", "p2", "p3"], unit="prompt", within="token")
    with pytest.raises(LlmdynError, match="run 2 has no passages"):
        per_unit_groups({1: [0.3], 2: []}, "median", unit="run", within="passage")
    with pytest.raises(LlmdynError, match="'p2' is not among the expected"):
        per_unit(TOKENS, "mean", units=["p1"], unit="prompt")


def test_bad_input_stops_with_one_clear_line():
    with pytest.raises(LlmdynError, match="summary must be one of"):
        per_unit(TOKENS, "trimmed mean")
    with pytest.raises(LlmdynError, match=r"\(unit id, token id\) pairs"):
        per_unit({"p1": 1.0}, "mean", within="token")
    with pytest.raises(LlmdynError, match="1 non-finite token values of 2"):
        per_unit_groups({"p1": [1.0, np.nan]}, "mean", within="token")
    with pytest.raises(LlmdynError, match="one orderable type"):
        per_unit_groups({"p1": [1.0], 2: [1.0]}, "mean")
    with pytest.raises(LlmdynError, match="no prompts given"):
        per_unit({}, "mean", unit="prompt")
