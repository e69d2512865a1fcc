"""Known-answer tests for the phase-boundary estimates on synthetic curves."""

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore
from llmdyn.models.loading import load_model
from llmdyn.phases.changepoints import (
    entropy_spread_layer,
    hinge_changepoint,
    lss_peak_layer,
    norm_velocity_fit,
    norm_velocity_layer,
    step_changepoint,
)
from llmdyn.phases.measure import measure_boundary
from llmdyn.phases.split import (
    PhaseBoundary,
    agree,
    estimate_boundary,
    window_that_fits,
)

L = 30  # synthetic depth: curves have L + 1 points
DEPTH = np.arange(L + 1, dtype=np.float64)


def _prompts(curve, noise, n=40, seed=0):
    """n noisy copies of a mean curve: [prompt, layer+1]."""
    rng = np.random.default_rng(seed)
    return curve[None] + noise * rng.standard_normal((n, len(curve)))


def test_step_changepoint_exact():
    y = np.r_[np.zeros(12), np.full(9, 2.0)]
    cp = step_changepoint(y)
    assert cp.layer == 12
    assert (cp.before, cp.after, cp.gain) == pytest.approx((0.0, 2.0, 1.0))


def test_hinge_changepoint_exact_slopes():
    y = np.where(DEPTH < 17, 2.0 * DEPTH, 34.0 - 0.5 * (DEPTH - 17))  # up then down, knot 17
    cp = hinge_changepoint(y)
    assert cp.layer == 17
    assert (cp.before, cp.after, cp.gain) == pytest.approx((2.0, -0.5, 1.0))


def test_hinge_skips_nan_and_keeps_original_indices():
    y = np.where(DEPTH < 20, DEPTH, 20 + 5 * (DEPTH - 20))
    y[:5] = y[-5:] = np.nan  # windowed curves are NaN-padded at both ends
    assert hinge_changepoint(y).layer == 20


def test_straight_line_has_no_gain():
    assert hinge_changepoint(3 * DEPTH + 1).gain == pytest.approx(0.0, abs=1e-9)
    assert step_changepoint(np.ones(10)).gain == 0.0


def test_lss_peak_layer_finds_the_turn_under_noise():
    tent = np.where(DEPTH < 14, 2 + 0.15 * DEPTH, 2 + 0.15 * 14 - 0.1 * (DEPTH - 14))
    lss = _prompts(tent, noise=0.3)
    lss[:, :5] = lss[:, -5:] = np.nan  # as windowed_line_shape_score with window 11
    assert abs(lss_peak_layer(lss) - 14) <= 1
    assert lss_peak_layer(_prompts(tent, noise=0.0)) == 14


def test_entropy_spread_layer_finds_the_rise_and_ignores_the_last_layer():
    rng = np.random.default_rng(1)
    base = np.linspace(10, 2, L + 1)
    sd = np.where(DEPTH < 21, 0.05, 1.0)
    sd[-1] = 8.0  # the final layer's own jump (paper B §5.3)
    entropy = base + sd * rng.standard_normal((200, L + 1))
    assert entropy_spread_layer(entropy) == 21
    only_tail = np.where(DEPTH < L, 0.05, 8.0) * rng.standard_normal((200, L + 1))
    assert entropy_spread_layer(only_tail, exclude_last=0) > entropy_spread_layer(only_tail)


def test_norm_velocity_layer_finds_the_speed_up():
    mean = np.where(DEPTH < 18, 5 + 2 * DEPTH, 5 + 36 + 8 * (DEPTH - 18))
    norms = _prompts(mean, noise=1.0)
    assert norm_velocity_layer(norms) == 18
    fit = norm_velocity_fit(_prompts(mean, noise=0.0))
    assert (fit.layer, fit.before, fit.after, fit.gain) == pytest.approx((18, 2.0, 8.0, 1.0))


def test_short_curves_do_not_crash_and_bad_input_is_refused():
    assert hinge_changepoint(np.array([1.0, 2.0])).layer in (0, 1)
    assert step_changepoint(np.array([1.0, 2.0, 5.0, 6.0])).layer == 2
    with pytest.raises(LlmdynError, match="finite"):
        hinge_changepoint(np.full(5, np.nan))
    with pytest.raises(LlmdynError, match="1-D"):
        step_changepoint(np.zeros((2, 3)))
    with pytest.raises(LlmdynError, match="min_size"):
        step_changepoint(np.zeros(5), min_size=0)
    with pytest.raises(LlmdynError, match=r"\[prompt, layer\+1\]"):
        lss_peak_layer(np.zeros(5))


def test_phase_boundary_summaries_and_agreement():
    a = PhaseBoundary("m", n_layers=30, lss_peak=16, entropy_spread=20, norm_velocity=21)
    b = PhaseBoundary("n", n_layers=18, lss_peak=9, entropy_spread=9, norm_velocity=10)
    assert a.consensus == 20 and a.spread == 5
    assert a.relative["lss_peak"] == pytest.approx(16 / 30)
    assert agree(b, tolerance_layers=1) and not agree([a, b], tolerance_layers=4)
    assert agree([a, b], tolerance_layers=5)
    with pytest.raises(LlmdynError, match="outside"):
        PhaseBoundary("m", n_layers=10, lss_peak=11, entropy_spread=2, norm_velocity=3)
    with pytest.raises(LlmdynError, match="tolerance_layers"):
        agree(a, tolerance_layers=-1)


