"""Per-phase statistics of [prompt, layer+1] curves, with known answers."""

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.phases.curves import (
    fraction_in_band,
    peak_position,
    phase_means_per_prompt,
    spread_ratio,
)
from llmdyn.phases.split import PhaseSplit


def test_phase_means_per_prompt_ignore_nan():
    v = np.array([[1.0, 3.0, 10.0, np.nan], [2.0, 2.0, 4.0, 6.0]])  # [prompt, layer+1], L = 3
    thought, fixation = phase_means_per_prompt(v, 2)  # Thought: layer 1 (0 is in neither)
    assert thought.tolist() == [3.0, 2.0] and fixation.tolist() == [10.0, 4.0]  # L = 3 apart
    with_last = PhaseSplit.at(2, 3, include_last=True)  # Fixation 2 … 3
    assert phase_means_per_prompt(v, with_last)[1].tolist() == [10.0, 5.0]


def test_spread_ratio_absolute_and_relative():
    v = np.array([[5.0, 1.0, 0.0, 10.0], [1.0, 1.0, 2.0, 30.0]])
    assert spread_ratio(v, 2) == 0.0  # no spread in Thought (layer 1; layer 0 is in neither)
    v = np.array([[9.0, 1.0, 2.0, 2.0], [9.0, 3.0, 6.0, 6.0]])  # std per layer 0, 1, 2, 2
    assert spread_ratio(v, 2) == pytest.approx(0.5)  # mean 9, 2, 4, 4
    assert spread_ratio(v, 2, relative=True) == pytest.approx(1.0)


def test_peak_position_and_band():
    v = np.array([[0.0, 1.0, 5.0, 2.0, 1.0], [0.0, 1.0, 3.0, 2.0, np.nan]])
    assert peak_position(v) == 0.5
    assert fraction_in_band(v, 2, 1.5, 4.5) == 1.0  # Fixation 2, 3: means 4, 2 both in
    with_last = PhaseSplit.at(2, 4, include_last=True)  # layer 4's mean 1 is out
    assert fraction_in_band(v, with_last, 1.5, 4.5) == pytest.approx(2 / 3)


def test_bad_shapes_and_boundaries():
    with pytest.raises(LlmdynError, match="boundary"):
        phase_means_per_prompt(np.ones((2, 4)), 4)
    with pytest.raises(LlmdynError, match="boundary must lie in 2 … L - 1"):
        phase_means_per_prompt(np.ones((2, 4)), 3)  # L = 3 is apart: Fixation would be empty
    with pytest.raises(LlmdynError, match="prompt, layer"):
        spread_ratio(np.ones(4), 1)


def test_rising_fraction_and_velocity_change():
    from llmdyn.phases.curves import rising_fraction, velocity_change

    assert rising_fraction(np.array([[0.0, 1.0, 0.5, 2.0, 3.0]])) == 0.75
    hinge = np.concatenate([np.arange(6.0), 5 + 3 * np.arange(1, 7.0)])[None]  # slope 1 then 3
    assert velocity_change(hinge) == pytest.approx(2.0)


def test_velocity_gain_is_judged_against_a_reference():
    from llmdyn.phases.curves import relative_velocity_change, velocity_gain_over

    hinge = np.concatenate([np.arange(6.0), 5 + 3 * np.arange(1, 7.0)])[None]  # slope 1 then 3
    line = 2.0 * np.arange(12.0)[None]
    # known answer: change 2, mean slope (5 + 18) / 11 = 23/11, so 2 · 11/23
    assert relative_velocity_change(hinge, exclude_last=0) == pytest.approx(22 / 23)
    # by default the last point (the final norm's output under the papers' end point) is left
    # out of the fit and of the mean slope: a drop there changes nothing
    dropped = np.append(hinge[0], 1.0)[None]
    assert relative_velocity_change(dropped) == pytest.approx(22 / 23)
    assert relative_velocity_change(line) == pytest.approx(0.0, abs=1e-9)
    assert velocity_gain_over(dropped, np.append(line[0], 0.0)[None]) == pytest.approx(22 / 23)
    assert velocity_gain_over(hinge, 10 * hinge) == pytest.approx(0.0, abs=1e-9)  # same shape
    assert np.isnan(relative_velocity_change(-line))  # falling norms: nothing to compare


def test_most_aligned_position():
    from llmdyn.phases.curves import most_aligned_position

    r = np.ones((2, 4, 4))
    r[:, 2, :] = 0.1  # block 3 of 4 is the most aligned with the others
    assert most_aligned_position(r) == 0.75
    with pytest.raises(LlmdynError, match="prompt, layer, layer"):
        most_aligned_position(np.ones((4, 4)))


