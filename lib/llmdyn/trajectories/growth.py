"""A bounded expodistance: how far a token's norm growth is from exponential, stable near α = 0."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from llmdyn import LlmdynError
from llmdyn.trajectories.regularity import Regularity

__all__ = ["per_prompt_variance_share", "variance_share"]


def variance_share(alpha: np.ndarray, *, skip_first_block: bool = True) -> np.ndarray:
    """Var_l α_l / Avg_l α_l² per token: the expodistance ED bounded as ED / (1 + ED).

    The expodistance (paper A eq. 18) divides Var α by (Avg α)², so a token whose norm barely
    changes (Avg α ≈ 0, as after the first block of some models) gets an arbitrarily large
    value. The share of α's mean square that is variance lies in [0, 1]: 0 for growth by one
    factor per layer (exponential), 1 for no net growth. It is monotone in the expodistance, so
    it ranks tokens the same way, and it is finite and stable near α = 0.

    Args:
        alpha: ``[tok, layer]`` growth rates α_l = ln(‖x^l‖ / ‖x^{l−1}‖), l = 1 … L.
        skip_first_block: leave out α_1, the first block's rate (as ``expodistance_no_first``).

    Returns:
        ``[tok]`` float64 (NaN where every α is 0).
    """
    a = np.asarray(alpha, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] < 2 + skip_first_block:
        raise LlmdynError(f"alpha must be [tok, layer] with at least {2 + skip_first_block} "
                          f"layers, got {a.shape}")
    a = a[:, 1:] if skip_first_block else a  # [tok, layer']
    with np.errstate(invalid="ignore", divide="ignore"):
        return a.var(axis=-1) / (a ** 2).mean(axis=-1)


def per_prompt_variance_share(results: Sequence[Regularity], *,
                              skip_first_block: bool = True) -> np.ndarray:
    """The median over each prompt's tokens of :func:`variance_share`: ``[prompt]``."""
    return np.array([float(np.median(variance_share(r.alpha, skip_first_block=skip_first_block)))
                     for r in results])
