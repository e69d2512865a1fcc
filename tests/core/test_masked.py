"""Windowed curves (NaN where no window fits) reduce without RuntimeWarnings (chapter 02)."""

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from llmdyn import LlmdynError, phases, plots  # noqa: E402
from llmdyn.core import masked
from llmdyn.phases import curves as claim_stats
from llmdyn.trajectories import geometry


def test_columns_match_numpy_on_valid_columns_and_stay_nan_elsewhere():
    v = np.array([[np.nan, 1.0, 2.0, np.nan], [np.nan, 3.0, np.nan, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean, std = masked.columns(v, "mean"), masked.columns(v, "std")
        p75 = masked.columns(v, "percentile", q=75)
    np.testing.assert_array_equal(np.isnan(mean), [True, False, False, True])
    assert mean[1:3] == pytest.approx([2.0, 2.0])  # known answers: (1+3)/2 and 2 alone
    assert std[1:3] == pytest.approx([1.0, 0.0])
    assert p75[1] == pytest.approx(2.5)
    assert masked.finite_mean(v) == pytest.approx(2.0)
    assert np.isnan(masked.finite_mean(np.full(3, np.nan)))
    with pytest.raises(LlmdynError, match="reduce"):
        masked.columns(v, "mode")


def test_chapter_02_path_emits_no_runtime_warning():
    # Random-walk trajectories: 5 prompts, 21 layers, window 11, so 5 NaN columns at the start
    # and 6 at the end (no window holds x^L).
    rng = np.random.default_rng(0)
    states = np.cumsum(rng.normal(size=(5, 21, 16)), axis=1) * np.linspace(1, 4, 21)[None, :, None]
    entropy = rng.uniform(1, 5, size=(5, 21))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        prof = geometry.depth_profile(states, 11)
        assert np.isnan(prof.lss[:, :5]).all() and np.isfinite(prof.lss[:, 5:15]).all()
        assert np.isnan(prof.lss[:, 15:]).all()
        geometry.residuals(prof.lss)
        b = phases.estimate_boundary("rw", norms=prof.norms, windowed_lss=prof.lss,
                                     entropy=entropy).first_fixation()
        claim_stats.phase_means_per_prompt(prof.lss, b)
        claim_stats.spread_ratio(prof.lss, b)
        claim_stats.peak_position(prof.lss)
        claim_stats.fraction_in_band(prof.lss, b, 2.0, 3.0)
        claim_stats.phase_means_per_prompt(prof.lss, 2)  # a Thought phase with no window
        fig, ax = plt.subplots()
        plots.twin_bands(prof.lss, prof.equidistance, ax, twin_label="twin")
        plots.band(np.arange(21), prof.lss, ax, label="x", center="median", spread="iqr")
        plots.residual_lines(np.arange(21), geometry.residuals(prof.lss), ax, label="±1 std")
        plt.close(fig)
