"""Chapter 08's claims over runs: one number per run, then the interval over runs."""

import numpy as np
import pytest
from scipy import stats as sps

from llmdyn import LlmdynError
from llmdyn.emergence.over_runs import (
    direction_claim,
    emergence_claim,
    falls_claims,
    locality_claims,
    on_suite,
    run_lags,
    run_means,
    timing_claims,
    timing_lag,
)
from llmdyn.emergence.profiles import RunSeries
from tests.emergence.test_training_summary import _profile, _run

T3 = sps.t.ppf(0.975, 3)  # Student's t quantile over 4 runs


def test_timing_lag_counts_checkpoint_intervals():
    # coupling half-way at index 1 (step 1); the loss (progress 0, .25, .75, 1) at index 1.5
    share = np.array([[0.1, 0.3, 0.4, 0.5]] * 3)  # (prompt, ckpt)
    assert timing_lag(share, np.array([8.0, 7.5, 6.5, 6.0])) == pytest.approx(1 - 1.5)
    assert timing_lag(share, np.array([8.0, 6.0, 5.0, 4.0])) == pytest.approx(0.0)


def _timed_runs() -> dict[str, RunSeries]:
    """4 runs whose lags are 0, −0.5, 0, −0.5 checkpoint intervals."""
    same, late = [8.0, 6.0, 5.0, 4.0], [8.0, 7.5, 6.5, 6.0]
    return {f"r{i}": _run([0.1, 0.3, 0.4, 0.5], same if i % 2 == 0 else late) for i in range(4)}


def test_timing_is_judged_over_runs_and_each_run_is_shown():
    runs = _timed_runs()
    assert run_lags(runs) == pytest.approx({"r0": 0.0, "r1": -0.5, "r2": 0.0, "r3": -0.5})
    half = T3 * np.std([0, -0.5, 0, -0.5], ddof=1) / 2  # 0.459: [−0.709, 0.209]
    claims = {c.id: c for c in timing_claims(runs, tolerance=1)}
    one = claims["train_timing_r1_tol1"]
    assert one.verdict.grade == "no verdict" and "n = 1 run" in one.verdict.reason
    assert "train_timing_runs_tol1" in one.verdict.reason
    assert one.measure.estimate.value == pytest.approx(-0.5)
    over = claims["train_timing_runs_tol1"]
    e = over.measure.estimate
    assert (e.value, e.lo, e.hi) == pytest.approx((-0.25, -0.25 - half, -0.25 + half))
    assert over.verdict.grade == "holds" and "(n = 4 runs, t interval)" in over.result_text()
    tight = {c.id: c for c in timing_claims(runs, tolerance=0.5)}["train_timing_runs_tol0_5"]
    assert tight.verdict.grade == "inconclusive"  # −0.709 lies outside ±0.5, −0.25 inside
    direction = direction_claim(runs)
    assert direction.measure.estimate.value == pytest.approx(-0.25)
    assert direction.verdict.grade == "inconclusive" and "2 of 4 runs" in direction.measure.detail
    with pytest.raises(LlmdynError, match="tolerance"):
        timing_claims(runs, tolerance=0)


def _ends_run(first: float, last: float, shares=(0.1, 0.5)) -> RunSeries:
    """A run whose whole-trajectory LSS is ``first`` at step 0 and ``last`` at its end."""
    base = _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4])
    profiles = (_profile(shares[0], lss_ends=(first, first)), *base.profiles[1:3],
                _profile(shares[1], lss_ends=(last, last)))
    return RunSeries(**{**base.__dict__, "profiles": profiles})


def test_falls_claims_take_a_paired_t_interval_over_runs():
    runs = {f"r{i}": _ends_run(3.0, 3.0 - d) for i, d in enumerate([0.5, 1.0, 1.5, 1.0])}
    assert run_means(runs, lambda p: p.whole("lss", "final_norm"))[1]["r0"] == 2.5
    claims = {c.id: c for c in falls_claims(runs)}
    assert list(claims) == ["train_lss_falls", "train_ed_falls", "train_lss_falls_block_output",
                            "train_ed_falls_block_output"]
    lss = claims["train_lss_falls"].measure
    half = T3 * np.std([0.5, 1.0, 1.5, 1.0], ddof=1) / 2
    assert (lss.estimate.value, lss.estimate.hi) == pytest.approx((-1.0, -1.0 + half))
    assert lss.sampling_unit == "run" and claims["train_lss_falls"].verdict.grade == "holds"
    assert "r0: -0.50" in lss.detail
    # the expodistance does not move: zero width, no verdict
    assert claims["train_ed_falls"].verdict.grade == "no verdict"


