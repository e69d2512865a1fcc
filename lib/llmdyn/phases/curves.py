"""Statistics of ``[prompt, layer+1]`` curves that the chapters' claims resample over prompts.

Each function takes whole arrays (prompts on the first axis) and the phase split, and returns
per-prompt values or one number. A claim is judged over one value per prompt (the unit):
`per_prompt_values` applies a curve statistic to each prompt's curve alone, and
`phase_deviations` measures each prompt's distance from the prompt-mean curve in each phase, so
a spread over prompts becomes a paired comparison of per-prompt values. A split is
a `llmdyn.phases.PhaseSplit` or the first Fixation layer ``b`` (Thought ``1 … b-1``, Fixation
``b … L``; layer 0, the embedding, is in neither). NaN entries (windows that do not fit) are
ignored.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core import masked
from llmdyn.core.arrays import off_diagonal
from llmdyn.phases.changepoints import norm_velocity_fit
from llmdyn.phases.split import PhaseSplit, as_split


def _curves(values, split: PhaseSplit | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``[prompt, layer+1]`` float64 and the Thought and Fixation masks ``[layer+1]``."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] < 2:
        raise LlmdynError(f"values must be [prompt, layer+1], got shape {values.shape}")
    thought, fixation = as_split(split, values.shape[1] - 1).masks()
    return values, thought, fixation


def _nanmean(x: np.ndarray, axis=None) -> np.ndarray:
    """Mean ignoring NaN; all-NaN gives NaN (explicitly, `llmdyn.core.masked`), not a warning."""
    return masked.finite_mean(x, axis=axis)


def phase_means_per_prompt(values, split: PhaseSplit | int) -> tuple[np.ndarray, np.ndarray]:
    """Each prompt's mean over the Thought layers and over the Fixation layers.

    Args:
        values: ``[prompt, layer+1]``.
        split: the phase split, or the first Fixation layer (2 … L).

    Returns:
        (Thought ``[prompt]``, Fixation ``[prompt]``).
    """
    v, thought, fixation = _curves(values, split)
    return _nanmean(v[:, thought], 1), _nanmean(v[:, fixation], 1)


def phase_deviations(values, split: PhaseSplit | int, *,
                     relative: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Each prompt's mean absolute deviation from the prompt-mean curve, in Thought and Fixation.

    ``d_p = mean over the phase's layers l of |v_{p,l} − v̄_l|`` (divided by ``v̄_l`` with
    ``relative``), ``v̄_l`` the mean over prompts at layer l. The mean of ``d`` over prompts is
    the phase's spread across prompts (the mean absolute deviation, as in Levene's test), so
    "prompts agree more in Thought" is the paired ratio mean(d_Thought) / mean(d_Fixation) < 1,
    with one value per prompt on each side.

    Args:
        values: ``[prompt, layer+1]``.
        split: the phase split, or the first Fixation layer (2 … L).
        relative: deviations relative to the layer's mean (a coefficient of variation).

    Returns:
        (Thought ``[prompt]``, Fixation ``[prompt]``).
    """
    v, thought, fixation = _curves(values, split)
    centre = _nanmean(v, 0)  # [layer+1]
    dev = np.abs(v - centre)  # [prompt, layer+1]
    if relative:
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = dev / np.abs(centre)
    return _nanmean(dev[:, thought], 1), _nanmean(dev[:, fixation], 1)


SATURATED_NATS = 0.01  # an entropy at or below this, for every prompt, is a saturated reading


class Saturation(NamedTuple):
    """How much of each phase a logit lens reads as certain for every prompt (`lens_saturation`)."""

    thought: float  # share of the Thought layers at which every prompt's entropy <= nats
    fixation: float  # the same share over the Fixation layers (L apart)
    nats: float  # the bound
    largest: float  # largest entropy over prompts and both phases' layers (nats)

    @property
    def saturated(self) -> bool:
        """More than half of the layers of both phases read <= ``nats`` for every prompt."""
        return self.thought > 0.5 and self.fixation > 0.5

    def text(self) -> str:
        """E.g. "every prompt <= 0.01 nats at 6 of 7 Thought layers (86 %) and ..."."""
        return (f"every prompt ≤ {self.nats:g} nats at {self.thought:.0%} of the Thought layers "
                f"and {self.fixation:.0%} of the Fixation layers (L apart); largest "
                f"{self.largest:.3g} nats")


