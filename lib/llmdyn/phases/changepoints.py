"""Change points along depth: least-squares estimates of the Thought -> Fixation boundary.

Paper B draws the boundary between its two phases by eye (dotted lines in Figs 2-5, 13). Here
each of its three signatures gives one layer:

* the windowed LSS stops rising and starts falling (§4.2, Fig 3): :func:`lss_peak_layer`;
* the spread of logit-lens entropy across prompts rises (§4.4, Fig 5):
  :func:`entropy_spread_layer`;
* the norm velocity d||x^l||/dl changes (§4.1, Fig 2): :func:`norm_velocity_layer`.

Each has a ``*_fit`` twin returning the whole :class:`ChangePoint` (levels or slopes, gain).

All three use exhaustive two-segment least-squares fits (no thresholds): a mean shift
(:func:`step_changepoint`) or a continuous broken line (:func:`hinge_changepoint`) over every
admissible split, keeping the one with the smallest squared error. Layer indices count block
boundaries as the curves do: index l is x^l, 0 = embeddings, L = the last block's output after
the final norm (the papers' end point).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core import masked


class ChangePoint(NamedTuple):
    """The best two-segment fit of a curve.

    ``before`` and ``after`` are segment means for a step fit and slopes for a hinge fit.
    """

    layer: int  # index of the change (step: first index of the second segment; hinge: the knot)
    before: float  # level or slope of the first segment
    after: float  # level or slope of the second segment
    gain: float  # 1 - SSE(two segments) / SSE(one segment), in [0, 1]; 0 = no better than one


def _curve(y: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The finite entries of a 1-D curve and their indices; raise if fewer than two."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise LlmdynError(f"{name} must be a 1-D curve [layer+1], got shape {y.shape}")
    idx = np.flatnonzero(np.isfinite(y))
    if len(idx) < 2:
        raise LlmdynError(f"{name} has {len(idx)} finite value(s); a change-point needs >= 2")
    return idx, y[idx]


def _min_size(min_size: int, n: int, shared: bool) -> int:
    """The requested segment length, shrunk so that two segments fit in n points (short curves)."""
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 1:
        raise LlmdynError(f"min_size must be an int >= 1, got {min_size!r}")
    return max(1, min(min_size, (n + 1) // 2 if shared else n // 2))


def step_changepoint(y: np.ndarray, *, min_size: int = 3) -> ChangePoint:
    """Least-squares split of a curve into two constant segments (a mean shift).

    Minimises ``sum_{l<b} (y_l - mean_{<b})^2 + sum_{l>=b} (y_l - mean_{>=b})^2`` over every b
    that leaves at least ``min_size`` points in each segment (shrunk for very short curves).
    NaN entries are skipped; the returned layer indexes the original curve.

    Args:
        y: ``[layer+1]`` curve.
        min_size: minimum number of points per segment.

    Returns:
        The change-point; ``layer`` is the first index of the second segment.
    """
    idx, v = _curve(y, "y")
    n = len(v)
    m = _min_size(min_size, n, shared=False)
    csum, csq = np.cumsum(v), np.cumsum(v ** 2)
    best = None
    for b in range(m, n - m + 1):
        left = csq[b - 1] - csum[b - 1] ** 2 / b
        right = (csq[-1] - csq[b - 1]) - (csum[-1] - csum[b - 1]) ** 2 / (n - b)
        if best is None or left + right < best[0] - 1e-12:
            best = (left + right, b)
    sse, b = best
    total = float(((v - v.mean()) ** 2).sum())
    gain = 1.0 - sse / total if total > 0 else 0.0
    return ChangePoint(int(idx[b]), float(v[:b].mean()), float(v[b:].mean()), float(gain))


def hinge_changepoint(y: np.ndarray, *, min_size: int = 3) -> ChangePoint:
    """Least-squares continuous two-segment line (a hinge) through a curve.

    Fits ``y_l ≈ a + s_1 l + (s_2 - s_1) max(0, l - k)`` for every knot k at a sample with at
    least ``min_size`` points on each side, counting the knot in both (shrunk for very short
    curves), and keeps the knot with the smallest squared error. The knot is where the trend
    changes, e.g. where a rising curve turns down (s_1 > 0 > s_2) or a velocity increases
    (s_2 > s_1). NaN entries are skipped; the returned layer indexes the original curve.

    Args:
        y: ``[layer+1]`` curve.
        min_size: minimum number of points per segment (knot included).

    Returns:
        The change-point; ``before`` and ``after`` are the slopes s_1 and s_2 per layer.
    """
    idx, v = _curve(y, "y")
    x = idx.astype(np.float64)
    n = len(v)
    m = _min_size(min_size, n, shared=True)
    line = np.stack([np.ones(n), x], 1)  # [n, 2]
    total = float(((v - line @ np.linalg.lstsq(line, v, rcond=None)[0]) ** 2).sum())
    best = None
    for k in range(m - 1, n - m + 1):
        design = np.column_stack([line, np.maximum(0.0, x - x[k])])  # [n, 3]
        coef = np.linalg.lstsq(design, v, rcond=None)[0]  # [3]
        sse = float(((v - design @ coef) ** 2).sum())
        if best is None or sse < best[0] - 1e-12:
            best = (sse, k, coef)
    sse, k, coef = best
    gain = 1.0 - sse / total if total > 1e-12 else 0.0
    return ChangePoint(int(idx[k]), float(coef[1]), float(coef[1] + coef[2]), float(gain))


def _per_layer(values: np.ndarray, name: str, reduce: str) -> np.ndarray:
    """Mean or std over prompts of ``[prompt, layer+1]`` values (NaN columns stay NaN)."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] < 2:
        raise LlmdynError(f"{name} must be [prompt, layer+1] with layer+1 >= 2, got {v.shape}")
    return masked.columns(v, reduce)  # columns outside every window stay NaN