def test_inverse_depth_r2_gain_matches_the_ols_fit():
    from llmdyn.coupling.spectra import inverse_depth_r2_gain, inverse_top_fit
    from llmdyn.phases.curves import profile_correlation

    rng = np.random.default_rng(0)
    exact = 1.0 / (1.0 + 0.5 * np.arange(1, 7.0))[None, :, None].repeat(2, 0)  # 1/σ₁ linear in l
    noisy = rng.uniform(0.5, 2.0, (2, 6, 1))
    assert inverse_depth_r2_gain(exact, noisy) == pytest.approx(1 - inverse_top_fit(noisy).r2)
    a = np.array([[0.0, 1, 2], [0.0, 1, 2]])
    assert profile_correlation(a, 2 * a + 1) == pytest.approx(1.0)


def test_per_prompt_r2_and_correlations_are_one_number_per_prompt():
    from llmdyn.coupling.spectra import inverse_top_fit, prompt_inverse_r2
    from llmdyn.phases.curves import row_correlations

    rng = np.random.default_rng(0)
    exact = 1.0 / (1.0 + 0.5 * np.arange(1, 7.0))[None, :, None]  # 1/σ₁ linear in l: R² = 1
    noisy = rng.uniform(0.5, 2.0, (2, 6, 1))
    got = prompt_inverse_r2(np.concatenate([exact, noisy]))
    assert got.shape == (3,) and got[0] == pytest.approx(1.0)
    assert got[1] == pytest.approx(inverse_top_fit(noisy[:1]).r2)
    a = np.array([[0.0, 1, 2], [0.0, 1, 3], [1.0, 1, 1]])
    r = row_correlations(a, np.array([[1.0, 3, 5], [3.0, 1, 0], [0.0, 1, 2]]))
    assert r[0] == pytest.approx(1.0) and r[1] == pytest.approx(np.corrcoef(a[1], [3, 1, 0])[0, 1])
    assert np.isnan(r[2])  # a flat profile has no correlation
    with pytest.raises(LlmdynError, match="one shape"):
        row_correlations(a, a[:2])


def test_spread_ratio_without_fixation_spread_is_not_an_error():
    same = np.ones((3, 5))  # every prompt identical: no spread anywhere
    assert np.isnan(spread_ratio(same, 2))
    v = same.copy()
    v[0, 1] = 2.0  # spread in Thought only
    assert spread_ratio(v, 2) == float("inf")


def test_phase_deviations_known_answer():
    from llmdyn.phases.curves import phase_deviations
    v = np.array([[9.0, 1.0, 2.0, 2.0], [9.0, 3.0, 6.0, 6.0]])  # mean per layer 9, 2, 4, 4
    thought, fixation = phase_deviations(v, 2)  # Thought: layer 1; Fixation: layers 2, 3
    assert thought.tolist() == [1.0, 1.0] and fixation.tolist() == [2.0, 2.0]
    thought, fixation = phase_deviations(v, 2, relative=True)  # /2 in Thought, /4 in Fixation
    assert thought.tolist() == [0.5, 0.5] and fixation.tolist() == [0.5, 0.5]
    with_nan = np.array([[0.0, 1.0, np.nan, 2.0], [0.0, 3.0, np.nan, 6.0]])
    with_last = PhaseSplit.at(2, 3, include_last=True)  # Fixation 2, 3: the NaN layer ignored
    assert phase_deviations(with_nan, with_last)[1].tolist() == [2.0, 2.0]
    assert np.isnan(phase_deviations(with_nan, 2)[1]).all()  # Fixation is layer 2 alone


def test_per_prompt_values_applies_the_statistic_to_each_prompt():
    from llmdyn.phases.curves import per_prompt_values, rising_fraction
    v = np.array([[0.0, 1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 0.5, 2.0, 3.0]])
    assert per_prompt_values(rising_fraction, v).tolist() == [1.0, 0.75]
    assert per_prompt_values(peak_position, v).tolist() == [1.0, 1.0]
    diff = per_prompt_values(lambda a, b: a.sum() - b.sum(), v, 2 * v)
    assert diff.tolist() == [-10.0, -6.5]
    with pytest.raises(LlmdynError, match="same prompts"):
        per_prompt_values(rising_fraction, v, v[:1])


def test_relative_velocity_changes_share_one_scale_per_model():
    from llmdyn.phases.curves import relative_velocity_changes

    hinge = np.concatenate([np.arange(6.0), 5 + 3 * np.arange(1, 7.0)])  # slope 1 then 3
    flat = np.full(12, 4.0)  # a prompt whose norm does not grow: change 0, not undefined
    norms = np.stack([hinge, flat])  # mean curve: slope 0.5 then 1.5; mean slope 23/22
    assert relative_velocity_changes(norms, exclude_last=0) == pytest.approx([44 / 23, 0.0])
    assert np.isnan(relative_velocity_changes(-norms, exclude_last=0)).all()