def lens_saturation(entropy, split: PhaseSplit | int, *,
                    nats: float = SATURATED_NATS) -> Saturation:
    """Whether a logit lens's entropy is pinned near zero across both phases (a lens artefact).

    A lens whose logits scale with the raw state's norm (paper B's softmax(M x^l) on a model
    whose states grow to norms in the thousands) reads almost every prompt as certain at almost
    every layer: its entropy then says nothing about Thought or Fixation. Near-zero Fixation
    entropy on a confident prompt is what paper B predicts, so only a reading that is near zero
    for every prompt, ambiguous ones included (pass them among ``entropy``'s rows), at more
    than half the layers of *both* phases counts (:attr:`Saturation.saturated`). Layer L (the
    model's own prediction, the same under every lens) is never counted.

    Args:
        entropy: ``[prompt, layer+1]`` logit-lens entropies (nats).
        split: the phase split, or the first Fixation layer.
        nats: the bound (default :data:`SATURATED_NATS`).

    Returns:
        The shares of each phase's layers at which every prompt reads <= ``nats``.
    """
    v, thought, fixation = _curves(entropy, split)
    thought, fixation = thought.copy(), fixation.copy()
    thought[-1] = fixation[-1] = False  # L: the model's own prediction under every lens
    pinned = (v <= nats).all(0)  # [layer+1]
    layers = thought | fixation
    return Saturation(float(pinned[thought].mean()) if thought.any() else 0.0,
                      float(pinned[fixation].mean()) if fixation.any() else 0.0, float(nats),
                      float(np.nanmax(v[:, layers])) if layers.any() else float("nan"))


def per_prompt_values(statistic, *curves) -> np.ndarray:
    """``statistic`` of each prompt's curve(s) alone: one value per prompt, ``[prompt]``.

    Turns a statistic of the prompt-mean curve (`peak_position`, `rising_fraction`,
    `relative_velocity_change`, ...) into one number per prompt, over which an interval is
    taken: ``statistic(c[p:p+1], ...)`` for every prompt p.

    Args:
        statistic: a function of ``[prompt, ...]`` arrays returning one number.
        *curves: ``[prompt, ...]`` arrays with the same prompts (paired rows).
    """
    arrays = [np.asarray(c, dtype=np.float64) for c in curves]
    sizes = {len(a) for a in arrays}
    if not arrays or len(sizes) != 1:
        raise LlmdynError(f"curves must hold the same prompts, got {sorted(sizes)} rows")
    return np.array([float(statistic(*(a[i:i + 1] for a in arrays)))
                     for i in range(sizes.pop())])


def spread_ratio(values, split: PhaseSplit | int, *, relative: bool = False) -> float:
    """Thought / Fixation ratio of the spread over prompts, averaged over each phase's layers.

    The spread at a layer is the std over prompts (divided by the mean with ``relative``, the
    coefficient of variation). Below 1: prompts agree more in Thought than in Fixation.
    """
    v, thought, fixation = _curves(values, split)
    sd = v.std(0)  # [layer+1]
    if relative:
        sd = sd / v.mean(0)
    num, den = float(_nanmean(sd[thought])), float(_nanmean(sd[fixation]))
    if not den > 0:  # no spread in Fixation (e.g. one prompt drawn twice by the bootstrap)
        return float("nan") if not num > 0 else float("inf")
    return num / den


def peak_position(values) -> float:
    """Layer of the maximum of the prompt-mean curve, as a fraction l / L of the depth."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] < 2:
        raise LlmdynError(f"values must be [prompt, layer+1], got shape {v.shape}")
    curve = _nanmean(v, 0)  # [layer+1]
    if not np.isfinite(curve).any():
        return float("nan")
    return float(np.nanargmax(curve) / (v.shape[1] - 1))


def fraction_in_band(values, split: PhaseSplit | int, low: float, high: float) -> float:
    """Share of the Fixation layers whose prompt-mean value lies in [low, high]."""
    v, _, fixation = _curves(values, split)
    curve = _nanmean(v, 0)[fixation]  # [fixation layers]
    curve = curve[np.isfinite(curve)]
    if curve.size == 0:
        return float("nan")
    return float(np.mean((curve >= low) & (curve <= high)))


def rising_fraction(values) -> float:
    """Share of layer steps l-1 → l at which the prompt-mean curve rises."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] < 2:
        raise LlmdynError(f"values must be [prompt, layer+1], got shape {v.shape}")
    return float(np.mean(np.diff(v.mean(0)) > 0))


def velocity_change(norms, *, min_size: int = 3, exclude_last: int = 1) -> float:
    """After − before slope of the hinge fit to the mean norm curve (`norm_velocity_fit`).

    Positive: the norm grows faster after the knot. A hinge on any convex curve gives a
    positive change, so a claim on it is compared with the untrained twin's in the chapter.
    ``exclude_last`` trailing layers are left out, as in the fit (the final norm's output).
    """
    fit = norm_velocity_fit(np.asarray(norms, dtype=np.float64), min_size=min_size,
                            exclude_last=exclude_last)
    return float(fit.after - fit.before)


