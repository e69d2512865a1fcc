"""Chapter 08's second-half rule: a late fall is seen, intervals over few runs are t or exact."""

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.claims import Claim, Measure
from llmdyn.emergence.persistence import (
    LateTrendRule,
    late_slope,
    peak_sentence,
    persistence_claim,
    run_trend,
    second_half,
    trend_table,
)
from llmdyn.emergence.profiles import RunSeries
from tests.emergence.test_training_summary import _profile

STEPS = (0, 1, 2, 4, 8, 16, 32, 64)


def _series(curve, noise: float = 0.002, seed: int = 0) -> RunSeries:
    """A run whose 8 passages follow ``curve`` (one value per step of STEPS) plus noise."""
    rng = np.random.default_rng(seed)
    profiles = tuple(_profile(np.clip(c + noise * rng.normal(size=8), 0, 1), n_prompts=8)
                     for c in curve)
    steps = np.array(STEPS)
    return RunSeries(steps=steps, tokens=steps * 10.0, heldout_loss=np.linspace(8, 4, 8),
                     train_loss=np.linspace(8, 4, 8), params=1000, profiles=profiles)


RISING = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]  # up to the end
PEAKED = [0.05, 0.2, 0.3, 0.35, 0.34, 0.32, 0.3, 0.29]  # peaks at step 4, then falls


def test_late_slope_known_answer():
    # Second half of 8 checkpoints: steps 8, 16, 32, 64 (log2 3..6); curve = 0.1·log2(step).
    steps = np.array(STEPS)
    curve = np.where(steps > 0, 0.1 * np.log2(np.maximum(steps, 1)), 0.0)
    assert second_half(steps) == slice(4, 8)
    assert late_slope(steps, curve) == pytest.approx(0.1)
    with pytest.raises(LlmdynError, match=">= 3 checkpoints"):
        second_half([0, 1])


def test_rank_correlation_alone_misses_a_late_fall():
    """RISING has ρ = 1 and rises to the end: holds. PEAKED climbs to step 4 and falls over the
    whole second half: the t interval over 4 runs of its late slope lies below 0, so it does not
    hold. Within one run (8 passages) the slope of the median curve gets no interval: no
    resampling method reaches its coverage at that n (data/coverage.csv)."""
    rising, peaked = run_trend(_series(RISING)), run_trend(_series(PEAKED))
    assert rising.rho == pytest.approx(1.0) and rising.late.estimate.value > 0
    assert not rising.late.estimate.has_interval and "coverage" in rising.late.reason
    assert peaked.peak_step == 4 and peaked.last == pytest.approx(0.29, abs=0.01)
    assert peaked.late.estimate.value < 0
    runs = range(1, 5)
    up = persistence_claim({f"r{i}": _series(RISING, seed=i) for i in runs})
    assert up.verdict.grade == "holds"
    down = persistence_claim({f"r{i}": _series(PEAKED, seed=i) for i in runs})
    assert down.verdict.grade == "does not hold"
    assert "falls over the second half" in down.verdict.reason
    assert "peak at step 4" in down.measure.detail


def test_rule_grades_by_rise_and_late_interval():
    from llmdyn.stats.bootstrap import Estimate

    flat = Estimate(0.0, -0.01, 0.01, 4)  # no clear late trend
    falls = Estimate(-0.02, -0.03, -0.01, 4)
    assert LateTrendRule(rise="met").judge(flat)[0] == "holds"
    assert LateTrendRule(rise="unclear", rise_text="ρ 0.5").judge(flat) == ("inconclusive",
                                                                           "ρ 0.5")
    assert LateTrendRule(rise="failed", rise_text="x").judge(flat)[0] == "does not hold"
    assert LateTrendRule(rise="met").judge(falls)[0] == "does not hold"
    claim = Claim("x", "A", "§5.3", "s", "p", Measure.mean([0.0, 0.01, -0.01, 0.0], "slope"),
                  LateTrendRule(rise="met", rise_rule="ρ ≥ 0.7"))
    assert claim.rule_text.startswith("holds when ρ ≥ 0.7 and the 95 % interval of the slope")
    assert "inconclusive otherwise" in claim.rule_text


def test_runs_take_t_and_exact_intervals_known_answers():
    m = Measure.mean([1.0, 2.0, 3.0, 4.0], "mean")
    half = 3.182446305284263 * np.std([1, 2, 3, 4], ddof=1) / 2  # t_{0.975, 3} · s / √4
    assert (m.estimate.value, m.estimate.lo, m.estimate.hi) == pytest.approx(
        (2.5, 2.5 - half, 2.5 + half))
    assert Measure.mean([1.0], "one").estimate.has_interval is False
    f = Measure.fraction([True, True, True, False], "share")
    assert f.estimate.value == 0.75
    assert (f.estimate.lo, f.estimate.hi) == pytest.approx((0.19412, 0.99369), abs=1e-4)


def test_tables_and_sentence_say_where_coupling_peaks():
    series = {"up": _series(RISING), "peaked": _series(PEAKED)}
    sentence = peak_sentence(series)
    assert "up at its last checkpoint (step 64" in sentence
    assert "peaked at step 4 (0.349), then falls to 0.289" in sentence and "by step 64" in sentence
    table = trend_table(series)
    assert "| peaked | " in table and "| 4: 0.349 | 64: 0.289 |" in table
    assert "within one network" in table
