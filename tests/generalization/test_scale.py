"""Chapter 09 at its true scale: positions against the references, rule power, cost of more."""

import numpy as np
import pandas as pd
import pytest

from llmdyn import LlmdynError
from llmdyn.claims import Measure, at_least
from llmdyn.generalization import scale


def test_position_counts_split_the_models_at_the_two_references():
    got = scale.position_counts([4.0, 5.0, 5.5, 6.5, 7.0], {"unigram": 6.0, "bigram": 5.0})
    # 5.0 is not below the bigram (strict), 6.5 and 7.0 are above the unigram
    assert got == {"below bigram": 1, "between": 2, "above unigram": 2}


def test_level_sentence_names_where_most_models_sit():
    counts = {"heldout_loss": {"below bigram": 1, "between": 20, "above unigram": 6},
              "ood_loss": {"below bigram": 0, "between": 2, "above unigram": 25}}
    text = scale.level_sentence(counts, {"heldout_loss": "held-out loss", "ood_loss": "OOD"})
    assert text == ("by the held-out loss, 20 of 27 models have learned the token frequencies "
                    "but less than what the previous token tells; by the OOD, 25 of 27 models "
                    "have not yet learned even the token frequencies")


def _frame(per_doubling=-0.2):
    """Held-out loss = 5 + per_doubling·log2(tokens) − 0.1·log2(params / 1000), exactly."""
    rows = []
    for params in (1000, 4000):
        for tokens in (1024, 2048, 4096):
            rows.append((1.0, tokens, params))
    rows += [(0.5, 4096, 1000), (0.5, 4096, 4000)]  # data-budget runs: left out of the fit
    frame = pd.DataFrame(rows, columns=["data_fraction", "tokens", "params"])
    frame["run"] = [f"r{i}" for i in range(len(frame))]
    frame["heldout_loss"] = (5 + per_doubling * np.log2(frame.tokens)
                             - 0.1 * np.log2(frame.params / 1000))
    frame.loc[frame.data_fraction < 1, "heldout_loss"] = 9.0  # would spoil the fit if used
    return frame


def test_bigram_cost_extrapolates_the_full_data_runs():
    frame = _frame()
    wall = dict.fromkeys(frame.run, 60.0)
    cost = scale.bigram_cost(frame, wall, bigram=2.3, margin=0.1)
    # the smaller size is worse: 5 − 0.2·12 = 2.6 at 4096 tokens; 2.2 needs two more doublings
    assert cost.per_doubling == pytest.approx(-0.2)
    assert cost.target == pytest.approx(2.2)
    assert cost.factor == pytest.approx(4.0)
    assert cost.measured_hours == pytest.approx(8 * 60 / 3600)
    assert cost.hours == pytest.approx(4 * 8 * 60 / 3600)
    assert cost.tokens == pytest.approx(4 * 4096)


def test_bigram_cost_without_a_falling_loss_or_run_times():
    frame = _frame(per_doubling=0.05)
    flat = scale.bigram_cost(frame, dict.fromkeys(frame.run, 1.0), bigram=2.0)
    assert np.isnan(flat.factor) and "does not fall" in flat.reason
    few = frame[frame.data_fraction < 1]
    short = scale.bigram_cost(few, dict.fromkeys(few.run, 1.0), bigram=2.0)
    assert np.isnan(short.hours) and "0 run(s) trained on the whole split" in short.reason
    with pytest.raises(LlmdynError, match="no measured wall time"):
        scale.bigram_cost(frame, {"r0": 1.0}, bigram=2.0)


def test_verdict_power_reports_both_scenarios():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 0.3, 27)
    y = 6 - 2 * x + 0.1 * rng.standard_normal(27)
    vp = scale.verdict_power(x, y, Measure.r2, at_least(0.5), paper_r2=0.75, sign=-1.0,
                             n_draws=40, seed=0)
    for power in (vp.effect, vp.null):
        assert sum(power.counts.values()) == 40
    # R² ≥ 0.5 on the whole interval is far out of reach of a population with no effect
    assert vp.null.share("holds") == 0.0
    assert vp.effect.share("holds") > vp.null.share("holds")
    text = vp.sentence()
    assert "n = 27" in text and "40 simulated populations" in text and "seed 0" in text


def test_coefficient_rows_refuse_too_few_models():
    frame = pd.DataFrame({"diagonal_share": np.arange(6.0), "a": np.arange(6.0) ** 2,
                          "b": np.ones(6), "y": np.arange(6.0)})
    text = scale.coefficient_rows(frame, {"y": "loss"}, {"two": ["a", "b"]},
                                  coefficient=lambda *a: None)
    assert "too few for 4 coefficients" in text


def test_stand_in_note_says_what_the_verdict_rests_on():
    assert scale.stand_in_note({"below bigram": 0, "between": 27, "above unigram": 0}) == (
        "stand-in: OOD loss of 27 models trained here, between unigram and bigram level")
    assert scale.stand_in_note({"below bigram": 2, "between": 25, "above unigram": 0}) == (
        "stand-in: OOD loss of 27 models trained here, 2 below bigram level, 25 between "
        "unigram and bigram level")


@pytest.mark.parametrize(("hours", "text"), [
    (0.02, "under two minutes"), (0.4, "about 24 minutes"), (1.2, "about 72 minutes"),
    (1.5, "about 2 hours"), (1234.4, "about 1,234 hours")])
def test_hours_text_never_rounds_a_short_run_to_zero_hours(hours, text):
    assert scale.hours_text(hours) == text


def test_hours_text_refuses_what_is_not_a_duration():
    with pytest.raises(LlmdynError, match="finite number of hours"):
        scale.hours_text(float("nan"))
