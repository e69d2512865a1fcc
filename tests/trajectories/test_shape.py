"""Known answers for trajectory shape: LSS, equidistance, expodistance, windows (float64)."""

import math

import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.trajectories.shape import (
    equidistance,
    expodistance,
    layerwise_alpha,
    line_shape_score,
    norms,
    windowed_equidistance,
    windowed_line_shape_score,
)

# Float64 round-off on O(1) quantities built from a handful of operations stays ~1e-15; 1e-12
# leaves a wide margin while still catching any formula error.
TIGHT = 1e-12

# ----------------------------------------------------------------------------- trajectories


def test_lss_straight_line_is_one():
    t = np.array([0.0, 0.5, 1.7, 3.0, 10.0])[:, None] * np.array([1.0, -2.0, 0.5])  # [5, 3]
    assert line_shape_score(t + 1.0) == pytest.approx(1.0, abs=TIGHT)


def test_lss_right_angle_and_zigzag():
    # two orthogonal steps: x~^2 - x~^0 = e1 + e2, LSS = 2 / sqrt 2
    t = np.array([[0.0, 0.0], [3.0, 0.0], [3.0, 0.5]])
    assert line_shape_score(t) == pytest.approx(math.sqrt(2), abs=TIGHT)
    # planar zig-zag of 4 steps alternating at +-45 degrees: unit steps sum to (4/sqrt2, 0)
    z = np.array([[0, 0], [1, 1], [2, 0], [3, 1], [4, 0]], dtype=float)
    assert line_shape_score(z) == pytest.approx(math.sqrt(2), abs=TIGHT)
    # batch axes are kept, and LSS does not change with the trajectory's scale
    assert line_shape_score(np.stack([t, 2 * t])).tolist() == pytest.approx([math.sqrt(2)] * 2,
                                                                           abs=TIGHT)


def test_lss_zero_step_raises():
    with pytest.raises(LlmdynError, match="traj: has a zero-length step"):
        line_shape_score(np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]]))


def test_equidistance_known():
    even = np.arange(6.0)[:, None] * np.array([1.0, 2.0, 2.0])  # steps all of length 3
    assert equidistance(even) == pytest.approx(0.0, abs=TIGHT)
    # steps of length 1 and 3: mean 2, population std 1 -> 0.5
    x = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 3.0]])
    assert equidistance(x) == pytest.approx(0.5, abs=TIGHT)


def test_expodistance_geometric_growth():
    c, x0 = 1.3, np.array([0.3, -1.0, 2.0])
    traj = c ** np.arange(7.0)[:, None] * x0  # x^l = c^l x^0, [7, 3]
    alpha = layerwise_alpha(traj)
    assert alpha.shape == (6,)
    assert np.allclose(alpha, math.log(c), atol=TIGHT)
    assert expodistance(traj) == pytest.approx(0.0, abs=TIGHT)
    assert np.allclose(norms(traj), c ** np.arange(7.0) * np.linalg.norm(x0), rtol=TIGHT)


def test_expodistance_known():
    # norms 1, e, e^3: alpha = (1, 2), var 0.25, mean 1.5 -> ED = 1/9
    traj = np.array([[1.0, 0.0], [0.0, math.e], [math.e**3, 0.0]])
    assert expodistance(traj) == pytest.approx(1 / 9, abs=TIGHT)


def test_windowed_padding_and_centre():
    rng = np.random.default_rng(0)
    traj = rng.standard_normal((2, 9, 4))  # [tok, layer+1, d_model]
    w = 5
    out = windowed_line_shape_score(traj, window=w)
    assert out.shape == (2, 9)
    assert np.isnan(out[:, :2]).all() and np.isnan(out[:, -2:]).all()
    for c in range(2, 7):
        # same arithmetic on the same slice, so agreement is to round-off
        assert np.allclose(out[:, c], line_shape_score(traj[:, c - 2 : c + 3]), rtol=TIGHT)
    eq = windowed_equidistance(traj, window=9)
    assert np.isnan(eq[:, :4]).all() and np.isnan(eq[:, 5:]).all()
    assert np.allclose(eq[:, 4], equidistance(traj), rtol=TIGHT)


def test_trajectory_accepts_torch():
    t = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    assert line_shape_score(t) == pytest.approx(math.sqrt(2), abs=TIGHT)


@pytest.mark.parametrize("window", [4, 13, 1])
def test_window_errors(window):
    with pytest.raises(LlmdynError, match=rf"window: got {window}; expected an odd integer"):
        windowed_line_shape_score(np.random.default_rng(0).standard_normal((11, 3)), window)
