import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.coupling.depth import DepthCoupling, coupling_from_jacobians
from llmdyn.coupling.summary import (
    adjacency_weights,
    authors_split,
    chance_strength,
    layer_strength,
    mean_strength,
    prompt_scores,
    strength,
    summarize_depth,
)


def test_strength_and_chance():
    assert strength(np.zeros((2, 2))).tolist() == [[1, 1], [1, 1]]
    assert chance_strength(1) == 1.0
    assert chance_strength(30) == pytest.approx(1 - np.sqrt(29 / 30))


def test_layer_and_mean_coupling_known_answer():
    m = np.array([[0.0, 0.2, 0.4],
                  [0.6, 0.0, 0.8],
                  [0.4, 0.2, 0.0]])
    c = 1 - m
    # layer 0: pairs (0,1): (0.8 + 0.4)/2 = 0.6, (0,2): (0.6 + 0.6)/2 = 0.6
    assert layer_strength(m)[0] == pytest.approx(0.6)
    assert layer_strength(m)[1] == pytest.approx(((0.8 + 0.4) / 2 + (0.2 + 0.8) / 2) / 2)
    assert mean_strength(m) == pytest.approx(c[~np.eye(3, dtype=bool)].mean())
    stacked = np.stack([m, np.zeros((3, 3))])
    assert mean_strength(stacked).tolist() == pytest.approx([mean_strength(m), 1.0])
    assert layer_strength(stacked).shape == (2, 3)


def test_adjacency_weights_share_one_scale():
    k = 4
    chance = 1 - chance_strength(k)  # the m-tilde of unrelated bases
    weak = np.full((3, 3), chance)
    strong = np.full((3, 3), 0.2)
    w_weak, w_strong = adjacency_weights([weak, strong], k)
    assert np.allclose(w_weak, 0) and np.allclose(np.diag(w_strong), 0)
    off = ~np.eye(3, dtype=bool)
    assert np.allclose(w_strong[off], 1.0)
    with pytest.raises(LlmdynError):
        adjacency_weights([], k)


def test_authors_split_recombines_to_the_authors_score():
    torch.manual_seed(0)
    J = torch.randn(4, 12, 12, dtype=torch.float64)
    dc = coupling_from_jacobians(J, 5)
    split = authors_split(dc.A, dc.S)
    assert np.allclose(np.sqrt(split.offdiagonal**2 + split.diagonal**2), dc.authors)
    assert np.allclose(np.diag(split.offdiagonal), 0) and np.allclose(np.diag(split.diagonal), 0)
    # stacked over prompts
    both = authors_split(np.stack([dc.A, dc.A]), np.stack([dc.S, dc.S]))
    assert both.diagonal.shape == (2, 4, 4)


def test_authors_split_penalises_a_diagonal_with_other_gains():
    A = np.zeros((2, 2, 2, 2))
    S = np.array([[2.0, 1.0], [2.0, 1.0]])
    A[0, 0] = A[1, 1] = np.diag([2.0, 1.0])
    A[0, 1] = np.diag([1.0, 2.0])  # exactly diagonal (m-tilde = 0) but in another order
    A[1, 0] = np.diag([2.0, 1.0])
    split = authors_split(A, S)
    assert split.offdiagonal[0, 1] == 0
    assert split.diagonal[0, 1] == pytest.approx(np.sqrt(2) / np.sqrt(5))


def test_summarize_depth_averages_pairs():
    n, k = 3, 2
    results = []
    for value in (0.5, 0.7):
        M = np.full((n, n), value)
        np.fill_diagonal(M, 0)
        results.append(DepthCoupling(A=np.zeros((n, n, k, k)), S=np.ones((n, k)), miscoupling=M,
                                     ratio=M, authors=2 * M))
    s = summarize_depth(results)
    assert s.miscoupling == pytest.approx(0.6) and s.authors == pytest.approx(1.2)
    assert s.diagonal_share == pytest.approx(1 - (0.25 + 0.49) / 2)
    per = prompt_scores(results)
    assert per.miscoupling == pytest.approx([0.5, 0.7])
    assert per.diagonal_share == pytest.approx([0.75, 0.51])
    assert per.diagonal_share.mean() == pytest.approx(s.diagonal_share)


def test_depth_coupling_with_mismatched_shapes_raises_a_clear_error():
    n, k = 3, 2
    good = dict(A=np.zeros((n, n, k, k)), S=np.ones((n, k)), miscoupling=np.zeros((n, n)),
                ratio=np.zeros((n, n)), authors=np.zeros((n, n)))
    DepthCoupling(**good)
    with pytest.raises(LlmdynError, match=r"DepthCoupling.S: got shape \(3, 3\).*delete it"):
        DepthCoupling(**{**good, "S": np.ones((n, n))})
    with pytest.raises(LlmdynError, match="DepthCoupling.ratio"):
        DepthCoupling(**{**good, "ratio": np.zeros((n + 1, n))})