def relative_velocity_change(norms, *, min_size: int = 3, exclude_last: int = 1) -> float:
    """:func:`velocity_change` in units of the mean slope of the mean norm curve.

    Dividing by the average increment per layer (over the same layers as the fit, so without
    the final norm's drop at l = L) makes models or twins whose norms grow on different scales
    comparable: 0 for a straight line, 2 when the slope after the knot exceeds the slope before
    it by twice the average slope.
    """
    curve = np.asarray(norms, dtype=np.float64).mean(0)  # [layer+1]
    if exclude_last:
        curve = curve[:-exclude_last]
    mean_slope = float(np.mean(np.diff(curve)))
    if not mean_slope > 0:
        return float("nan")  # no growth to compare a change of velocity with
    return velocity_change(norms, min_size=min_size, exclude_last=exclude_last) / mean_slope


def relative_velocity_changes(norms, *, min_size: int = 3, exclude_last: int = 1) -> np.ndarray:
    """Each prompt's :func:`velocity_change`, in units of the mean-curve's mean slope: ``[prompt]``.

    One scale for all prompts of a model (the average increment per layer of the prompt-mean
    curve, as in :func:`relative_velocity_change`), so a prompt whose norm grows little does not
    make its value undefined, and the mean over prompts compares a model with its twin.

    Args:
        norms: ``[prompt, layer+1]``.
        min_size: fewest layers on either side of each prompt's knot.
        exclude_last: trailing layers left out (the final norm's output).
    """
    curve = np.asarray(norms, dtype=np.float64).mean(0)  # [layer+1]
    if exclude_last:
        curve = curve[:-exclude_last]
    scale = float(np.mean(np.diff(curve)))
    change = per_prompt_values(
        lambda x: velocity_change(x, min_size=min_size, exclude_last=exclude_last), norms)
    return change / scale if scale > 0 else np.full(change.shape, np.nan)


def velocity_gain_over(norms, reference, *, min_size: int = 3) -> float:
    """Relative velocity change of ``norms`` minus that of ``reference`` (e.g. the twin).

    A hinge fit finds a positive change in any convex curve, so "norm velocity increases"
    (paper B §4.1) is judged against the untrained twin on the same prompts: positive when the
    trained model's norm speeds up more, relative to its own average growth, than the twin's.

    Args:
        norms: ``[prompt, layer+1]`` of the trained model.
        reference: ``[prompt, layer+1]`` of the reference on the same prompts (paired rows).
        min_size: fewest layers on either side of the knot.
    """
    return (relative_velocity_change(norms, min_size=min_size)
            - relative_velocity_change(reference, min_size=min_size))


def alignment_profile(ratio: np.ndarray) -> np.ndarray:
    """How well the other blocks' singular vectors diagonalise each block: ``[layer]``.

    Row mean of r(A_{i,j,K}) over j ≠ i (paper B Fig. 6 read row by row); low where block i
    is aligned with the rest of the network.

    Args:
        ratio: ``[layer, layer]`` r(A_{i,j,K}) (row i: the Jacobian J_i, column j: the basis).
    """
    ratio = np.asarray(ratio, dtype=float)
    if ratio.ndim != 2 or ratio.shape[0] != ratio.shape[1] or ratio.shape[0] < 2:
        raise LlmdynError(f"ratio must be [layer, layer] with layer >= 2, got {ratio.shape}")
    off = off_diagonal(ratio.shape[0])
    return np.array([row[mask].mean() for row, mask in zip(ratio, off, strict=True)])


def most_aligned_position(ratios) -> float:
    """Depth l / L of the block most aligned with the others, from ``[prompt, layer, layer]`` r(A).

    The block (1-based, so the last block gives 1) where the prompt-mean r(A_{i,j,K}),
    averaged over j ≠ i (:func:`alignment_profile`), is lowest.
    """
    r = np.asarray(ratios, dtype=np.float64)
    if r.ndim != 3:
        raise LlmdynError(f"ratios must be [prompt, layer, layer], got shape {r.shape}")
    return float((np.argmin(alignment_profile(r.mean(0))) + 1) / r.shape[1])


def profile_correlation(a, b) -> float:
    """Pearson r between the prompt-median profiles of two ``[prompt, layer]`` arrays."""
    a, b = np.median(np.asarray(a, dtype=np.float64), 0), np.median(np.asarray(b, np.float64), 0)
    return float(np.corrcoef(a, b)[0, 1])


def row_correlations(a, b) -> np.ndarray:
    """Pearson r between each prompt's two profiles: ``[prompt, layer]`` × 2 -> ``[prompt]``.

    One number per prompt (e.g. its per-layer coupling with and without a CoT suffix), so a
    claim about the profiles is judged over prompts rather than on one pooled median profile.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape or a.shape[1] < 2:
        raise LlmdynError(f"a and b must be [prompt, layer] of one shape with layer >= 2, got "
                          f"{a.shape} and {b.shape}")
    da, db = a - a.mean(1, keepdims=True), b - b.mean(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a flat profile has no r: NaN
        return (da * db).sum(1) / np.sqrt((da * da).sum(1) * (db * db).sum(1))
