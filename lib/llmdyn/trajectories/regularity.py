"""Regularity of every token's trajectory over prompt suites: LSS, expodistance, step spacing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.core.arrays import checked_array
from llmdyn.core.store import ResultStore
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import (
    LastPoint,
    check_last_point,
    check_prompts_fit,
    trajectory,
    with_final_norm,
)
from llmdyn.trajectories import shape

Score = Literal["lss", "expodistance", "step_cv", "expodistance_no_first"]
SCORES: tuple[Score, ...] = ("lss", "expodistance", "step_cv", "expodistance_no_first")
_STORED = ("lss", "expodistance", "step_cv", "alpha")  # arrays cached per prompt


@dataclass(frozen=True)
class Regularity:
    """Per-token regularity of one prompt's trajectories x_t^0 … x_t^L (paper A §3.2–3.3).

    Attributes:
        lss: ``[tok]`` line-shape score over all L layers (paper A eq. 15); 1 for a straight
            line, about sqrt(L) for a random walk of L equal steps.
        expodistance: ``[tok]`` Var_l α_l / (Avg_l α_l)², α_l = ln(‖x^l‖ / ‖x^{l−1}‖)
            (paper A eqs. 17–18); 0 for norms growing by a constant factor per layer.
        step_cv: ``[tok]`` coefficient of variation std_l / mean_l of the step lengths
            ‖x^l − x^{l−1}‖ (paper A Fig 25; paper B's equidistance); 0 for equally spaced points.
        alpha: ``[tok, layer]`` the growth rates α_l, l = 1 … L, behind the expodistance.
    """

    lss: np.ndarray
    expodistance: np.ndarray
    step_cv: np.ndarray
    alpha: np.ndarray

    def __post_init__(self) -> None:
        """Check that every score has one value per token."""
        n = self.lss.shape
        if (len(n) != 1 or self.expodistance.shape != n or self.step_cv.shape != n
                or self.alpha.ndim != 2 or self.alpha.shape[0] != n[0]):
            raise LlmdynError(f"Regularity: scores must be [tok] and alpha [tok, layer], got "
                              f"lss {self.lss.shape}, expodistance {self.expodistance.shape}, "
                              f"step_cv {self.step_cv.shape}, alpha {self.alpha.shape}")

    @property
    def expodistance_no_first(self) -> np.ndarray:
        """``[tok]`` expodistance over α_2 … α_L, leaving out the first block's growth.

        In trained models the first block often multiplies the small embedding's norm many
        times over, and that single rate can dominate Var_l α_l.
        """
        a = self.alpha[:, 1:]  # [tok, layer-1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return a.var(axis=-1) / a.mean(axis=-1) ** 2


def trajectory_regularity(traj: np.ndarray | torch.Tensor) -> Regularity:
    """Every regularity score of each token's trajectory.

    Args:
        traj: ``[tok, layer+1, d_model]`` (e.g. ``Trajectory.per_token()``).

    Returns:
        The scores, each ``[tok]``, float64.
    """
    x = checked_array(traj, "traj", 3, "[tok, layer+1, d_model]", exact=True)
    return Regularity(lss=shape.line_shape_score(x), expodistance=shape.expodistance(x),
                      step_cv=shape.equidistance(x), alpha=shape.layerwise_alpha(x))


def regularity(
    model: LoadedModel,
    prompts: Sequence[str],
    *,
    last_point: LastPoint = "final_norm",
    store: ResultStore | None = None,
    progress: bool = True,
    cut_long_prompts: bool = False,
) -> list[Regularity]:
    """Regularity of every token of each prompt, one forward pass per prompt, cached per prompt.

    Both conventions for the last point are computed and cached together, so asking for the
    other one later costs nothing.

    Args:
        model: a loaded model.
        prompts: texts; each is one cached item.
        last_point: ``"final_norm"`` (the papers', paper A eq. 7: the final norm belongs to the
            last block, as in HF's ``output_hidden_states``) or ``"block_output"`` (each
            trajectory ends at the raw output of the last block).
        store: results cache (None: compute without caching).
        progress: show a progress bar over prompts (with a store).
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        One :class:`Regularity` per prompt.
    """
    prompts = checks.prompt_texts(prompts)
    check_last_point(last_point)

    def compute(prompt: str) -> dict[str, np.ndarray]:
        states = trajectory(model, prompt, last_point="block_output",
                            cut_long_prompts=cut_long_prompts).states.double()
        out = {}
        for name, s in (("block_output", states), ("final_norm", with_final_norm(model, states))):
            r = trajectory_regularity(s.transpose(0, 1))  # on [tok, layer+1, d_model]
            out.update({f"{name}_{key}": getattr(r, key) for key in _STORED})
        return out

    check_prompts_fit(model, prompts, cut_long_prompts=cut_long_prompts)  # before the cache
    if store is None:
        results = [compute(p) for p in prompts]
    else:
        results = store.map("regularity", {"dtype": "float32", "arrays": list(_STORED)},
                            prompts, compute, progress=progress)
    return [Regularity(**{key: r[f"{last_point}_{key}"] for key in _STORED}) for r in results]


def alpha_profiles(results: Sequence[Regularity]) -> np.ndarray:
    """Median growth rate α_l over each prompt's tokens: ``[prompt, layer]``.

    Exponential growth is a flat profile; equal steps of length s from a small x^0 give
    α_l ≈ ln(l / (l − 1)), which falls like 1/l.

    Args:
        results: one :class:`Regularity` per prompt, all from one model.

    Returns:
        ``[prompt, layer]`` float64.
    """
    widths = {r.alpha.shape[1] for r in results}
    if len(widths) != 1:
        raise LlmdynError(f"results come from models of different depths {sorted(widths)}; "
                          "pass one model's results")
    return np.stack([np.median(r.alpha, axis=0) for r in results])  # [prompt, layer]


def per_prompt(results: Sequence[Regularity], score: Score, *,
               reduce: Literal["mean", "median"] = "mean",
               skip_first: bool = False) -> np.ndarray:
    """One score reduced over each prompt's tokens: ``[prompt]`` (one point per prompt in Fig 5).

    Args:
        results: one :class:`Regularity` per prompt.
        score: one of `SCORES` (``"expodistance_no_first"`` leaves out the first block).
        reduce: ``"mean"`` (paper A's averages) or ``"median"`` (robust to the few tokens whose
            expodistance explodes because their norm barely changes, Avg α ≈ 0).
        skip_first: leave out each prompt's first token (often an attention sink whose norm
            jumps at one layer); a one-token prompt then gives NaN.

    Returns:
        ``[prompt]`` float64.
    """
    if score not in SCORES:
        raise LlmdynError(f"score: got {score!r}; expected one of {SCORES}")
    if reduce not in ("mean", "median"):
        raise LlmdynError(f"reduce: got {reduce!r}; expected 'mean' or 'median'")
    out = []
    for r in results:
        values = getattr(r, score)[1:] if skip_first else getattr(r, score)  # [tok]
        out.append(float(getattr(np, reduce)(values)) if values.size else np.nan)
    return np.array(out)


def series(results: Mapping[str, Mapping[str, Mapping[str, Sequence[Regularity]]]],
           names: Sequence[str], score: Score, *, last: LastPoint = "final_norm",
           reduce: Literal["mean", "median"] = "mean",
           skip_first: bool = False) -> dict[str, list[np.ndarray]]:
    """Per-prompt values of one score for each state, one ``[prompt]`` array per model.

    Args:
        results: model -> state ("trained"/"untrained") -> last point -> one
            :class:`Regularity` per prompt (what chapter 07 computes).
        names: the models, in the order of the arrays.
        score: one of `SCORES`.
        last: the trajectory's last point, "final_norm" (the papers') or "block_output".
        reduce: as in :func:`per_prompt`.
        skip_first: as in :func:`per_prompt`.

    Returns:
        state -> ``[model][prompt]``.
    """
    states = list(dict.fromkeys(s for name in names for s in results[name]))
    return {state: [per_prompt(results[name][state][last], score, reduce=reduce,
                               skip_first=skip_first) for name in names]
            for state in states}