def test_estimate_boundary_on_one_synthetic_model():
    tent = np.where(DEPTH < 12, 2 + 0.2 * DEPTH, 4.4 - 0.15 * (DEPTH - 12))
    lss = _prompts(tent, 0.0)
    lss[:, :5] = lss[:, -5:] = np.nan
    norms = _prompts(np.where(DEPTH < 12, DEPTH, 12 + 4 * (DEPTH - 12)), 0.0)
    entropy = np.linspace(9, 1, L + 1) + np.where(DEPTH < 12, 0.01, 1.0) * \
        np.random.default_rng(2).standard_normal((100, L + 1))
    got = estimate_boundary("synthetic", norms=norms, windowed_lss=lss, entropy=entropy)
    assert got.layers == {"lss_peak": 12, "entropy_spread": 12, "norm_velocity": 12}
    assert agree(got, tolerance_layers=0)
    assert set(got.gain) == set(got.layers) and got.gain["norm_velocity"] == pytest.approx(1.0)
    with pytest.raises(LlmdynError, match="same layer"):
        estimate_boundary("x", norms=norms[:, :-1], windowed_lss=lss, entropy=entropy)


def test_measure_boundary_runs_on_a_tiny_model(tmp_path):
    model = load_model("tiny-llama", seed=0)
    store = ResultStore(model.model_id, root=tmp_path)
    prompts = ["The capital of France is", "One two three four", "A cat sat on a"]
    got = measure_boundary(model, prompts, store, window=3)
    assert got.model == "tiny-llama" and got.n_layers == model.n_layers
    assert all(0 <= v <= model.n_layers for v in got.layers.values())
    assert store.missing("token_states", {"token": -1, "dtype": "float32"}, prompts) == []


@pytest.mark.parametrize("window, n_layers, expected", [  # points x^0 … x^{L-1}: L of them
    (11, 30, 11), (11, 18, 11), (11, 3, 3), (11, 4, 3), (11, 10, 9), (11, 11, 11), (5, 18, 5)])
def test_fit_window(window, n_layers, expected):
    assert window_that_fits(window, n_layers) == expected


@pytest.mark.parametrize("window, n_layers, expected", [  # with x^L: L + 1 points
    (11, 4, 5), (11, 10, 11), (11, 9, 9), (11, 2, 3)])
def test_fit_window_with_the_last_layer(window, n_layers, expected):
    assert window_that_fits(window, n_layers, include_last=True) == expected


def test_first_fixation_by_criterion_is_clipped():
    b = PhaseBoundary("m", 30, lss_peak=0, entropy_spread=26, norm_velocity=22)
    assert b.first_fixation() == 22 and b.first_fixation("lss_peak") == 2  # Thought keeps l = 1
    assert b.first_fixation("entropy_spread") == 26 and b.first_fixation("thirds") == 20
    late = PhaseBoundary("m", 30, lss_peak=30, entropy_spread=30, norm_velocity=30)
    assert late.first_fixation() == 29  # L is apart: Fixation keeps layer 29
    assert late.first_fixation(include_last=True) == 30
    with pytest.raises(LlmdynError, match="criterion"):
        b.first_fixation("median")


def test_phase_splits_by_criterion_and_thirds():
    from llmdyn.phases.split import SPLITS, PhaseSplit

    b = PhaseBoundary("m", 30, lss_peak=16, entropy_spread=26, norm_velocity=22)
    assert b.split("lss_peak").thought == (1, 15) and b.split("lss_peak").fixation == (16, 29)
    assert b.split().fixation == (22, 29)  # consensus: the median; L = 30 apart
    assert b.split(include_last=True).fixation == (22, 30)
    assert b.split().label() == "consensus: Thought 1–21, Fixation 22–29, L = 30 apart"
    assert b.split(include_last=True).label() == "consensus: Thought 1–21, Fixation 22–30"
    third = b.split("thirds")  # Thought 1–10, Fixation 20–29, layers 11–19 and 30 in neither
    assert (third.thought, third.fixation) == ((1, 10), (20, 29))
    thought, fixation = third.masks()
    assert thought.sum() == 10 and fixation.sum() == 10 and not (thought | fixation)[[0, 30]].any()
    assert b.split("thirds", include_last=True).masks()[1].sum() == 11
    assert PhaseSplit.thirds(18).thought == (1, 6) and PhaseSplit.thirds(18).fixation == (12, 17)
    assert PhaseSplit.thirds(18, include_last=True).fixation == (12, 18)
    assert set(SPLITS) == {"consensus", "lss_peak", "entropy_spread", "norm_velocity", "thirds"}
    with pytest.raises(LlmdynError, match="how must be one of"):
        b.split("half")
    with pytest.raises(LlmdynError, match="L >= 3"):
        PhaseSplit.thirds(2)
    with pytest.raises(LlmdynError, match="boundary must lie in 2"):
        PhaseSplit.at(1, 30)


def test_lss_peak_of_a_one_window_model_is_its_only_window():
    from llmdyn.phases.changepoints import lss_peak_fit

    one = np.full((2, 4), np.nan)  # 3 blocks, window 3, x^L apart: one window, centred at 1
    one[:, 1] = [2.0, 3.0]
    got = lss_peak_fit(one)
    assert got.layer == 1 and got.gain == 0.0 and np.isnan(got.before)
