"""Geometry of token trajectories along depth: cached states, norms, windowed LSS, equidistance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core import checks, masked
from llmdyn.core.store import ResultStore
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import (
    LastPoint,
    check_last_point,
    check_prompts_fit,
    final_norm,
    trajectory,
    with_final_norm,
)
from llmdyn.trajectories import shape


def _prompts(prompts: Sequence[str]) -> list[str]:
    return checks.prompt_texts(prompts)


def token_states(
    model: LoadedModel,
    prompts: Sequence[str],
    store: ResultStore | None = None,
    *,
    token: int = -1,
    last_point: LastPoint = "final_norm",
    cut_long_prompts: bool = False,
) -> np.ndarray:
    """Hidden states x^0 … x^L of one token of each prompt, one forward pass per prompt, cached.

    Both end points are cached together (the block output and its image under the final norm),
    so the other convention costs nothing later; `last_point` only picks which one row L holds.

    Args:
        model: a loaded model.
        prompts: texts; each is one cached item (keyed by its text).
        store: results cache (None: compute without caching).
        token: which token (default the last one, whose next token the model predicts).
        last_point: ``"final_norm"`` (the papers': x^L after the final norm, as HF's
            ``hidden_states[-1]``) or ``"block_output"`` (x^L before it).
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        ``[prompt, layer+1, d_model]`` float32.
    """
    prompts = _prompts(prompts)
    check_last_point(last_point)
    if isinstance(token, bool) or not isinstance(token, int):
        raise LlmdynError(f"token must be an int index such as -1, got {token!r}")

    def compute(prompt: str) -> dict[str, np.ndarray]:
        tr = trajectory(model, prompt, last_point="block_output",
                        cut_long_prompts=cut_long_prompts)
        n_tok = len(tr.tokens)
        if not -n_tok <= token < n_tok:
            raise LlmdynError(f"token={token} is outside the {n_tok} tokens of {prompt[:40]!r}")
        states = tr.states[:, token]  # [layer+1, d_model], ending at the block output
        return {"states": states.float().numpy(),
                "final_norm": final_norm(model, states[-1]).float().numpy()}  # [d_model]

    check_prompts_fit(model, prompts, cut_long_prompts=cut_long_prompts)  # before the cache
    if store is None:
        rows = [compute(p) for p in prompts]
    else:
        rows = store.map("token_states", {"token": token, "dtype": "float32"}, prompts, compute)
    out = np.stack([r["states"] for r in rows])  # [prompt, layer+1, d_model]
    if last_point == "final_norm":
        out[:, -1] = np.stack([r["final_norm"] for r in rows])
    return out


@dataclass(frozen=True)
class DepthProfile:
    """Per-prompt curves of one token's trajectory against depth (paper B Figs 2-4).

    Attributes:
        norms: ``[prompt, layer+1]`` norms ||x^l|| (Fig 2).
        lss: ``[prompt, layer+1]`` line-shape score over the centred window [l - w//2, l + w//2]
            (Fig 3); NaN where the window does not fit.
        equidistance: ``[prompt, layer+1]`` equidistance over the same windows (Fig 4); NaN
            where the window does not fit.
        window: the window length w.
    """

    norms: np.ndarray
    lss: np.ndarray
    equidistance: np.ndarray
    window: int

    def __post_init__(self) -> None:
        """Check that the three curves share one shape."""
        for name in ("lss", "equidistance"):
            got = getattr(self, name).shape
            if got != self.norms.shape:
                raise LlmdynError(f"{name} has shape {got}; expected norms' {self.norms.shape}")

    @property
    def n_layers(self) -> int:
        """The number of blocks L (the curves have L + 1 points)."""
        return self.norms.shape[1] - 1


def depth_profile(states: np.ndarray, window: int = 11, *,
                  include_last: bool = False) -> DepthProfile:
    """Norms, windowed LSS and windowed equidistance of trajectories (paper B §4.1-4.3).

    LSS is paper B eq. 1 and equidistance eq. 2, each applied to the 11-layer window centred
    at depth l as in Figs 3 and 4. No window holds x^L unless ``include_last``: x^L is read
    after the final norm (a different map from every other layer's, paper B §5.3), so a window
    reaching it would score the norm's jump rather than the blocks' path. The windows whose
    span reaches L are NaN (the norm at L is kept: it is shown apart).

    Args:
        states: ``[prompt, layer+1, d_model]``, e.g. from :func:`token_states`.
        window: odd window length, 3 <= window <= layer (layer+1 with ``include_last``;
            paper B: 11).
        include_last: let windows hold x^L.

    Returns:
        The per-prompt curves.
    """
    x = np.asarray(states, dtype=np.float64)
    if x.ndim != 3:
        raise LlmdynError(f"states must be [prompt, layer+1, d_model], got shape {x.shape}")
    if not isinstance(include_last, bool):
        raise LlmdynError(f"include_last must be True or False, got {include_last!r}")
    inner = x if include_last else x[:, :-1]  # [prompt, points, d_model]
    if not 3 <= window <= inner.shape[1]:
        raise LlmdynError(f"window {window} does not fit the {inner.shape[1]} points x^0 … "
                          f"x^{inner.shape[1] - 1} (x^L {'in' if include_last else 'apart'}); "
                          "pass llmdyn.phases.window_that_fits(window, L)")
    pad = [(0, 0), (0, x.shape[1] - inner.shape[1])]  # the window centred at L never fits
    return DepthProfile(norms=shape.norms(x),  # [prompt, layer+1]
                        lss=np.pad(shape.windowed_line_shape_score(inner, window), pad,
                                   constant_values=np.nan),
                        equidistance=np.pad(shape.windowed_equidistance(inner, window), pad,
                                            constant_values=np.nan),
                        window=int(window))


def seed_mean(profiles: Sequence[DepthProfile]) -> DepthProfile:
    """Prompt by prompt mean of several untrained twins' profiles (one per seed).

    The twins see the same prompts as the trained model, so the mean keeps the pairing by
    prompt that the chapters' trained-minus-untrained intervals rely on; the spread over
    seeds is reported beside it from the single-seed profiles.

    Args:
        profiles: one :class:`DepthProfile` per seed, each ``[prompt, layer+1]``, same window.

    Returns:
        Their mean curves (a window's NaN ends stay NaN).
    """
    profiles = list(profiles)
    if not profiles or len({(q.norms.shape, q.window) for q in profiles}) != 1:
        raise LlmdynError("seed_mean needs one or more profiles of one shape and window, got "
                          f"{[(q.norms.shape, q.window) for q in profiles]}")
    return DepthProfile(*(np.mean([getattr(q, k) for q in profiles], axis=0)
                          for k in ("norms", "lss", "equidistance")), window=profiles[0].window)


def residuals(values: np.ndarray) -> np.ndarray:
    """Each prompt's curve minus the mean curve over prompts (paper B Fig 13).

    ``[prompt, layer+1]`` -> ``[prompt, layer+1]``; NaN entries stay NaN and are left out of the
    mean.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise LlmdynError(f"values must be [prompt, layer+1], got shape {v.shape}")
    return v - masked.columns(v, "mean")[None]  # an all-NaN column (no window fits) stays NaN


def layer_mean(values: np.ndarray, first: int = 0, last: int | None = None) -> float:
    """Mean of ``values[prompt, l]`` over prompts and layers first <= l <= last, NaNs left out.

    Paper B Fig 12 compares models by this mean over all layers and over the Fixation layers.

    Args:
        values: ``[prompt, layer+1]``.
        first: first layer index included.
        last: last layer index included (None: the last one, L).

    Returns:
        The mean; NaN if no finite entry lies in the range.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise LlmdynError(f"values must be [prompt, layer+1], got shape {v.shape}")
    n = v.shape[1]
    last = n - 1 if last is None else last
    if not 0 <= first <= last < n:
        raise LlmdynError(f"need 0 <= first <= last < {n}, got first={first}, last={last}")
    block = v[:, first:last + 1]
    return float(np.nanmean(block)) if np.isfinite(block).any() else float("nan")


def layer_range(fractions: Sequence[float], n_layers: int, *,
                 skip_last: bool = False) -> tuple[int, int]:
    """Layers (first, last) covering a fraction range of depth, e.g. (0.5, 1.0) -> (L/2, L).

    Args:
        fractions: (start, end) with 0 <= start < end <= 1, as fractions of the depth L.
        n_layers: the number of blocks L.
        skip_last: end at most at layer L - 1, leaving out the last block's step.

    Returns:
        Layer indices 0 <= first < last <= L (rounded; at least one step apart).
    """
    if len(fractions) != 2 or not 0 <= fractions[0] < fractions[1] <= 1:
        raise LlmdynError(f"fractions must be (start, end) with 0 <= start < end <= 1, "
                          f"got {fractions!r}")
    top = n_layers - 1 if skip_last else n_layers
    if top < 1:
        raise LlmdynError(f"n_layers={n_layers} leaves no step to show (skip_last={skip_last})")
    first = min(int(round(fractions[0] * n_layers)), top - 1)
    last = min(max(int(round(fractions[1] * n_layers)), first + 1), top)
    return first, last


def step_lengths(traj: np.ndarray) -> np.ndarray:
    """Step lengths ||x^l - x^{l-1}||: [..., layer+1, d_model] -> [..., layer]."""
    x = np.asarray(traj, dtype=np.float64)
    if x.ndim < 2 or x.shape[-2] < 2:
        raise LlmdynError(f"traj must be [..., layer+1, d_model] with layer+1 >= 2, got {x.shape}")
    return np.linalg.norm(np.diff(x, axis=-2), axis=-1)


def last_step_ratio(traj: np.ndarray) -> np.ndarray:
    """How abrupt the last block is: ||x^L - x^{L-1}|| / median_l ||x^l - x^{l-1}|| (l < L).

    Paper B (Fig 1, §5.3) sees an abrupt change at the last layer. [..., layer+1, d_model] ->
    [...]; needs layer >= 2.
    """
    steps = step_lengths(traj)  # [..., layer]
    if steps.shape[-1] < 2:
        raise LlmdynError(f"traj needs at least 3 points for last_step_ratio, got {steps.shape}")
    return steps[..., -1] / np.median(steps[..., :-1], axis=-1)


class TrajectorySummary(NamedTuple):
    """Per-token numbers behind paper B's Fig 1 claims, for one prompt."""

    growth: np.ndarray  # [tok] ||x^last|| / ||x^first|| over the window: > 1 moves outward
    window_lss: np.ndarray  # [tok] LSS of x^first … x^last (1 = one clear direction)
    full_lss: np.ndarray  # [tok] LSS of the whole trajectory x^0 … x^L
    last_step: np.ndarray  # [tok] last_step_ratio: the final block's step / the median step


def trajectory_summary(traj: np.ndarray, window: tuple[int, int]) -> TrajectorySummary:
    """Outward growth, straightness and the last block's jump of each token's trajectory.

    Args:
        traj: ``[tok, layer+1, d_model]`` (``Trajectory.per_token()``).
        window: (first, last) layer indices of the stretch examined, both included, first < last.

    Returns:
        The per-token summary (LSS is paper B eq. 1).
    """
    x = np.asarray(traj, dtype=np.float64)
    if x.ndim != 3 or x.shape[1] < 3:
        raise LlmdynError(f"traj must be [tok, layer+1, d_model] with layer+1 >= 3, got {x.shape}")
    first, last = window
    if not 0 <= first < last < x.shape[1]:
        raise LlmdynError(f"window must be (first, last) with 0 <= first < last <= "
                          f"{x.shape[1] - 1}, got {window!r}")
    n = shape.norms(x)  # [tok, layer+1]
    return TrajectorySummary(growth=n[:, last] / n[:, first],
                             window_lss=shape.line_shape_score(x[:, first:last + 1]),
                             full_lss=shape.line_shape_score(x),
                             last_step=last_step_ratio(x))


class PromptSummary(NamedTuple):
    """One prompt's per-token Fig 1 numbers, for the tokens from ``drop_first`` on."""

    tokens: tuple[str, ...]  # [tok] the tokens kept
    summary: TrajectorySummary  # [tok] each field, with X^L after the final norm (the papers')
    block_last: np.ndarray  # [tok] last_step_ratio with X^L before the final norm


def summarize_prompts(model: LoadedModel, prompts: Sequence[str], window: tuple[int, int], *,
                      drop_first: int = 1, cut_long_prompts: bool = False
                      ) -> list[PromptSummary]:
    """:func:`trajectory_summary` of every prompt, from one forward pass each.

    The pass keeps the last block's raw output; its image under the final norm gives the
    papers' X^L (the same bits as ``trajectory(..., last_point="final_norm")``), so both ends
    of the last step cost one pass.

    Args:
        model: a loaded model.
        prompts: texts.
        window: (first, last) layers of the stretch examined (e.g. the deep window).
        drop_first: leading tokens left out (attention sinks); at least 2 tokens must remain.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        One :class:`PromptSummary` per prompt.
    """
    out = []
    for prompt in _prompts(prompts):
        tr = trajectory(model, prompt, last_point="block_output",
                        cut_long_prompts=cut_long_prompts)
        if len(tr.tokens) - drop_first < 2:
            raise LlmdynError(f"drop_first={drop_first} leaves fewer than 2 of the "
                              f"{len(tr.tokens)} tokens of {prompt[:40]!r}; lower it")
        raw = tr.states[:, drop_first:]  # [layer+1, tok, d_model], X^L before the final norm
        normed = with_final_norm(model, raw).transpose(0, 1).double().numpy()
        # normed: [tok, layer+1, d_model]
        out.append(PromptSummary(tokens=tr.tokens[drop_first:],
                                 summary=trajectory_summary(normed, window),
                                 block_last=last_step_ratio(raw.transpose(0, 1).double().numpy())))
    return out


class PromptMedians(NamedTuple):
    """Each prompt's median over its tokens of the Fig 1 numbers: one value per prompt."""

    summary: TrajectorySummary  # [prompt] each field
    block_last: np.ndarray  # [prompt] last step ratio with X^L before the final norm
    n_tokens: np.ndarray  # [prompt] tokens each median is taken over


def median_over_tokens(summaries: Sequence[PromptSummary]) -> PromptMedians:
    """Each prompt's median over its tokens: the claims' one number per prompt.

    The tokens of one prompt share its context, so a claim is judged over prompts
    (`llmdyn.claims.units`), on these medians.
    """
    if not summaries:
        raise LlmdynError("summaries is empty; pass at least one prompt's PromptSummary")
    fields = TrajectorySummary._fields
    medians = TrajectorySummary(*(np.array([np.median(getattr(s.summary, f)) for s in summaries])
                                  for f in fields))
    return PromptMedians(summary=medians,
                         block_last=np.array([np.median(s.block_last) for s in summaries]),
                         n_tokens=np.array([len(s.tokens) for s in summaries]))
