"""Known-answer tests for trajectory geometry along depth, and the cached per-prompt states."""

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore
from llmdyn.trace import trajectory
from llmdyn.trajectories.geometry import (
    DepthProfile,
    depth_profile,
    last_step_ratio,
    layer_mean,
    layer_range,
    median_over_tokens,
    residuals,
    step_lengths,
    summarize_prompts,
    token_states,
    trajectory_summary,
)
from tests.conftest import FRANCE

PROMPTS = [FRANCE, "United States of", "What month was I born in?"]


def test_token_states_match_the_trajectory_and_are_cached(tiny64, tmp_path):
    store = ResultStore(tiny64.model_id, root=tmp_path)
    got = token_states(tiny64, PROMPTS, store)
    L = tiny64.n_layers
    assert got.shape == (3, L + 1, tiny64.d_model) and got.dtype == np.float32
    raw = trajectory(tiny64, PROMPTS[1], last_point="block_output").states[:, -1]
    np.testing.assert_array_equal(got[1, :L], raw[:L].float().numpy())
    # The papers' end point by default: x^L after the final norm (HF's hidden_states[-1]);
    # the norm of one row here and of the whole prompt there: equal to float32 rounding.
    want = trajectory(tiny64, PROMPTS[1]).states[:, -1].float().numpy()
    np.testing.assert_allclose(got[1], want, rtol=1e-6, atol=1e-6)
    assert store.missing("token_states", {"token": -1, "dtype": "float32"}, PROMPTS) == []
    np.testing.assert_array_equal(token_states(tiny64, PROMPTS, store), got)  # from the cache
    # The other end point comes from the same cache entry, without a forward pass.
    block = token_states(tiny64, PROMPTS, store, last_point="block_output")
    np.testing.assert_array_equal(block[1], raw.float().numpy())
    np.testing.assert_array_equal(block[:, :L], got[:, :L])
    first = token_states(tiny64, PROMPTS[:1], token=0)  # no store
    np.testing.assert_array_equal(first[0], trajectory(tiny64, FRANCE).states[:, 0].float())


def test_token_states_refuses_bad_input(tiny64):
    with pytest.raises(LlmdynError, match="prompts"):
        token_states(tiny64, FRANCE)
    with pytest.raises(LlmdynError, match="outside"):
        token_states(tiny64, ["abc"], token=10)
    with pytest.raises(LlmdynError, match="last_point"):
        token_states(tiny64, ["abc"], last_point="after")


def test_depth_profile_of_straight_evenly_spaced_lines():
    direction = np.random.default_rng(0).standard_normal(8)
    steps = np.arange(13.0)[:, None] * direction  # (layer+1, d_model): x^l = l v
    states = np.stack([steps, 2 * steps])  # two prompts
    prof = depth_profile(states, window=5)
    assert isinstance(prof, DepthProfile) and prof.n_layers == 12 and prof.window == 5
    np.testing.assert_allclose(prof.norms[1], 2 * np.arange(13) * np.linalg.norm(direction))
    # windows centred at 2 … 9 fit in x^0 … x^11; none holds x^L = x^12 (read after the norm)
    assert np.isnan(prof.lss[:, :2]).all() and np.isnan(prof.lss[:, -3:]).all()
    np.testing.assert_allclose(prof.lss[:, 2:-3], 1.0)  # a straight line: LSS = 1
    np.testing.assert_allclose(prof.equidistance[:, 2:-3], 0.0, atol=1e-12)  # even steps: U = 0
    bent = states.copy()
    bent[:, -1] = 0.0  # a final norm that pulls x^L back to the origin: no window sees it
    np.testing.assert_array_equal(depth_profile(bent, window=5).lss, prof.lss)
    with_last = depth_profile(states, window=5, include_last=True)
    np.testing.assert_allclose(with_last.lss[:, 2:-2], 1.0)  # the window centred at 10 too
    assert depth_profile(bent, window=5, include_last=True).lss[0, 10] > 1.0
    with pytest.raises(LlmdynError, match="window 13 does not fit the 12 points"):
        depth_profile(states, window=13)
    with pytest.raises(LlmdynError, match="prompt, layer"):
        depth_profile(steps)


