"""Trajectory shape along depth: norms, line-shape score, equidistance, growth, expodistance."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core.arrays import ArrayLike, checked_array

Metric = Callable[[np.ndarray], np.ndarray]

# Convention: a trajectory is [..., layer+1, d_model] (points x^0..x^L along axis -2), as a numpy
# array or torch tensor; computed and returned as float64 numpy arrays.

_TRAJ = "[..., layer+1, d_model] with layer+1 >= 2"


def _traj(traj: ArrayLike) -> np.ndarray:
    x = checked_array(traj, "traj", 2, _TRAJ)
    if x.shape[-2] < 2:
        raise LlmdynError(f"traj: got shape {x.shape}; expected {_TRAJ}")
    return x


def norms(traj: ArrayLike) -> np.ndarray:
    """Norms ||x^l||_2 of every point. [..., layer+1, d_model] -> [..., layer+1]."""
    return np.linalg.norm(checked_array(traj, "traj", 1, "[..., d_model]"), axis=-1)


def line_shape_score(traj: ArrayLike) -> np.ndarray:
    """Line-shape score LSS = L / ||x~^L - x~^0|| (paper A §3.2 eqs 15-16; paper B §3.4 eq 1).

    x~^0 = x^0 and x~^l = x~^{l-1} + (x^l - x^{l-1}) / ||x^l - x^{l-1}||, so x~^L - x~^0 is the
    sum of the unit steps. [..., layer+1, d_model] -> [...]. LSS >= 1, exactly 1 for a straight
    monotone path, inf if the unit steps cancel. A zero-length step has no direction: it raises
    LlmdynError.
    """
    x = _traj(traj)
    steps = np.diff(x, axis=-2)  # [..., layer, d_model]
    lengths = np.linalg.norm(steps, axis=-1, keepdims=True)  # [..., layer, 1]
    if (lengths == 0).any():
        at = tuple(np.argwhere(lengths[..., 0] == 0)[0])
        raise LlmdynError(f"traj: has a zero-length step at {at}; expected x^l != x^(l-1)")
    end = np.linalg.norm((steps / lengths).sum(axis=-2), axis=-1)  # [...]
    with np.errstate(divide="ignore"):
        return steps.shape[-2] / end


def equidistance(traj: ArrayLike) -> np.ndarray:
    """Equidistance U = std_l / mean_l of ||x^{l+1} - x^l|| (paper B §3.5 eq 2).

    [..., layer+1, d_model] -> [...]. Population std (1/L); 0 for evenly spaced points, NaN if
    every step has length 0.
    """
    step = np.linalg.norm(np.diff(_traj(traj), axis=-2), axis=-1)  # [..., layer]
    with np.errstate(invalid="ignore", divide="ignore"):
        return step.std(axis=-1) / step.mean(axis=-1)


def layerwise_alpha(traj: ArrayLike) -> np.ndarray:
    """Growth rates alpha_l = ln(||x^l|| / ||x^{l-1}||), l = 1..L (paper A §3.3 eq 17).

    [..., layer+1, d_model] -> [..., layer]. A zero point raises LlmdynError.
    """
    n = norms(_traj(traj))  # [..., layer+1]
    if (n == 0).any():
        raise LlmdynError(f"traj: has {int((n == 0).sum())} zero point(s); expected x^l != 0")
    return np.diff(np.log(n), axis=-1)


def expodistance(traj: ArrayLike) -> np.ndarray:
    """Expodistance ED = Var_l(alpha_l) / (Avg_l alpha_l)^2 (paper A §3.3 eq 18).

    [..., layer+1, d_model] -> [...]. Population variance; 0 for geometric growth x^l = c^l x^0,
    inf or NaN where Avg alpha = 0. Points must be non-zero (see ``layerwise_alpha``).
    """
    alpha = layerwise_alpha(traj)  # [..., layer]
    with np.errstate(invalid="ignore", divide="ignore"):
        return alpha.var(axis=-1) / alpha.mean(axis=-1) ** 2


def windowed(metric: Metric, traj: ArrayLike, window: int = 11) -> np.ndarray:
    """Apply a trajectory metric over centred windows [l - w//2, l + w//2] (paper B Figs 3-4).

    Returns [..., layer+1]: entry l is the metric on points l - w//2 .. l + w//2, and NaN at the
    w//2 positions at each end where the window does not fit (keeps depth indices aligned).

    Args:
        metric: maps [..., window, d_model] to [...] (e.g. ``line_shape_score``).
        traj: [..., layer+1, d_model].
        window: odd window length, 3 <= window <= layer+1.
    """
    x = _traj(traj)
    n = x.shape[-2]
    if not isinstance(window, int | np.integer) or window % 2 == 0 or not 3 <= window <= n:
        raise LlmdynError(
            f"window: got {window!r}; expected an odd integer with 3 <= window <= layer+1 = {n}"
        )
    views = np.lib.stride_tricks.sliding_window_view(x, window, axis=-2)  # [..., n_win, d, w]
    vals = np.asarray(metric(np.swapaxes(views, -1, -2)), dtype=np.float64)  # [..., n_win]
    want = x.shape[:-2] + (n - window + 1,)
    if vals.shape != want:
        raise LlmdynError(f"metric: returned shape {vals.shape}; expected {want}")
    out = np.full(x.shape[:-1], np.nan)  # [..., layer+1]
    out[..., window // 2 : n - window // 2] = vals
    return out


def windowed_line_shape_score(traj: ArrayLike, window: int = 11) -> np.ndarray:
    """``windowed(line_shape_score, traj, window)``: [..., layer+1, d_model] -> [..., layer+1]."""
    return windowed(line_shape_score, traj, window)


def windowed_equidistance(traj: ArrayLike, window: int = 11) -> np.ndarray:
    """``windowed(equidistance, traj, window)``: [..., layer+1, d_model] -> [..., layer+1]."""
    return windowed(equidistance, traj, window)
