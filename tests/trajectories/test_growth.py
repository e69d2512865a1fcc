"""The bounded expodistance Var α / Avg α², with known answers."""

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.trajectories.growth import per_prompt_variance_share, variance_share
from llmdyn.trajectories.regularity import trajectory_regularity


def test_variance_share_is_the_bounded_expodistance():
    """Norms 1, 10, then × e^0.1, e^-0.1, e^0.3: α_2… = 0.1, -0.1, 0.3 (mean α² 11/300)."""
    traj = np.zeros((1, 5, 2))
    traj[0, 0, 0] = 1.0
    traj[0, 1:, 0] = 10.0 * np.exp(np.cumsum([0.0, 0.1, -0.1, 0.3]))
    r = trajectory_regularity(traj)
    share = variance_share(r.alpha)
    assert share[0] == pytest.approx(np.var([0.1, -0.1, 0.3]) / (0.11 / 3))
    ed = r.expodistance_no_first[0]
    assert share[0] == pytest.approx(ed / (1 + ed))
    assert variance_share(r.alpha, skip_first_block=False)[0] == pytest.approx(
        r.expodistance[0] / (1 + r.expodistance[0]))
    assert per_prompt_variance_share([r, r]).tolist() == pytest.approx([share[0]] * 2)


def test_variance_share_is_stable_where_the_norm_does_not_grow():
    flat = np.zeros((1, 4, 2))
    flat[0, :, 0] = [1.0, 10.0, 10.0 + 1e-9, 10.0]  # no growth after block 1: ED explodes
    r = trajectory_regularity(flat)
    assert r.expodistance_no_first[0] > 1e6
    assert variance_share(r.alpha)[0] == pytest.approx(1.0)
    with pytest.raises(LlmdynError, match="alpha must be"):
        variance_share(np.ones((2, 2)))