def test_emergence_is_a_geometric_mean_ratio_over_runs():
    ratios = [4.0, 5.0, 2.0, 8.0]
    runs = {f"r{i}": _ends_run(2.0, 2.0, shares=(0.1, 0.1 * r)) for i, r in enumerate(ratios)}
    claim = emergence_claim(runs)
    logs = np.log(ratios)
    half = T3 * logs.std(ddof=1) / 2
    e = claim.measure.estimate
    assert (e.value, e.lo, e.hi) == pytest.approx(np.exp([logs.mean(), logs.mean() - half,
                                                          logs.mean() + half]))
    assert "n = 4 runs, t interval on the logs" in claim.result_text()
    assert claim.verdict.grade == "inconclusive"  # 4.23× [1.85, 9.65] straddles 2
    # a suite trained here stands in for Pythia's checkpoints; real revisions (a list) do not
    marked, = on_suite([claim], "default", len(runs))
    assert marked.stand_in == "a Pythia-style suite of 4 runs trained here ('default'), for " \
                              "Pythia"
    assert marked.verdict == claim.verdict
    assert on_suite([claim], ["EleutherAI/pythia-70m@step1000"], 1)[0].stand_in == ""


def _deep(neighbour_last: float) -> RunSeries:
    base = _run([0.1] * 4, [8, 7, 6, 4])
    return RunSeries(**{**base.__dict__, "profiles": (
        _profile(0.1, layers=4), _profile(0.1, layers=4), _profile(0.1, layers=4),
        _profile(0.1, layers=4, neighbour=neighbour_last))})


def test_locality_claims_use_deep_runs_one_number_each():
    runs = {"shallow": _run([0.1] * 4, [8, 7, 6, 4]), "a": _deep(0.2), "b": _deep(0.25),
            "c": _deep(0.3), "d": _deep(0.25)}
    end, grows = locality_claims(runs)
    assert end.measure.estimate.value == pytest.approx(2.5) and end.verdict.grade == "holds"
    assert end.measure.unit_ids == ("a", "b", "c", "d") and "shallow" not in end.measure.detail
    assert grows.measure.estimate.value == pytest.approx(1.5) and grows.verdict.grade == "holds"
    assert "a: 1.00 → 2.00, peak at step 4" in grows.measure.detail
    three = locality_claims({r: runs[r] for r in "abc"})  # t covers at n = 3 (coverage.csv)
    assert three[0].measure.estimate.n == 3 and three[0].measure.estimate.method == "t"
    two = locality_claims({r: runs[r] for r in "ab"})
    assert two[0].verdict.grade == "no verdict"  # 2 runs: below the smallest tested n
    assert locality_claims({"shallow": runs["shallow"]})[0].verdict.grade == "not run"


def test_verdicts_are_taken_over_the_runs_of_one_size_and_sizes_are_shown_apart():
    from dataclasses import replace

    from llmdyn.emergence.over_runs import one_size, size_trend

    shares = {"xs-seed0": [0.1, 0.2], "s-seed0": [0.1, 0.5], "m-seed0": [0.1, 0.9],
              **{f"s-seed{k}": [0.1, 0.4 + 0.05 * k] for k in range(1, 5)}}
    params = {"xs": 100, "s": 200, "m": 300}
    series = {run: replace(_run(v, [8, 4], steps=(0, 4)), params=params[run.split("-")[0]])
              for run, v in shares.items()}
    same = one_size(series)
    assert sorted(same) == [f"s-seed{k}" for k in range(5)]  # 5 seeds of s; xs and m apart
    ratios = [5.0, 4.5, 5.0, 5.5, 6.0]  # last/first share of s-seed0 … s-seed4
    over = emergence_claim(same).measure.estimate
    assert over.n == 5 and over.value == pytest.approx(np.exp(np.mean(np.log(ratios))))
    trend = size_trend(series)
    assert trend.verdict.grade == "for comparison"  # one run per size: no pooled verdict
    assert trend.measure.unit_ids == ("xs-seed0", "s-seed0", "m-seed0")  # by parameters
    assert trend.measure.samples[0] == pytest.approx((2.0, 5.0, 9.0))
    tied = {"a-seed0": series["xs-seed0"], "b-seed0": series["m-seed0"]}
    assert list(one_size(tied)) == ["b-seed0"]  # one seed each: the larger size
