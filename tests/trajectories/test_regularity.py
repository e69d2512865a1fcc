"""Per-token regularity of trajectories: known answers, both last-point conventions, caching."""

import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.book.params import RegularityParams
from llmdyn.core.store import ResultStore
from llmdyn.models.loading import load_model
from llmdyn.trace import trajectory
from llmdyn.trajectories.regularity import (
    Regularity,
    alpha_profiles,
    per_prompt,
    regularity,
    trajectory_regularity,
)

PROMPTS = ["The capital is", "Hello there"]


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-llama", seed=0, dtype=torch.float64)


def test_geometric_straight_trajectory():
    """x^l = 2^l x^0: a straight line (LSS 1) with constant growth rate (ED 0)."""
    x0 = np.array([1.0, 2.0, 2.0])
    traj = np.stack([2.0**i * x0 for i in range(6)])[None]  # (tok=1, layer+1=6, d=3)
    r = trajectory_regularity(traj)
    assert r.lss[0] == pytest.approx(1) and r.expodistance[0] == pytest.approx(0, abs=1e-12)
    steps = 3 * 2.0 ** np.arange(5)  # ||x^l - x^(l-1)|| = 2^(l-1) ||x^0||, ||x^0|| = 3
    assert r.step_cv[0] == pytest.approx(steps.std() / steps.mean())


def test_equally_spaced_trajectory():
    """x^l = (l + 1) e_1: equal steps (step CV 0), straight, but decaying growth rate."""
    traj = np.zeros((1, 5, 2))
    traj[0, :, 0] = np.arange(1, 6)
    r = trajectory_regularity(traj)
    alpha = np.log(np.arange(2, 6) / np.arange(1, 5))
    assert r.lss[0] == pytest.approx(1) and r.step_cv[0] == pytest.approx(0, abs=1e-12)
    assert r.expodistance[0] == pytest.approx(alpha.var() / alpha.mean() ** 2)


def test_zigzag_has_large_lss():
    """Unit steps alternating between two orthogonal directions: L / ||sum|| = 4 / (2 sqrt 2)."""
    steps = np.array([[1.0, 0], [0, 1], [1, 0], [0, 1]])
    traj = np.concatenate([[[5.0, 5.0]], 5 + np.cumsum(steps, 0)])[None]  # (1, 5, 2)
    assert trajectory_regularity(traj).lss[0] == pytest.approx(4 / np.sqrt(8))


def test_trajectory_regularity_checks_shape():
    with pytest.raises(LlmdynError, match="tok, layer"):
        trajectory_regularity(np.ones((5, 3)))
    with pytest.raises(LlmdynError, match="Regularity"):
        Regularity(np.ones(3), np.ones(2), np.ones(3), np.ones((3, 4)))
    with pytest.raises(LlmdynError, match="alpha"):
        Regularity(np.ones(3), np.ones(3), np.ones(3), np.ones(3))


def test_regularity_on_a_model(tiny):
    block, normed = (regularity(tiny, PROMPTS, last_point=lp)
                     for lp in ("block_output", "final_norm"))
    traj = trajectory(tiny, PROMPTS[0], last_point="block_output")
    want = trajectory_regularity(traj.per_token())
    np.testing.assert_allclose(block[0].lss, want.lss)
    assert block[0].lss.shape == (len(traj.tokens),)
    states = traj.states.clone()
    with torch.no_grad():
        states[-1] = tiny.final_norm(states[-1])
    np.testing.assert_allclose(normed[0].expodistance,
                               trajectory_regularity(states.transpose(0, 1)).expodistance)
    assert not np.allclose(normed[0].expodistance, block[0].expodistance)
    default = regularity(tiny, PROMPTS[:1])  # the papers' end point unless asked otherwise
    np.testing.assert_array_equal(default[0].lss, normed[0].lss)


def test_regularity_caches_both_conventions(tiny, monkeypatch):
    store = ResultStore(tiny.model_id)
    first = regularity(tiny, PROMPTS, store=store, progress=False)

    def fail(*args, **kwargs):
        raise AssertionError("recomputed a cached prompt")

    monkeypatch.setattr("llmdyn.trajectories.regularity.trajectory", fail)
    again = regularity(tiny, PROMPTS, store=store, progress=False)
    np.testing.assert_array_equal(first[1].step_cv, again[1].step_cv)
    regularity(tiny, PROMPTS, store=store, last_point="block_output", progress=False)


