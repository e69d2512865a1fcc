"""Table 1 and the phase contrasts under each split, and the grid that shows them side by side."""

import numpy as np
import pytest

from llmdyn.claims.render import split_grid
from llmdyn.phases.contrast import contrast_claims, table1_claims
from llmdyn.phases.split import PhaseBoundary, PhaseSplit

L = 12


def _paper_like(n_prompts: int = 20):  # the book's n: every claim is one value per prompt
    """Curves of a model that behaves as paper B describes, Fixation from layer 7 on."""
    rng = np.random.default_rng(1)
    depth = np.arange(L + 1)
    fix = depth >= 7
    noise = rng.normal(0, 0.05, (n_prompts, L + 1))  # wide enough for a printed interval
    spread = np.where(fix, 1.0, 0.05) * rng.normal(size=(n_prompts, 1))  # prompts differ late
    curves = dict(
        norms=(10 + depth + np.where(fix, 3 * (depth - 7), 0)) * (1 + 0.05 * spread) + noise,
        lss=np.where(fix, 2.5, 3.5) + noise,
        equidistance=np.where(fix, 0.1, 0.3) + noise,
        entropy=np.where(fix, 2.0, 9.0) + spread + noise,
    )
    blocks_fix = depth[1:] >= 7
    ratios = (np.where(blocks_fix[:, None] & blocks_fix[None], 0.9, 0.4)  # prompts vary a little
              + rng.normal(0, 0.01, (n_prompts, L, L)))
    return curves, ratios


@pytest.mark.parametrize("split", [PhaseSplit.at(7, L, "true"), PhaseSplit.thirds(L)])
def test_paper_like_model_holds_under_the_true_split_and_thirds(split):
    curves, ratios = _paper_like()
    t1 = table1_claims("m", split, lss=curves["lss"], equidistance=curves["equidistance"],
                       entropy=curves["entropy"], ratios=ratios)
    assert [c.verdict.grade for c in t1] == ["holds"] * 4
    assert all(c.id.endswith(split.name) for c in t1)
    grades = {c.id.split("_m_")[0]: c.verdict.grade for c in contrast_claims("m", split, **curves)}
    assert grades["geo_lss_drop"] == grades["geo_eq_drop"] == "holds"
    assert grades["geo_eq_level"] == grades["geo_entropy_spread"] == "holds"
    assert grades["geo_lss_range"] == "holds"  # 2.5 at every Fixation layer


def test_a_boundary_too_early_mixes_the_phases():
    curves, ratios = _paper_like()
    early = PhaseSplit.at(2, L, "early")  # Thought = layer 1 only; Fixation = 2 … 12
    t1 = table1_claims("m", early, lss=curves["lss"], equidistance=curves["equidistance"],
                       entropy=curves["entropy"], ratios=ratios)
    aligned = next(c for c in t1 if "aligned" in c.id)
    assert aligned.verdict.grade == "not run"  # one Thought block: no pair inside Thought


def test_split_grid_has_one_column_per_split():
    curves, ratios = _paper_like()
    b = PhaseBoundary("m", L, lss_peak=6, entropy_spread=7, norm_velocity=8)
    grid = {how: table1_claims("m", b.split(how), lss=curves["lss"],
                               equidistance=curves["equidistance"], entropy=curves["entropy"],
                               ratios=ratios) for how in ("lss_peak", "consensus", "thirds")}
    text = split_grid(grid).data
    lines = text.splitlines()
    assert lines[0] == "| claim | lss_peak | consensus | thirds |"
    assert len(lines) == 2 + 4 and text.count("**holds**") == 12


def test_table1_has_a_row_for_the_other_lens():
    curves, ratios = _paper_like()
    t1 = table1_claims("m", PhaseSplit.thirds(L), lss=curves["lss"],
                       equidistance=curves["equidistance"], entropy=curves["entropy"],
                       ratios=ratios, other_entropy=("normed", curves["entropy"]))
    assert [c.id for c in t1][-1] == "table1_confident_normed_lens_m_thirds"
    assert t1[-1].statement == "m: CONFIDENT (normed lens) is stronger in Fixation"
    assert t1[-1].verdict.grade == "holds"
