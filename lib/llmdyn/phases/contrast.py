"""Paper B's Thought/Fixation contrast: split per-layer measurements at a boundary (Table 1)."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal, NamedTuple

import numpy as np

from llmdyn import LlmdynError
from llmdyn.claims.claim import Claim, Measure, at_most, below, slug, within
from llmdyn.core.arrays import off_diagonal
from llmdyn.core.masked import finite_mean
from llmdyn.phases.curves import (
    Saturation,
    fraction_in_band,
    lens_saturation,
    phase_deviations,
    phase_means_per_prompt,
)
from llmdyn.phases.split import PhaseSplit, as_split

__all__ = ["PAPER_TABLE1", "AlignmentMeans", "alignment_means", "contrast_claims",
           "lens_refusals", "pair_phase_means", "saturated_lens", "table1_claims",
           "unless_saturated"]

Phase = Literal["Thought", "Fixation"]

# Paper B Table 1: the phase in which each property is stronger ("MORE"), and what we measure.
PAPER_TABLE1: dict[str, tuple[Phase, str]] = {
    "LINEAR": ("Fixation", "windowed LSS (lower = more linear)"),
    "EQUISPACED": ("Fixation", "windowed equidistance (lower = more equispaced)"),
    "ALIGNED": ("Thought", "r(Aᵢⱼ) over the phase's block pairs i ≠ j (lower = more aligned)"),
    "CONFIDENT": ("Fixation", "logit-lens entropy, nats (lower = more confident)"),
}


def pair_phase_means(M: np.ndarray, split: PhaseSplit | int) -> tuple[float, float]:
    """Mean of a block × block score over pairs i ≠ j that both lie in one phase.

    Row/column b is block b, which produces layer b + 1 (the paper's depth l = b + 1); it
    belongs to the phase that holds layer b + 1.

    Args:
        M: ``[layer, layer]``, e.g. r(A_{i,j,K}) (paper B Fig. 6).
        split: the phase split, or the first Fixation layer in 2 … L.

    Returns:
        (Thought mean, Fixation mean); NaN for a phase with fewer than two blocks.
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise LlmdynError(f"M must be [layer, layer] with layer >= 2, got {M.shape}")
    n = M.shape[0]
    off = off_diagonal(n)
    means = []
    for layers in as_split(split, n).masks():
        in_phase = layers[1:]  # [layer]: block b produces layer b + 1
        mask = off & in_phase[:, None] & in_phase[None, :]  # [layer, layer]
        means.append(finite_mean(M[mask]) if mask.any() else float("nan"))
    return means[0], means[1]


class AlignmentMeans(NamedTuple):
    """The mean r(A_{i,j,K}) that chapter 04's alignment claims compare (see alignment_means)."""

    grid: float  # over the |A| grid's pairs of distinct blocks, one prompt (Fig 7)
    pairs: float  # over prompts, of the mean over all pairs i ≠ j (Fig 6)
    thought: float  # over prompts, of the mean over pairs i ≠ j inside Thought (§4.5)


def alignment_means(grid_ratio: np.ndarray, ratios: np.ndarray,
                    split: PhaseSplit | int) -> AlignmentMeans:
    """The three mean r(A_{i,j,K}) that chapter 04's alignment claims compare (paper B §4.5).

    Args:
        grid_ratio: ``[grid, grid]`` r(A) of one prompt over the blocks of the |A| grid (Fig 7).
        ratios: ``[prompt, layer, layer]`` r(A) over every pair of blocks (Fig 6).
        split: the phase split of ``ratios``' depth, or its first Fixation layer.

    Returns:
        ``grid``: mean over the grid's pairs of distinct blocks; ``pairs``: mean over prompts
        of the mean over all pairs i ≠ j; ``thought``: mean over prompts of the mean over the
        pairs i ≠ j inside Thought (:func:`pair_phase_means`; NaN if Thought has < 2 blocks).
    """
    grid_ratio, ratios = np.asarray(grid_ratio, dtype=float), np.asarray(ratios, dtype=float)
    if grid_ratio.ndim != 2 or grid_ratio.shape[0] != grid_ratio.shape[1] \
            or grid_ratio.shape[0] < 2:
        raise LlmdynError(f"grid_ratio must be [grid, grid] with grid >= 2, got "
                          f"{grid_ratio.shape}")
    if ratios.ndim != 3 or ratios.shape[0] < 1:
        raise LlmdynError(f"ratios must be [prompt, layer, layer], got {ratios.shape}")
    grid_off = off_diagonal(len(grid_ratio))
    off = off_diagonal(ratios.shape[1])
    return AlignmentMeans(
        grid=float(grid_ratio[grid_off].mean()),
        pairs=float(np.mean([M[off].mean() for M in ratios])),
        thought=float(np.mean([pair_phase_means(M, split)[0] for M in ratios])))


def saturated_lens(this: Saturation, other: Saturation | None, lens: str,
                   other_lens: str) -> str:
    """Why a row read through ``lens`` gets no verdict, or "" where that lens may be read.

    A lens that saturates (:attr:`Saturation.saturated`) while the other lens does not says
    nothing about the phases; the other lens carries the verdict. Where both saturate, or no
    other lens was read, nothing is refused here (there is no reading to prefer).

    Args:
        this: the saturation of the lens the row reads (`lens_saturation`).
        other: the other lens's, on the same prompts and split (None: not read).
        lens: the row's lens name (e.g. "paper").
        other_lens: the other lens's name (e.g. "normed").
    """
    if other is None or not this.saturated or other.saturated:
        return ""
    return (f"the {lens} lens saturates here: {this.text()}; the {other_lens} lens, which does "
            f"not ({other.thought:.0%} and {other.fixation:.0%}), carries the verdict")


def lens_refusals(saturation: dict[str, Saturation]) -> dict[str, str]:
    """`saturated_lens`' reason for each of two lenses read on the same prompts and split.

    Args:
        saturation: lens name -> its `lens_saturation`, for exactly two lenses.

    Returns:
        lens name -> the reason its rows get no verdict ("" where they are graded).
    """
    if len(saturation) != 2:
        raise LlmdynError(f"lens_refusals compares two lenses, got {sorted(saturation)}")
    (a, sat_a), (b, sat_b) = saturation.items()
    return {a: saturated_lens(sat_a, sat_b, a, b), b: saturated_lens(sat_b, sat_a, b, a)}


def unless_saturated(measure: Measure, reason: str) -> Measure:
    """``measure``, shown with **no verdict** and ``reason`` when its lens saturates.

    ``reason`` is `saturated_lens`' text ("" leaves the measure as it is); a measure that was
    not measured keeps its own reason.
    """
    if not reason or measure.estimate is None or measure.missing:
        return measure
    return replace(measure, missing="no verdict", reason=reason)


def table1_claims(name: str, split: PhaseSplit, *, lss: np.ndarray, equidistance: np.ndarray,
                  entropy: np.ndarray, ratios: np.ndarray,
                  other_entropy: tuple[str, np.ndarray] | None = None,
                  lens: str = "paper") -> list:
    """Paper B's Table 1 for one model and one split, as claims (one per property).

    Each property's measure is lower where the property is stronger, so each claim judges
    "stronger phase − other phase < 0" with a paired interval over prompts (the unit; the
    method the coverage table gives, a t interval at the book's n).

    Args:
        name: the model's name (claim ids end in its slug and the split's name).
        split: the Thought/Fixation split (:meth:`llmdyn.phases.PhaseBoundary.split`).
        lss: windowed LSS ``[prompt, layer+1]``.
        equidistance: windowed equidistance ``[prompt, layer+1]``.
        entropy: logit-lens entropy ``[prompt, layer+1]``.
        ratios: r(A_{i,j,K}) per prompt, ``[prompt, layer, layer]`` (may hold fewer prompts).
        other_entropy: (lens name, ``[prompt, layer+1]``) of the logit lens shown beside
            ``entropy`` (e.g. ``("normed", …)``): one more CONFIDENT row. Where one of the
            two lenses saturates and the other does not (`saturated_lens`), the saturated
            lens's CONFIDENT row gets no verdict and the other carries it.
        lens: the name of ``entropy``'s lens.
    """
    refused = {("CONFIDENT" if name == lens else f"CONFIDENT ({name} lens)"): reason
               for name, reason in _refusals(entropy, other_entropy, split, lens).items()}
    means = {"LINEAR": phase_means_per_prompt(lss, split),
             "EQUISPACED": phase_means_per_prompt(equidistance, split),
             "ALIGNED": np.array([pair_phase_means(M, split) for M in ratios]).T,
             "CONFIDENT": phase_means_per_prompt(entropy, split)}
    if other_entropy is not None:
        means[f"CONFIDENT ({other_entropy[0]} lens)"] = phase_means_per_prompt(other_entropy[1],
                                                                              split)
    claims = []
    for prop, (thought, fixation) in means.items():
        stronger, measure = PAPER_TABLE1[prop.split()[0]]
        other = "Thought" if stronger == "Fixation" else "Fixation"
        mine, theirs = (fixation, thought) if stronger == "Fixation" else (thought, fixation)
        claims.append(Claim(
            f"table1_{slug(prop)}_{slug(name)}_{split.name}", "B", "Table 1",
            f"{name}: {prop} is stronger in {stronger}", f"{stronger} (MORE there)",
            unless_saturated(Measure.difference(
                mine, theirs, f"{measure}: {stronger} − {other}", fmt=".3f",
                sampling_unit="prompt", detail=f"Thought {finite_mean(thought):.3f} / Fixation "
                f"{finite_mean(fixation):.3f}; {split.label()} of {split.n_layers}"),
                refused.get(prop, "")),
            below(0)))
    return claims


def _refusals(entropy: np.ndarray, other_entropy: tuple[str, np.ndarray] | None,
              split: PhaseSplit, lens: str) -> dict[str, str]:
    """`lens_refusals` of ``entropy``'s lens and the other one ({} when no other was read)."""
    if other_entropy is None:
        return {}
    return lens_refusals({lens: lens_saturation(entropy, split),
                          other_entropy[0]: lens_saturation(other_entropy[1], split)})


def _entropy_spread(name: str, split: PhaseSplit, entropy: np.ndarray,
                    other_entropy: tuple[str, np.ndarray] | None, lens: str) -> Claim:
    """`contrast_claims`' entropy row: Thought / Fixation spread over prompts (§4.4, Fig 5)."""
    refused = _refusals(entropy, other_entropy, split, lens).get(lens, "")
    return Claim(f"geo_entropy_spread_{slug(name)}_{split.name}", "B", "§4.4, Fig 5",
                 f"{name}: prompts agree in confidence in Thought, disagree in Fixation",
                 "low variation in Thought", unless_saturated(Measure.ratio(
                     *phase_deviations(entropy, split), quantity="Thought / Fixation mean "
                     "absolute deviation of the entropy from the prompt mean",
                     detail=split.label(), sampling_unit="prompt", fmt=".2f"), refused),
                 below(1))


def contrast_claims(name: str, split: PhaseSplit, *, norms: np.ndarray, lss: np.ndarray,
                    equidistance: np.ndarray, entropy: np.ndarray,
                    other_entropy: tuple[str, np.ndarray] | None = None,
                    lens: str = "paper") -> list:
    """Paper B's phase contrasts along depth (§4.1–4.4, §5.1, §5.4) for one model and split.

    Args:
        name: the model's name (claim ids end in its slug and the split's name).
        split: the Thought/Fixation split.
        norms: ``[prompt, layer+1]`` norms of the last token's states.
        lss: windowed LSS ``[prompt, layer+1]``, on the same prompts.
        equidistance: windowed equidistance ``[prompt, layer+1]``.
        entropy: logit-lens entropy ``[prompt, layer+1]``.
        other_entropy: (lens name, ``[prompt, layer+1]``) of the other logit lens: where
            ``entropy``'s lens saturates and it does not, the entropy row has no verdict.
        lens: the name of ``entropy``'s lens.

    Returns:
        Claims, each judged over one value per prompt: the norm's relative spread over prompts
        (Thought/Fixation < 1, as the ratio of the prompts' mean absolute deviations from the
        mean curve, `phase_deviations`), LSS and equidistance lower in Fixation, Fixation
        equidistance ≤ 0.15 (paper: ≈ 0.1), the mean Fixation LSS within 2–3, the entropy's
        spread over prompts (Thought/Fixation < 1, as for the norm), Fixation LSS below the
        all-layer mean (Fig 12).
    """
    sid = f"{slug(name)}_{split.name}"
    lss_t, lss_f = phase_means_per_prompt(lss, split)
    eq_t, eq_f = phase_means_per_prompt(equidistance, split)
    norm_dev = phase_deviations(norms, split, relative=True)
    where, per = split.label(), {"sampling_unit": "prompt", "fmt": ".2f"}
    band = fraction_in_band(lss, split, low=2.0, high=3.0)
    return [
        Claim(f"geo_norm_prompts_{sid}", "B", "§4.1, Fig 2", f"{name}: the norm is "
              "prompt-independent in Thought, prompt-dependent in Fixation",
              "band narrow in Thought, wide in Fixation",
              Measure.ratio(*norm_dev, quantity="Thought / Fixation mean absolute deviation "
                            "of the norm from the prompt mean (relative to it)",
                            detail=where, **per), below(1)),
        Claim(f"geo_lss_drop_{sid}", "B", "§4.2, Fig 3", f"{name}: LSS falls in Fixation",
              "lower LSS in Fixation", Measure.difference(
                  lss_f, lss_t, "mean windowed LSS, Fixation − Thought",
                  detail=where, **per), below(0)),
        Claim(f"geo_lss_range_{sid}", "B", "§5.1", f"{name}: LSS between 2.0 and 3.0 through "
              "Fixation", "2.0–3.0", Measure.mean(
                  lss_f, "mean windowed LSS over the Fixation layers",
                  detail=f"{where}; share of Fixation layers whose prompt-mean LSS lies in "
                  f"2.0–3.0: {band:.2f}", **per), within(2.5, 0.5)),
        Claim(f"geo_eq_drop_{sid}", "B", "§4.3, Fig 4", f"{name}: equidistance drops in "
              "Fixation", "≤ 0.3 in Thought, ≈ 0.1 in Fixation", Measure.difference(
                  eq_f, eq_t, "mean equidistance, Fixation − Thought",
                  detail=where, **per), below(0)),
        Claim(f"geo_eq_level_{sid}", "B", "§4.3, Fig 4", f"{name}: equidistance is about 0.1 "
              "in Fixation", "≈ 0.1", Measure.mean(eq_f, "mean Fixation equidistance",
                                                   detail=where, **per), at_most(0.15)),
        _entropy_spread(name, split, entropy, other_entropy, lens),
        Claim(f"geo_fixation_lss_{sid}", "B", "§5.4, Fig 12", f"{name}: over the Fixation "
              "layers LSS is lower than over all layers", "for every model",
              Measure.difference(lss_f, _row_means(lss), "mean LSS, Fixation − all layers",
                                 detail=where, **per), below(0)),
    ]


def _row_means(values: np.ndarray) -> np.ndarray:
    """Each prompt's mean over the layers 1 … L that hold a value, ``[prompt]``."""
    return finite_mean(np.asarray(values, dtype=float)[:, 1:], axis=1)