def _drop_last(curve: np.ndarray, exclude_last: int) -> np.ndarray:
    if isinstance(exclude_last, bool) or not isinstance(exclude_last, int) or exclude_last < 0:
        raise LlmdynError(f"exclude_last must be an int >= 0, got {exclude_last!r}")
    out = curve.copy()
    if exclude_last:
        out[-exclude_last:] = np.nan
    return out


def lss_peak_layer(windowed_lss: np.ndarray, *, min_size: int = 3, exclude_last: int = 0) -> int:
    """``lss_peak_fit(...).layer``: the layer where the windowed LSS turns down (see there)."""
    return lss_peak_fit(windowed_lss, min_size=min_size, exclude_last=exclude_last).layer


def lss_peak_fit(windowed_lss: np.ndarray, *, min_size: int = 3,
                 exclude_last: int = 0) -> ChangePoint:
    """Layer where the mean windowed LSS stops rising and starts falling (paper B §4.2, Fig 3).

    Paper B finds LSS largest (least linear) inside Thought and falling through Fixation. We
    average the windowed LSS over prompts and fit a hinge (:func:`hinge_changepoint`); its knot
    is the turn of the trend, which is robust to the layer-to-layer jitter that makes a plain
    argmax jump between neighbouring bumps. If the fitted slopes do not rise then fall, the knot
    still marks the strongest change of trend.

    Args:
        windowed_lss: ``[prompt, layer+1]``, NaN where the window does not fit.
        min_size: minimum points per segment.
        exclude_last: trailing layers left out of the fit.

    Returns:
        The hinge fit; ``.layer`` is the index l of the knot (x^l). A model so shallow that
        one window fits (3 blocks, window 3, x^L apart) has a one-point curve: no trend to
        turn, so the knot is that point, with no slopes and gain 0.
    """
    curve = _drop_last(_per_layer(windowed_lss, "windowed_lss", "mean"), exclude_last)
    finite = np.flatnonzero(np.isfinite(curve))
    if len(finite) == 1:
        return ChangePoint(int(finite[0]), math.nan, math.nan, 0.0)
    return hinge_changepoint(curve, min_size=min_size)


def entropy_spread_layer(entropy: np.ndarray, *, min_size: int = 3,
                         exclude_last: int = 1) -> int:
    """``entropy_spread_fit(...).layer``: where the entropy spread steps up (see there)."""
    return entropy_spread_fit(entropy, min_size=min_size, exclude_last=exclude_last).layer


def entropy_spread_fit(entropy: np.ndarray, *, min_size: int = 3,
                       exclude_last: int = 1) -> ChangePoint:
    """First layer of high spread of logit-lens entropy across prompts (paper B §4.4, Fig 5).

    Paper B: entropies agree across prompts in Thought and vary widely in Fixation. We take the
    across-prompt standard deviation at every layer and find the least-squares mean shift
    (:func:`step_changepoint`); the first layer of the second segment is the estimate. The last
    layer is left out by default because its entropy jumps for reasons of its own (the final
    norm; paper B §5.3 and App. B.2), which would otherwise pull the split to the very end.

    Args:
        entropy: ``[prompt, layer+1]`` in nats, from :func:`llmdyn.trajectories.lens_entropy`.
        min_size: minimum points per segment.
        exclude_last: trailing layers left out of the fit.

    Returns:
        The step fit; ``.layer`` is the index l where the spread steps up (x^l).
    """
    curve = _drop_last(_per_layer(entropy, "entropy", "std"), exclude_last)
    return step_changepoint(curve, min_size=min_size)


def norm_velocity_layer(norms: np.ndarray, *, min_size: int = 3, exclude_last: int = 1) -> int:
    """``norm_velocity_fit(...).layer``: where the norm's growth rate changes (see there)."""
    return norm_velocity_fit(norms, min_size=min_size, exclude_last=exclude_last).layer


def norm_velocity_fit(norms: np.ndarray, *, min_size: int = 3,
                      exclude_last: int = 1) -> ChangePoint:
    """Layer where the growth rate of the mean norm changes (paper B §4.1, Fig 2).

    Paper B: norms grow steadily through Thought, and Fixation begins with an increase in token
    velocity. We fit a continuous two-segment line to the mean norm curve over prompts
    (:func:`hinge_changepoint`): its knot is where the per-layer increment (the velocity) jumps
    from one constant to another, the least-squares version of the paper's dotted line. On a
    smooth exponential there is no true corner and the knot lands in the late, steep part; the
    fit's ``gain`` (see :func:`hinge_changepoint`) says how much better two lines fit than one.

    Args:
        norms: ``[prompt, layer+1]`` norms ||x^l||.
        min_size: minimum points per segment.
        exclude_last: trailing layers left out of the fit. Default 1: under the papers' end
            point x^L is the final norm's output, whose norm is that of a normalised vector
            (SmolLM2: about 46 against 600 for x^(L-1)), a drop that is no velocity.

    Returns:
        The hinge fit; ``.layer`` is the index l of the knot (x^l), ``.before``/``.after`` the
        velocities.
    """
    curve = _drop_last(_per_layer(norms, "norms", "mean"), exclude_last)
    return hinge_changepoint(curve, min_size=min_size)
