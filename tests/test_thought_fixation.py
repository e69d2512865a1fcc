import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.coupling import depth_coupling
from llmdyn.models import load_model
from llmdyn.store import ResultStore
from llmdyn.thought_fixation import (
    PAPER_TABLE1,
    PhaseRow,
    alignment_profile,
    fit_window,
    last_token_alignment,
    pair_phase_means,
    phase_means,
    phase_table,
)


def test_phase_means_split_at_the_boundary():
    values = np.array([[0.0, 1, 2, 3, 4], [2.0, 3, 4, 5, 6]])  # (prompt=2, layer+1=5)
    assert phase_means(values, 2) == (1.5, 4.0)  # layers 0-1 vs 2-4
    assert phase_means(values[0], 4) == (1.5, 4.0)
    padded = values.copy()
    padded[:, [0, 4]] = np.nan  # windows that do not fit
    assert phase_means(padded, 2) == (2.0, 3.5)
    t, f = phase_means(padded, 4)
    assert t == 3.0 and np.isnan(f)


def test_pair_phase_means_use_pairs_inside_each_phase():
    M = np.arange(16.0).reshape(4, 4)  # blocks 0-3 produce layers 1-4
    # boundary 3: blocks 0, 1 (layers 1, 2) are Thought; blocks 2, 3 Fixation
    assert pair_phase_means(M, 3) == ((1 + 4) / 2, (11 + 14) / 2)
    t, f = pair_phase_means(M, 2)  # one Thought block: no pair
    assert np.isnan(t) and f == np.mean([6, 7, 9, 11, 13, 14])


@pytest.mark.parametrize("boundary", [0, 5, 2.0, True])
def test_boundary_is_checked(boundary):
    with pytest.raises(LlmdynError, match="boundary"):
        phase_means(np.ones((2, 5)), boundary)


def test_phase_row_verdicts():
    assert PhaseRow("LINEAR", "", 2.0, 1.5, "Fixation").ours == "Fixation"
    assert PhaseRow("LINEAR", "", 2.0, 1.5, "Fixation").agrees == "yes"
    assert PhaseRow("ALIGNED", "", 0.8, 0.5, "Thought").agrees == "no"
    assert PhaseRow("ALIGNED", "", np.nan, 0.5, "Thought").agrees == "n/a"


def test_phase_table_on_a_paper_like_model():
    L = 8  # Thought: layers 0-4, Fixation 5-8
    depth = np.arange(L + 1)
    fix = depth >= 5
    entropy = np.where(fix, 1.0, 9.0)[None].repeat(3, 0)  # confident in Fixation
    lss = np.where(fix, 1.2, 2.0)[None].repeat(3, 0)  # linear in Fixation
    equi = np.where(fix, 0.1, 0.3)[None].repeat(3, 0)
    blocks_fix = depth[1:] >= 5
    ratio = np.where(blocks_fix[:, None] & blocks_fix[None], 0.9, 0.4)  # aligned in Thought
    rows = phase_table(entropy=entropy, lss=lss, equidistance=equi, ratio=ratio, boundary=5)
    assert [r.property for r in rows] == list(PAPER_TABLE1)
    assert all(r.agrees == "yes" for r in rows)
    assert rows[2].thought == pytest.approx(0.4) and rows[2].fixation == pytest.approx(0.9)


@pytest.mark.parametrize("window, n_layers, expected", [
    (11, 30, 11), (11, 18, 11), (11, 3, 3), (11, 4, 5), (11, 9, 9), (5, 18, 5)])
def test_fit_window(window, n_layers, expected):
    assert fit_window(window, n_layers) == expected


def test_last_token_alignment_matches_depth_coupling(tmp_path):
    model = load_model("tiny-llama", seed=0, dtype=torch.float64)
    prompts = ["Hi, you there", "The capital is"]
    store = ResultStore(model.model_id, root=tmp_path)
    fast = last_token_alignment(model, prompts, k=4, store=store)
    exact = depth_coupling(model, prompts, k=4)
    for a, b in zip(fast, exact, strict=True):
        assert a.ratio.shape == (model.n_layers, model.n_layers)
        assert np.allclose(a.ratio, b.ratio, rtol=1e-5, atol=1e-7)
        assert np.allclose(a.S, b.S, rtol=1e-6)
    again = last_token_alignment(model, prompts, k=4, store=store)
    assert np.array_equal(again[0].ratio, fast[0].ratio)
    with pytest.raises(LlmdynError, match="prompts"):
        last_token_alignment(model, [], k=4)


def test_alignment_profile_is_the_offdiagonal_row_mean():
    ratio = np.array([[0.0, 1, 3], [2, 0, 4], [5, 7, 0]])
    assert np.allclose(alignment_profile(ratio), [2, 3, 6])
    with pytest.raises(LlmdynError, match="ratio"):
        alignment_profile(np.ones((2, 3)))
