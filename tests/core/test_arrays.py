"""Every formula checks its arrays where they enter: NaN/inf, shape and ndim name the argument."""

import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.core.arrays import off_diagonal
from llmdyn.jacobians.svd import svd_sorted
from llmdyn.stats.pca import pca_projection
from llmdyn.trajectories.lens import entropy, total_variation, tv_to_token
from llmdyn.trajectories.shape import (
    equidistance,
    line_shape_score,
)


def test_nan_and_ndim_errors():
    bad = np.ones((4, 3))
    bad[1, 2] = np.nan
    with pytest.raises(LlmdynError, match=r"traj: has 1 NaN/inf"):
        line_shape_score(bad)
    inf = np.eye(3)
    inf[0, 0] = np.inf
    with pytest.raises(LlmdynError, match=r"J: has 1 NaN/inf"):
        svd_sorted(inf)
    with pytest.raises(LlmdynError, match=r"logits: has"):
        entropy(torch.tensor([0.0, float("nan")]))
    with pytest.raises(LlmdynError, match=r"traj: got shape \(5,\) \(ndim 1\); expected"):
        equidistance(np.ones(5))
    with pytest.raises(LlmdynError, match=r"traj: got shape \(5, 3\) \(ndim 2\)"):
        pca_projection(np.ones((5, 3)))
    with pytest.raises(LlmdynError, match=r"J: got shape \(3, 4\)"):
        svd_sorted(np.ones((3, 4)))
    with pytest.raises(LlmdynError, match=r"p: expected probabilities"):
        total_variation(np.array([2.0, -1.0]), np.array([0.5, 0.5]))
    with pytest.raises(LlmdynError, match=r"token: got ids outside \[0, 2\)"):
        tv_to_token(np.array([0.5, 0.5]), 2)


def test_host_array_leaves_cpu_values_as_they_are_and_widens_bfloat16_exactly():
    from llmdyn.core.arrays import host_array

    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    out = host_array(x * 1)  # a tensor in a graph: detached, not refused
    assert out.dtype == np.float64 and np.array_equal(out, x.detach().numpy())
    b = torch.tensor([1.5, -2.25, 3.0e38], dtype=torch.bfloat16)
    assert host_array(b).dtype == np.float32
    assert np.array_equal(host_array(b), b.float().numpy())  # every bfloat16 is a float32


def test_off_diagonal_masks_the_distinct_pairs():
    assert off_diagonal(3).tolist() == [[False, True, True], [True, False, True],
                                        [True, True, False]]
    assert off_diagonal(np.int64(2)).dtype == bool and off_diagonal(0).shape == (0, 0)
    M = np.arange(9.0).reshape(3, 3)
    assert M[off_diagonal(3)].tolist() == [1.0, 2.0, 3.0, 5.0, 6.0, 7.0]  # row by row
    for bad in (-1, 2.0, True):
        with pytest.raises(LlmdynError, match="n: got .*; expected a non-negative int"):
            off_diagonal(bad)