def test_residuals_and_layer_mean():
    v = np.array([[1.0, 2.0, np.nan], [3.0, 6.0, np.nan]])
    np.testing.assert_allclose(residuals(v)[:, :2], [[-1, -2], [1, 2]])
    assert np.isnan(residuals(v)[:, 2]).all()
    assert layer_mean(v) == pytest.approx(3.0)
    assert layer_mean(v, first=1, last=1) == pytest.approx(4.0)
    assert np.isnan(layer_mean(v, first=2))
    with pytest.raises(LlmdynError, match="first"):
        layer_mean(v, first=2, last=1)


def test_depth_window():
    assert layer_range((0.0, 0.5), 30) == (0, 15)
    assert layer_range((0.5, 1.0), 18) == (9, 18)
    assert layer_range((0.9, 1.0), 3) == (2, 3)  # at least one step
    assert layer_range((0.5, 1.0), 30, skip_last=True) == (15, 29)
    assert layer_range((0.9, 1.0), 3, skip_last=True) == (1, 2)
    with pytest.raises(LlmdynError, match="fractions"):
        layer_range((0.6, 0.4), 30)


def test_step_lengths_and_last_step_ratio():
    x = np.zeros((5, 2))
    x[:, 0] = [0, 1, 2, 3, 7]  # steps 1, 1, 1, 4
    np.testing.assert_allclose(step_lengths(x), [1, 1, 1, 4])
    assert last_step_ratio(x) == pytest.approx(4.0)
    assert last_step_ratio(np.stack([x, 2 * x])).shape == (2,)
    with pytest.raises(LlmdynError, match="3 points"):
        last_step_ratio(x[:2])


def test_trajectory_summary_known_answers():
    v = np.zeros(4)
    v[0] = 1.0
    line = (1 + np.arange(7.0))[:, None] * v  # (layer+1, d_model): x^l = (l + 1) e_0
    zigzag = line.copy()
    zigzag[3, 1] = 1.0  # one point off the line
    s = trajectory_summary(np.stack([line, zigzag]), window=(1, 5))
    np.testing.assert_allclose(s.growth, [6 / 2, 6 / 2])
    assert s.window_lss[0] == pytest.approx(1.0) and s.window_lss[1] > 1.0
    assert s.full_lss[0] == pytest.approx(1.0)
    np.testing.assert_allclose(s.last_step[0], 1.0)
    with pytest.raises(LlmdynError, match="window"):
        trajectory_summary(np.stack([line]), window=(5, 5))


def test_summarize_prompts_matches_two_traces_and_medians_are_per_prompt(tiny64):
    L = tiny64.n_layers
    got = summarize_prompts(tiny64, PROMPTS[:2], (1, L), drop_first=1)
    for prompt, s in zip(PROMPTS[:2], got, strict=True):  # one pass gives both ends of the step
        normed = trajectory(tiny64, prompt).per_token()[1:].double().numpy()
        raw = trajectory(tiny64, prompt, last_point="block_output").per_token()[1:]
        want = trajectory_summary(normed, (1, L))
        for field in want._fields:
            np.testing.assert_array_equal(getattr(s.summary, field), getattr(want, field))
        np.testing.assert_array_equal(s.block_last, last_step_ratio(raw.double().numpy()))
        assert len(s.tokens) == len(normed)
    m = median_over_tokens(got)
    np.testing.assert_array_equal(m.summary.growth, [np.median(s.summary.growth) for s in got])
    np.testing.assert_array_equal(m.block_last, [np.median(s.block_last) for s in got])
    assert list(m.n_tokens) == [len(s.tokens) for s in got]
    with pytest.raises(LlmdynError, match="drop_first=99 leaves fewer than 2"):
        summarize_prompts(tiny64, [PROMPTS[1]], (1, L), drop_first=99)
    with pytest.raises(LlmdynError, match="summaries is empty"):
        median_over_tokens([])


def test_seed_mean_averages_prompt_by_prompt():
    from llmdyn.trajectories.geometry import DepthProfile, seed_mean

    ones = np.ones((2, 5))
    a = DepthProfile(ones, np.where([0, 1, 1, 1, 0], 2.0, np.nan) * ones, ones, 3)
    b = DepthProfile(3 * ones, np.where([0, 1, 1, 1, 0], 4.0, np.nan) * ones, ones, 3)
    m = seed_mean([a, b])
    assert (m.norms == 2).all() and np.isnan(m.lss[:, 0]).all() and (m.lss[:, 1:4] == 3).all()
    with pytest.raises(LlmdynError, match="seed_mean"):
        seed_mean([a, DepthProfile(ones[:1], ones[:1], ones[:1], 3)])
