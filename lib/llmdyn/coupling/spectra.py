"""Singular values of the block Jacobians against depth, and how the top one scales with depth."""

from __future__ import annotations

import numpy as np

from llmdyn import LlmdynError
from llmdyn.stats.bootstrap import r2
from llmdyn.stats.regression import LinearFit, ols


def _spectra(S) -> np.ndarray:
    """``[prompt, layer, k]`` float64, positive, from ``[layer, k]`` or ``[prompt, layer, k]``."""
    S = np.asarray(S, dtype=np.float64)
    if S.ndim == 2:
        S = S[None]
    if S.ndim != 3 or S.shape[1] < 3:
        raise LlmdynError(f"S must be [layer, k] or [prompt, layer, k] with at least 3 layers, "
                          f"got shape {S.shape}")
    if not (np.isfinite(S).all() and (S[..., 0] > 0).all()):
        raise LlmdynError("S must hold finite singular values with a positive top one")
    return S


def depth_axis(n_layers: int, first_layer: int = 1) -> np.ndarray:
    """The paper's layer numbers l = first_layer … first_layer + n_layers − 1, ``[layer]``."""
    return np.arange(first_layer, first_layer + n_layers, dtype=np.float64)


def inverse_top_fit(S, *, first_layer: int = 1) -> LinearFit:
    """OLS of 1/σ₁(l) against depth l, pooled over prompts (paper A App. A.3, Figs 33–34).

    Li & Papyan's residual alignment has top singular values scaling inversely with depth,
    σ₁ ∝ 1/l, i.e. 1/σ₁ = a + b·l; R² says how well a straight line describes 1/σ₁.

    Args:
        S: singular values, descending, ``[layer, k]`` or ``[prompt, layer, k]``.
        first_layer: the paper's number of row 0 (l = block + 1).

    Returns:
        The fit of 1/σ₁ on l over every [prompt, layer] point.
    """
    return ols(*_inverse_top_points(S, first_layer))


def _inverse_top_points(S, first_layer: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(depth l, 1/σ₁) at every [prompt, layer], each ``[prompt, layer]``."""
    S = _spectra(S)
    depth = np.broadcast_to(depth_axis(S.shape[1], first_layer), S.shape[:2])  # [prompt, layer]
    return depth, 1.0 / S[..., 0]


def inverse_depth_r2_gain(S_untrained, S_trained) -> float:
    """R²(untrained) − R²(trained) of the line 1/σ₁ = a + b·l (:func:`inverse_top_fit`).

    Args:
        S_untrained: singular values ``[prompt, layer, k]`` of the untrained twin.
        S_trained: the same for the trained model (any number of prompts).

    Returns:
        Positive when the inverse depth scaling fits the untrained twin better. The R² is the
        squared Pearson r of the pooled points (vectorised, so a bootstrap over prompts is cheap).
    """
    fits = [r2(*(a.reshape(1, -1) for a in _inverse_top_points(S)))[0]
            for S in (S_untrained, S_trained)]
    return float(fits[0] - fits[1])


def power_law_fit(S, *, first_layer: int = 1) -> LinearFit:
    """OLS of ln σ₁ against ln l: the slope β in σ₁ ∝ l^β (β = −1 is inverse scaling).

    Args:
        S: singular values ``[layer, k]`` or ``[prompt, layer, k]``.
        first_layer: the paper's number of row 0 (must make every l positive).

    Returns:
        The log–log fit pooled over prompts.
    """
    if first_layer < 1:
        raise LlmdynError(f"first_layer must be >= 1 for a log–log fit, got {first_layer}")
    S = _spectra(S)
    depth = np.broadcast_to(depth_axis(S.shape[1], first_layer), S.shape[:2])
    return ols(np.log(depth), np.log(S[..., 0]))


def prompt_inverse_r2(S) -> np.ndarray:
    """Each prompt's R² of the line 1/σ₁ = a + b·l over its layers; ``[prompt]`` from ``S``.

    ``S``: singular values ``[prompt, layer, k]``.

    One number per prompt, so that the trained and untrained twins' R² (:func:`inverse_top_fit`
    pools the prompts) can be compared prompt by prompt with a paired interval.
    """
    depth, inverse = _inverse_top_points(S)  # [prompt, layer] each
    return r2(depth, inverse)
