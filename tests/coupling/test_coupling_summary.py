import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.core.arrays import off_diagonal
from llmdyn.coupling.depth import DepthCoupling
from llmdyn.coupling.scores import chance_strength
from llmdyn.coupling.summary import adjacency_weights, prompt_scores, summarize_depth


def test_adjacency_weights_share_one_scale():
    k = 4
    chance = 1 - chance_strength(k)  # the m-tilde of unrelated bases
    weak = np.full((3, 3), chance)
    strong = np.full((3, 3), 0.2)
    w_weak, w_strong = adjacency_weights([weak, strong], k)
    assert np.allclose(w_weak, 0) and np.allclose(np.diag(w_strong), 0)
    off = off_diagonal(3)
    assert np.allclose(w_strong[off], 1.0)
    with pytest.raises(LlmdynError):
        adjacency_weights([], k)


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
