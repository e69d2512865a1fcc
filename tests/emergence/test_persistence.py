"""Chapter 08's late-slope rule: a late fall is seen, one slope per run, t interval over runs."""

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.emergence.persistence import (
    late_slope,
    late_window,
    peak_sentence,
    persistence_claim,
    run_trend,
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
PEAKED = [0.05, 0.2, 0.3, 0.35, 0.36, 0.34, 0.3, 0.29]  # peaks at step 8, then falls


def test_late_window_and_slope_known_answer():
    # Steps >= 64 / 4 = 16: steps 16, 32, 64 (log2 4..6); curve = 0.1·log2(step).
    steps = np.array(STEPS)
    curve = np.where(steps > 0, 0.1 * np.log2(np.maximum(steps, 1)), 0.0)
    assert late_window(steps).tolist() == [5, 6, 7]
    assert late_slope(steps, curve) == pytest.approx(0.1)
    assert late_window([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512]).tolist() == [8, 9, 10]
    with pytest.raises(LlmdynError, match=">= 3 checkpoints with step >= last step / 4"):
        late_window([0, 1, 2, 64])


def test_rank_correlation_alone_misses_a_late_fall():
    """RISING has ρ = 1 and rises to the end: holds. PEAKED climbs to step 8 and falls over the
    last quarter (steps 16-64): the t interval over 4 runs of the late slope lies below 0, so it
    does not hold, though its rank correlation is positive."""
    rising, peaked = run_trend(_series(RISING)), run_trend(_series(PEAKED))
    assert rising.rho == pytest.approx(1.0) and rising.late > 0
    assert peaked.peak_step == 8 and peaked.last == pytest.approx(0.29, abs=0.01)
    assert peaked.late < 0 < peaked.rho
    runs = range(1, 5)
    up = persistence_claim({f"r{i}": _series(RISING, seed=i) for i in runs})
    assert up.verdict.grade == "holds" and up.measure.sampling_unit == "run"
    assert up.measure.estimate.n == 4 and up.measure.unit_ids == ("r1", "r2", "r3", "r4")
    down = persistence_claim({f"r{i}": _series(PEAKED, seed=i) for i in runs})
    assert down.verdict.grade == "does not hold"
    assert "peak at step 8" in down.measure.detail
    assert "(n = 4 runs, t interval)" in down.result_text()


def test_a_straddling_interval_is_inconclusive():
    """Two runs rise late and two fall: the mean slope's interval straddles 0."""
    mixed = {"a": _series(RISING), "b": _series(PEAKED), "c": _series(RISING, seed=2),
             "d": _series(PEAKED, seed=3)}
    claim = persistence_claim(mixed)
    e = claim.measure.estimate
    assert e.lo < 0 < e.hi and claim.verdict.grade == "inconclusive"
    assert claim.rule_text.startswith("holds when the 95 % interval of the late slope")


def test_trend_table_never_prints_nan():
    table = trend_table({"up": _series(RISING), "peaked": _series(PEAKED)})
    assert "nan" not in table
    assert "| peaked | " in table and "| 8: 0.361 | 64: 0.289 |" in table
    # 2 runs are below the smallest n whose coverage was tested: the mean says so, with no ends
    assert "| mean over runs |" in table and "(no interval: n = 2 is below" in table
    four = trend_table({f"r{i}": _series(RISING, seed=i) for i in range(4)})
    assert "(n = 4 runs, t interval)" in four and "nan" not in four


def test_sentence_says_where_coupling_peaks():
    sentence = peak_sentence({"up": _series(RISING), "peaked": _series(PEAKED)})
    assert "up at its last checkpoint (step 64" in sentence
    assert "peaked at step 8 (0.361), then falls to 0.289" in sentence and "by step 64" in sentence
