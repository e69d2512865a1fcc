import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.phases.contrast import (
    PAPER_TABLE1,
    alignment_means,
    pair_phase_means,
)
from llmdyn.phases.curves import alignment_profile, phase_means_per_prompt
from llmdyn.phases.split import PhaseSplit


def test_phase_means_split_at_the_boundary():
    values = np.array([[0.0, 1, 2, 3, 4], [2.0, 3, 4, 5, 6]])  # (prompt=2, layer+1=5)
    t, f = phase_means_per_prompt(values, 2)  # layer 1 vs 2-3; layers 0 and L = 4 in neither
    assert t.tolist() == [1.0, 3.0] and f.tolist() == [2.5, 4.5]
    t, f = phase_means_per_prompt(values, PhaseSplit.at(2, 4, include_last=True))  # 2-4
    assert t.tolist() == [1.0, 3.0] and f.tolist() == [3.0, 5.0]
    padded = values.copy()
    padded[:, [0, 3]] = np.nan  # windows that do not fit
    assert phase_means_per_prompt(padded, 2)[1].tolist() == [2.0, 4.0]
    t, f = phase_means_per_prompt(padded, 3)
    assert t.tolist() == [1.5, 3.5] and np.isnan(f).all()
    # thirds of L = 4: Thought 1–1, Fixation 3–3 (⌈8/3⌉ = 3), layers 2 and 4 in neither
    assert phase_means_per_prompt(values, PhaseSplit.thirds(4))[1].tolist() == [3.0, 5.0]
    with_last = PhaseSplit.thirds(4, include_last=True)  # Fixation 3–4
    assert phase_means_per_prompt(values, with_last)[1].tolist() == [3.5, 5.5]


def test_pair_phase_means_use_pairs_inside_each_phase():
    M = np.arange(16.0).reshape(4, 4)  # blocks 0-3 produce layers 1-4
    # boundary 3: blocks 0, 1 (layers 1, 2) are Thought; blocks 2, 3 Fixation when layer L
    # counts, block 2 alone (no pair) when it is apart
    with_last = PhaseSplit.at(3, 4, include_last=True)
    assert pair_phase_means(M, with_last) == ((1 + 4) / 2, (11 + 14) / 2)
    t, f = pair_phase_means(M, 3)
    assert t == (1 + 4) / 2 and np.isnan(f)
    t, f = pair_phase_means(M, PhaseSplit.at(2, 4, include_last=True))  # one Thought block
    assert np.isnan(t) and f == np.mean([6, 7, 9, 11, 13, 14])
    assert pair_phase_means(M, 2)[1] == (6 + 9) / 2  # blocks 1, 2 (layers 2, 3)


@pytest.mark.parametrize("boundary", [0, 1, 5, 2.0, True])
def test_boundary_is_checked(boundary):
    with pytest.raises(LlmdynError, match="boundary"):
        phase_means_per_prompt(np.ones((2, 5)), boundary)


def test_table1_claims_agree_on_a_paper_like_model():
    from llmdyn.claims.claim import Claim, Measure, below
    from llmdyn.phases.curves import phase_means_per_prompt

    L = 8  # Thought: layers 0-4, Fixation 5-8
    depth = np.arange(L + 1)
    fix = depth >= 5
    noise = np.random.default_rng(0).normal(0, 0.01, (4, L + 1))
    curves = {"CONFIDENT": np.where(fix, 1.0, 9.0) + noise,  # confident in Fixation
              "LINEAR": np.where(fix, 1.2, 2.0) + noise,
              "EQUISPACED": np.where(fix, 0.1, 0.3) + noise}
    for prop, values in curves.items():
        thought, fixation = phase_means_per_prompt(np.broadcast_to(values, (4, L + 1)), 5)
        assert PAPER_TABLE1[prop][0] == "Fixation"
        claim = Claim("t", "B", "Table 1", prop, "Fixation",
                      Measure.difference(fixation, thought, "Fixation − Thought",
                                         sampling_unit="prompt"), below(0))
        assert claim.verdict.grade == "holds"
    blocks_fix = depth[1:] >= 5
    ratio = np.where(blocks_fix[:, None] & blocks_fix[None], 0.9, 0.4)  # aligned in Thought
    assert pair_phase_means(ratio, 5) == pytest.approx((0.4, 0.9))


def test_alignment_profile_is_the_offdiagonal_row_mean():
    ratio = np.array([[0.0, 1, 3], [2, 0, 4], [5, 7, 0]])
    assert np.allclose(alignment_profile(ratio), [2, 3, 6])
    with pytest.raises(LlmdynError, match="ratio"):
        alignment_profile(np.ones((2, 3)))


def test_alignment_means_known_answers():
    grid = np.array([[0.0, 1, 2], [3, 0, 4], [5, 6, 0]])  # off-diagonal mean 21 / 6
    M = np.arange(16.0).reshape(4, 4)  # Thought pairs at boundary 3: (1 + 4) / 2
    ratios = np.stack([M, 2 * M])  # off-diagonal means 7.5 and 15
    got = alignment_means(grid, ratios, 3)
    assert tuple(got) == pytest.approx((3.5, 11.25, 3.75))
    assert (got.grid, got.pairs, got.thought) == pytest.approx((3.5, 11.25, 3.75))
    assert np.isnan(alignment_means(grid, ratios, 2).thought)  # one Thought block: no pair
    with pytest.raises(LlmdynError, match="ratios"):
        alignment_means(grid, M, 3)
    with pytest.raises(LlmdynError, match="grid_ratio"):
        alignment_means(np.ones((2, 3)), ratios, 3)
