import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.emergence.profiles import CheckpointProfile, RunSeries, spread_steps
from llmdyn.emergence.suite_summary import (
    adjacent_over_distant,
    emergence_timing,
    ends_table,
    locality_table,
    reference_text,
    seed_table,
    suite_table,
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
    assert t.share_step[0] == pytest.approx(1.0)
    assert t.loss_step[0] == pytest.approx(2.0)
    assert t.log2_ratio[0] == pytest.approx(1.0)
    assert t.rho.tolist() == pytest.approx([1.0, 1.0])
    assert "a: 1.00" in t.detail("rho") and "| a | 1.0 | 2.0 | 0.50 |" in t.markdown()


def test_timing_needs_three_checkpoints():
    with pytest.raises(LlmdynError, match="at least 3 checkpoints"):
        emergence_timing({"a": _run([0.1, 0.2], [8, 7], steps=(0, 1))})


def test_suite_table_without_run_files():
    table = suite_table({"a": _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4])})
    assert "| a | 2 | ? | 0.00M | 40 |" in table and "| 4.000 | 4.000 |" in table


def test_spread_steps_is_log_spaced():
    assert spread_steps([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512], 4) == [0, 8, 64, 512]
    assert spread_steps([0, 5], 4) == [0, 5]


def test_adjacent_over_distant_known_answer():
    M = np.full((2, 4, 4), 0.1)
    M[:, [0, 1, 2, 1, 2, 3], [1, 2, 3, 0, 1, 2]] = 0.3  # neighbours three times the rest
    np.testing.assert_allclose(adjacent_over_distant(M), [3.0, 3.0])
    with pytest.raises(LlmdynError, match=">= 3 blocks"):
        adjacent_over_distant(np.ones((2, 2, 2)))


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
    # s-seed0: 0.2, 0.3, 0.5 at log2 steps 0, 1, 2 slope 0.15; both half-way at index 2: lag 0.
    # s-seed1: coupling half-way (0.25) at index 0.75, the loss (6) at 1.5: lag −0.75.
    assert "| late slope per doubling (steps ≥ last / 4) | 0.1500 | 0.0500 |" in table
    assert "| lag, checkpoint intervals | 0.00 | -0.75 |" in table
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
