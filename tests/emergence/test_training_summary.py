import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.emergence.profiles import CheckpointProfile, RunSeries, spread_steps
from llmdyn.emergence.suite_summary import (
    adjacent_over_distant,
    direction_claim,
    emergence_timing,
    endpoints,
    ends_table,
    locality_claims,
    locality_table,
    reference_text,
    seed_table,
    suite_table,
    timing_claims,
    timing_lag,
    whole_endpoints,
)


def _profile(share, n_prompts: int = 3, layers: int = 2, neighbour: float | None = None,
             lss_ends=(2.0, 3.0)) -> CheckpointProfile:
    """A profile whose every pair has diagonal share ``share`` (``neighbour`` for |l − l′| = 1).

    ``share`` may be ``[prompt]`` to give the prompts different values.
    """
    share = np.broadcast_to(np.asarray(share, float), (n_prompts,))
    gap = np.abs(np.subtract.outer(np.arange(layers), np.arange(layers)))
    diagonal_share_map = np.repeat(share[:, None, None], layers, 1).repeat(layers, 2)
    if neighbour is not None:
        diagonal_share_map[:, gap == 1] = neighbour
    ones = np.ones(n_prompts)
    return CheckpointProfile(
        miscoupling=np.sqrt(1 - share), diagonal_share=share.copy(),
        diagonal_share_map=diagonal_share_map,
        miscoupling_map=np.sqrt(1 - diagonal_share_map.mean(0)), lss=2 * ones,
        expodistance=ones, norms=np.ones((n_prompts, layers + 1)),
        window_lss=np.ones((n_prompts, layers - 1)), window_ed=np.ones((n_prompts, layers - 1)),
        centres=np.arange(1, layers), lss_by_end=np.tile(lss_ends, (n_prompts, 1)),
        expodistance_by_end=np.ones((n_prompts, 2)))


def _run(shares, losses, steps=(0, 1, 2, 4), **kw) -> RunSeries:
    return RunSeries(steps=np.array(steps), tokens=np.array(steps, float) * 10,
                     heldout_loss=np.array(losses, float), train_loss=np.array(losses, float),
                     params=1000, profiles=tuple(_profile(s, **kw) for s in shares))


def test_timing_known_answers():
    # coupling covers half its rise at step 1; the loss half its drop at step 2
    series = {"a": _run([0.1, 0.3, 0.4, 0.5], [8, 7, 6, 4]), "b": _run([0.1, 0.2, 0.3, 0.4],
                                                                       [8, 5, 4, 4])}
    t = emergence_timing(series)
    assert t.coupling_step[0] == pytest.approx(1.0)
    assert t.loss_step[0] == pytest.approx(2.0)
    assert t.log2_ratio[0] == pytest.approx(1.0)
    assert t.rho.tolist() == pytest.approx([1.0, 1.0])
    assert "a: 1.00" in t.detail("rho") and "| a | 1.0 | 2.0 | 0.50 |" in t.markdown()


def test_endpoints_average_runs_per_prompt():
    series = {"a": _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4]), "b": _run([0.3, 0.2, 0.3, 0.7],
                                                                       [8, 7, 6, 4])}
    first, last = endpoints(series)
    np.testing.assert_allclose(first["diagonal_share"], [0.2] * 3)
    np.testing.assert_allclose(last["diagonal_share"], [0.6] * 3)
    series["c"] = RunSeries(**{**series["a"].__dict__,
                               "profiles": tuple(_profile(0.5, n_prompts=2) for _ in range(4))})
    with pytest.raises(LlmdynError, match="different prompts"):
        endpoints(series)


def test_timing_needs_three_checkpoints():
    with pytest.raises(LlmdynError, match="at least 3 checkpoints"):
        emergence_timing({"a": _run([0.1, 0.2], [8, 7], steps=(0, 1))})


def test_suite_table_without_run_files():
    table = suite_table({"a": _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4])})
    assert "| a | 2 | ? | 0.00M | 40 |" in table and "| 4.000 | 4.000 |" in table


def test_spread_steps_is_log_spaced():
    assert spread_steps([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512], 4) == [0, 8, 64, 512]
    assert spread_steps([0, 5], 4) == [0, 5]


def test_timing_lag_counts_checkpoint_intervals():
    # coupling half-way at index 1 (step 1); the loss (progress 0, .25, .75, 1) at index 1.5
    share = np.array([[0.1, 0.3, 0.4, 0.5]] * 3)  # (prompt, ckpt)
    assert timing_lag(share, np.array([8.0, 7.5, 6.5, 6.0])) == pytest.approx(1 - 1.5)
    assert timing_lag(share, np.array([8.0, 6.0, 5.0, 4.0])) == pytest.approx(0.0)


