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


def _saturated(n_prompts: int = 20) -> np.ndarray:
    """A lens pinned near zero at every layer but 1 and L: ``[prompt, layer+1]``, in nats."""
    rng = np.random.default_rng(2)
    out = rng.uniform(0, 0.009, (n_prompts, L + 1))  # every prompt <= 0.01 nats
    out[:, [0, 1, L]] = rng.uniform(3, 5, (n_prompts, 3))  # not pinned: 0, 1 and L
    return out


def test_lens_saturation_counts_layers_pinned_for_every_prompt():
    from llmdyn.phases.curves import lens_saturation

    split = PhaseSplit.at(7, L)  # Thought 1–6, Fixation 7–11, L = 12 apart
    got = lens_saturation(_saturated(), split)
    assert (got.thought, got.fixation) == (5 / 6, 1.0) and got.saturated
    assert got.largest > 3  # layer 1's entropy; layer L (3–5 nats too) is never counted
    confident = _saturated()
    confident[:, 1:7] = 4.0  # Thought uncertain, Fixation certain: paper B's prediction
    assert not lens_saturation(confident, split).saturated
    one_open = _saturated()
    one_open[0, 7:L] = 0.5  # one (ambiguous) prompt keeps 0.5 nats through Fixation
    assert lens_saturation(one_open, split).fixation == 0.0


def test_a_saturated_lens_gives_no_verdict_and_the_other_lens_carries_it():
    curves, ratios = _paper_like()
    split = PhaseSplit.at(7, L, "true")
    t1 = table1_claims("m", split, lss=curves["lss"], equidistance=curves["equidistance"],
                       entropy=_saturated(), ratios=ratios,
                       other_entropy=("normed", curves["entropy"]))
    paper, normed = t1[3], t1[4]
    assert paper.verdict.grade == "no verdict" and normed.verdict.grade == "holds"
    assert paper.verdict.reason.startswith("the paper lens saturates here: every prompt ≤ 0.01 "
                                           "nats at 83% of the Thought layers and 100% of the "
                                           "Fixation layers (L apart)")
    assert paper.verdict.reason.endswith("the normed lens, which does not (0% and 0%), carries "
                                         "the verdict")
    both = table1_claims("m", split, lss=curves["lss"], equidistance=curves["equidistance"],
                         entropy=_saturated(), ratios=ratios,
                         other_entropy=("normed", _saturated()))
    assert both[3].verdict.grade != "no verdict"  # both saturate: no lens to prefer
    spread = {c.id: c for c in contrast_claims("m", split, **{**curves, "entropy": _saturated()},
                                               other_entropy=("normed", curves["entropy"]))}
    assert spread["geo_entropy_spread_m_true"].verdict.grade == "no verdict"
    assert spread["geo_lss_drop_m_true"].verdict.grade == "holds"  # other rows are untouched


def test_lens_refusals_name_the_saturated_lens_only():
    from llmdyn.phases.contrast import lens_refusals
    from llmdyn.phases.curves import lens_saturation

    split = PhaseSplit.at(7, L)
    curves, _ = _paper_like()
    got = lens_refusals({"paper": lens_saturation(_saturated(), split),
                         "normed": lens_saturation(curves["entropy"], split)})
    assert got["paper"].startswith("the paper lens saturates here") and got["normed"] == ""