def test_regularity_rejects_bad_arguments(tiny):
    with pytest.raises(LlmdynError, match="last_point"):
        regularity(tiny, PROMPTS, last_point="normed")
    with pytest.raises(LlmdynError, match="list of texts"):
        regularity(tiny, PROMPTS[0])


def test_expodistance_without_the_first_block():
    """Norms 1, 10, 20, 40: one big first jump, then doubling; ED > 0 but 0 without block 1."""
    traj = np.zeros((1, 4, 2))
    traj[0, :, 0] = [1.0, 10.0, 20.0, 40.0]
    r = trajectory_regularity(traj)
    np.testing.assert_allclose(r.alpha, [np.log([10.0, 2.0, 2.0])])
    assert r.expodistance[0] > 0.1 and r.expodistance_no_first[0] == pytest.approx(0, abs=1e-12)
    np.testing.assert_allclose(alpha_profiles([r, r]), np.log([[10.0, 2, 2], [10, 2, 2]]))
    short = trajectory_regularity(traj[:, :3])
    with pytest.raises(LlmdynError, match="depths"):
        alpha_profiles([r, short])


def test_per_prompt_known_answers():
    a = Regularity(np.array([10.0, 2.0, 4.0]), np.array([1.0, 3.0, 100.0]), np.zeros(3),
                   np.ones((3, 2)))
    b = Regularity(np.array([5.0]), np.array([2.0]), np.zeros(1), np.ones((1, 2)))
    np.testing.assert_allclose(per_prompt([a, b], "lss"), [16 / 3, 5])
    np.testing.assert_allclose(per_prompt([a, b], "expodistance", reduce="median"), [3, 2])
    out = per_prompt([a, b], "lss", skip_first=True)
    assert out[0] == 3 and np.isnan(out[1])
    with pytest.raises(LlmdynError, match="score"):
        per_prompt([a], "norm")
    with pytest.raises(LlmdynError, match="reduce"):
        per_prompt([a], "lss", reduce="max")
    from llmdyn.trajectories.regularity import series

    results = {"m": {"trained": {"final_norm": [a, b]}, "untrained": {"final_norm": [b]}}}
    got = series(results, ["m"], "lss")
    assert list(got) == ["trained", "untrained"]
    np.testing.assert_allclose(got["trained"][0], [16 / 3, 5])
    np.testing.assert_allclose(got["untrained"][0], [5])


def test_params_defaults_and_checks():
    p = RegularityParams()
    # None: the packaged models other than the book's model
    assert p.compare_models is None and p.compared() == ["gemma3-270m"] and p.n_per_task >= 1
    with pytest.raises(LlmdynError, match="notebook parameter 'compare_models'"):
        RegularityParams(compare_models="gemma3-270m")
    with pytest.raises(LlmdynError, match="n_per_task"):
        RegularityParams(n_per_task=0)
    with pytest.raises(LlmdynError, match="tasks"):
        RegularityParams(tasks=["squad"])
    with pytest.raises(LlmdynError, match="max_prompt_chars"):
        RegularityParams(max_prompt_chars=0)


def test_model_medians_draws_median_and_iqr():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from llmdyn import plots

    fig, ax = plt.subplots()
    values = {"trained": [np.array([1.0, 2, 3, 4, 5]), np.array([2.0, 2, 2])],
              "untrained": [np.array([5.0, 6, 7]), np.array([np.nan, 1.0, 3.0])]}
    plots.model_medians(values, ax, models=["a", "b"], ylabel="LSS", title="t")
    trained_line = ax.lines[0]
    np.testing.assert_allclose(trained_line.get_ydata(), [3, 2])
    assert trained_line.get_color() == "black" and ax.lines[-1].get_color() == "tab:blue"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    with pytest.raises(ValueError, match="2 models"):
        plots.model_medians({"trained": [np.ones(2)]}, ax, models=["a", "b"], ylabel="",
                            title="")
    plt.close(fig)
