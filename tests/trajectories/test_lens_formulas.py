"""Known answers for the logit lens's distributions: entropy and total variation."""

import math

import numpy as np
import pytest
import torch

from llmdyn.trajectories.lens import entropy, total_variation, tv_to_token

# Float64 round-off on O(1) quantities built from a handful of operations stays ~1e-15; 1e-12
# leaves a wide margin while still catching any formula error.
TIGHT = 1e-12

# ----------------------------------------------------------------------------- logit lens


def test_entropy_known():
    vocab = 1000
    assert entropy(torch.zeros(3, vocab, dtype=torch.float64)).numpy() == pytest.approx(
        math.log(vocab), abs=TIGHT
    )
    peaked = torch.zeros(vocab, dtype=torch.float64)
    peaked[7] = 1e4  # other probabilities are exp(-1e4) = 0 in float64
    assert entropy(peaked).item() == pytest.approx(0.0, abs=TIGHT)
    # two equal logits among -inf-like ones: ln 2
    two = torch.full((5,), -1e4, dtype=torch.float64)
    two[:2] = 0.0
    assert entropy(two).item() == pytest.approx(math.log(2), abs=TIGHT)


def test_total_variation_and_tv_to_token():
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.2, 0.3, 0.5])
    assert total_variation(p, q).item() == pytest.approx(0.3, abs=TIGHT)
    assert tv_to_token(p, 1).item() == pytest.approx(0.7, abs=TIGHT)
    one_hot = np.eye(3)[1]
    assert tv_to_token(p, 1).item() == pytest.approx(total_variation(p, one_hot).item())
    batch = np.stack([p, q])  # [prompt, vocab]
    assert np.allclose(tv_to_token(batch, np.array([0, 2])).numpy(), [0.5, 0.5], atol=TIGHT)