def test_timing_claims_judge_each_run_and_count():
    rng = np.random.default_rng(0)
    n = 120  # the lag is a statistic of no listed kind: its bootstrap covers at n = 120
    prompts = [0.5 + 0.01 * rng.normal(size=n) for _ in range(4)]  # last share per prompt
    early = [np.full(n, 0.1), np.full(n, 0.45), np.full(n, 0.48), prompts[0]]
    runs = {"lead": _run(early, [8, 7.9, 7.8, 4], n_prompts=n),  # coupling 2.4 intervals first
            "same": _run([0.1, 0.3, 0.4, 0.5], [8, 6, 5, 4], n_prompts=n)}  # half-way at index 1
    claims = {c.id: c for c in timing_claims(runs, tolerance=1)}
    lead, same = claims["train_timing_lead_tol1"], claims["train_timing_same_tol1"]
    assert same.verdict.grade == "holds" and same.measure.estimate.value == pytest.approx(0)
    assert lead.verdict.grade == "does not hold" and lead.measure.estimate.hi < -1
    assert "coupling first (interval below 0)" in lead.measure.detail
    share = claims["train_timing_runs_tol1"].measure
    assert share.estimate.value == 0.5 and "1 of 2 runs hold" in share.detail
    # 2 runs are below the smallest n whose coverage was tested (4): shown, not judged
    assert not share.estimate.has_interval and share.missing == "no verdict"
    half = {c.id for c in timing_claims(runs, tolerance=0.5)}
    assert "train_timing_lead_tol0_5" in half and "train_timing_runs_tol0_5" in half
    direction = direction_claim(runs)
    assert "1 of 2 runs: coupling first" in direction.measure.detail
    lags = [claims[f"train_timing_{r}_tol1"].measure.estimate.value for r in ("lead", "same")]
    assert direction.measure.estimate.value == pytest.approx(np.mean(lags))
    assert direction.verdict.grade == "no verdict"  # a mean over 2 runs: not judged
    with pytest.raises(LlmdynError, match="tolerance"):
        timing_claims(runs, tolerance=0)


def test_adjacent_over_distant_known_answer():
    M = np.full((2, 4, 4), 0.1)
    M[:, [0, 1, 2, 1, 2, 3], [1, 2, 3, 0, 1, 2]] = 0.3  # neighbours three times the rest
    np.testing.assert_allclose(adjacent_over_distant(M), [3.0, 3.0])
    with pytest.raises(LlmdynError, match=">= 3 blocks"):
        adjacent_over_distant(np.ones((2, 2, 2)))


def test_locality_claims_use_deep_runs_only():
    runs = {"shallow": _run([0.1] * 4, [8, 7, 6, 4]),  # 4 prompts: the smallest judged n
            "deep": RunSeries(**{**_run([0.1] * 4, [8, 7, 6, 4]).__dict__, "profiles": (
                _profile(0.1, layers=4, n_prompts=4), _profile(0.1, layers=4, n_prompts=4),
                _profile(0.1, layers=4, n_prompts=4),
                _profile(0.1, layers=4, neighbour=0.2, n_prompts=4))})}
    end, grows = locality_claims(runs)
    assert end.measure.estimate.value == pytest.approx(2.0) and end.verdict.grade == "holds"
    # The ratio is 1 at steps 0-2 and 2 at step 4: last − first = 1 (the rise is met), and the
    # second half (steps 2, 4) rises by 1 per doubling, so it holds.
    assert grows.measure.estimate.value == pytest.approx(1.0) and "deep (>= 3" in \
        grows.measure.detail and "shallow" not in grows.measure.detail
    assert "last − first 1.00" in grows.measure.detail and grows.verdict.grade == "holds"
    assert locality_claims({"shallow": runs["shallow"]})[0].verdict.grade == "not run"


def test_whole_endpoints_pick_the_end():
    runs = {"a": _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4])}
    first, last = whole_endpoints(runs, "lss", "block_output")
    np.testing.assert_allclose(first, [3.0] * 3)
    np.testing.assert_allclose(whole_endpoints(runs, "lss", "final_norm")[1], [2.0] * 3)
    with pytest.raises(LlmdynError, match="score must be"):
        whole_endpoints(runs, "norms", "final_norm")


def test_ends_and_locality_tables():
    runs = {"a": _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4], lss_ends=(2.0, 3.0))}
    assert "| a | 2 | 2.00 → 2.00 | 3.00 → 3.00 | 1.00 → 1.00 | 1.00 → 1.00 |" in ends_table(runs)
    assert locality_table(runs).startswith("No run has 3")
    runs["d"] = RunSeries(**{**runs["a"].__dict__, "profiles": tuple(
        _profile(0.1, layers=3, neighbour=n) for n in (0.1, 0.1, 0.2, 0.3))})
    table = locality_table(runs).splitlines()
    assert table[0] == "| run | blocks | step 0 | step 2 | step 4 |"
    assert table[2] == "| d | 3 | 1.00 | 2.00 | 3.00 |"


def test_seed_table_puts_the_seeds_of_one_size_side_by_side():
    a = _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4])
    series = {"s-seed0": a, "s-seed1": _run([0.1, 0.3, 0.3, 0.4], [8, 7, 5, 4]), "m-seed0": a}
    table = seed_table(series)
    assert table.startswith("| size s | s-seed0 | s-seed1 |") and "m-seed0" not in table
    assert "| coupling peaks at step | 4 (0.500) | 4 (0.400) |" in table
    assert "within one network" in table
    assert seed_table({"m-seed0": a}) == "No size was trained with more than one seed."


def test_reference_text_places_the_half_way_and_final_loss():
    series = {"a": _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4])}  # half-way loss (8 + 4) / 2 = 6
    text = reference_text(series, {"unigram": 6.5, "bigram": 5.0})
    assert "unigram 6.50, bigram 5.00 nats" in text
    assert "| a | 8.00 | 6.00 (between the two) | 4.00 | below the bigram reference |" in text
    assert "No reference losses" in reference_text(series, None)


def test_reference_lines_are_drawn_and_labelled():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from llmdyn.plots.training import reference_lines

    fig, ax = plt.subplots()
    reference_lines(ax, {"unigram": 6.7, "bigram": 5.2})
    assert [line.get_ydata()[0] for line in ax.get_lines()] == [6.7, 5.2]
    assert ax.get_legend_handles_labels()[1] == ["unigram reference (6.70)",
                                                 "bigram reference (5.20)"]
    reference_lines(ax, None)  # checkpoints given by path: nothing more drawn
    assert len(ax.get_lines()) == 2
    plt.close(fig)
