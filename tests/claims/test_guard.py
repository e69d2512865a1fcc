"""`publish` refuses intervals the book's rules do not allow (`breaks.guard_breaks`)."""

from dataclasses import replace

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.claims import Claim, Measure, at_least, below, publish
from llmdyn.claims.breaks import guard_breaks
from llmdyn.claims.render import glue_values
from llmdyn.stats.bootstrap import Estimate


def _real_rows() -> list[Claim]:
    """Rows as a chapter builds them: a t interval, a ratio, a Welch difference, a fact."""
    rng = np.random.default_rng(0)
    a, b = rng.gamma(4, size=20), rng.gamma(4, size=20)
    per = {"sampling_unit": "prompt"}
    return [Claim("mean", "A", "§1", "s", "p", Measure.mean(a, "m", **per), at_least(1)),
            Claim("ratio", "A", "§1", "s", "p", Measure.ratio(a, b, "r", **per), below(2)),
            Claim("welch", "A", "§1", "s", "p",
                  Measure.difference(a, b[:12], "w", paired=False, **per), below(0)),
            Claim("fact", "B", "Fig 8", "s", "p",
                  Measure.fact(True, "top token", fmt="yes/no", case="the France prompt"),
                  at_least(1))]


def _with(claim: Claim, **estimate) -> Claim:
    """``claim`` with its estimate's fields replaced (a row that no constructor would make)."""
    return replace(claim, measure=replace(claim.measure,
                                          estimate=replace(claim.measure.estimate, **estimate)))


def test_rows_as_chapters_build_them_pass():
    rows = _real_rows()
    assert guard_breaks({k: v for c in rows for k, v in glue_values(c).items()}) == []
    publish(rows, glue=lambda *a, **k: None)


@pytest.mark.parametrize("row, change, message", [
    (0, {"n": 2}, "mean: an interval over n = 2 units, below the floor of 3"),
    (0, {"lo": 5.0, "hi": 3.0}, "mean: reversed interval [5.0, 3.0]"),
    (1, {"value": 9.0}, "ratio: the estimate 9.0 is not the centre of its symmetric delta_t"),
    (2, {"value": 0.1}, "welch: the estimate 0.1 is not the centre of its symmetric welch"),
    (3, {"lo": 0.5, "hi": 1.5}, "fact: graded as a fact, but it has an interval [0.5, 1.5]"),
    (3, {"n": 20}, "fact: graded as a fact, but it has n = 20"),
])
def test_publish_refuses_a_row_the_rules_do_not_allow(row, change, message):
    rows = _real_rows()
    rows[row] = _with(rows[row], **change)
    with pytest.raises(LlmdynError, match="the book's rules refuse") as err:
        publish(rows, glue=lambda *a, **k: None)
    assert message in str(err.value)


def test_an_unknown_unit_and_an_asymmetric_interval():
    values = {k: v for c in _real_rows() for k, v in glue_values(c).items()}
    assert guard_breaks({**values, "mean_unit": "token"}) == [
        "mean: unknown sampling unit 'token'; one of ['ViT', 'model', 'prompt', 'run', 'seed', "
        "'task']"]
    # a BCa or Clopper–Pearson interval need not be centred on its estimate
    skewed = {**values, "mean_method": "bca", "mean_lo": values["mean_value"] - 0.1,
              "mean_hi": values["mean_value"] + 0.5}
    assert guard_breaks(skewed) == []
    est = Estimate(1.0, 0.5, 1.5, 3, method="t")  # n = 3: the table's smallest n is allowed
    row = Claim("three", "A", "§1", "s", "p", Measure("q", est, sampling_unit="run"),
                at_least(0))
    assert guard_breaks(glue_values(row)) == []
