"""Power of a one-predictor regression: the smallest R² a sample of n units detects.

For a two-sided test of "slope = 0" at level α with power 1 − β, two routes (Cohen 1988, ch. 3
and ch. 9):

- **Fisher z**: atanh(r) is about normal with standard error 1 / sqrt(n − 3), so the smallest
  detectable correlation is r = tanh((z_{1−α/2} + z_{1−β}) / sqrt(n − 3)) and R² = r².
- **Noncentral F** (exact for the fixed-x regression): the F test has 1 and n − 2 degrees of
  freedom; under an effect f² = R² / (1 − R²) its statistic is noncentral F with λ = f² · n.
  R² is the value at which P(F > F_{1−α}) = 1 − β.
"""

from __future__ import annotations

import math
from typing import Literal

from llmdyn import LlmdynError

Method = Literal["fisher_z", "noncentral_f"]


def _check(n: int, alpha: float, power: float) -> None:
    if not isinstance(n, int) or n < 4:
        raise LlmdynError(f"n must be an int >= 4 (units: models, prompts), got {n!r}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise LlmdynError(f"alpha and power must lie in (0, 1), got alpha={alpha}, "
                          f"power={power}")


def min_detectable_r2(n: int, *, alpha: float = 0.05, power: float = 0.8,
                      method: Method = "noncentral_f") -> float:
    """Smallest R² of y on one predictor that n independent units detect (two-sided test).

    Args:
        n: independent units (one point each).
        alpha: level of the test.
        power: probability of rejecting at that R².
        method: ``"fisher_z"`` (normal approximation) or ``"noncentral_f"`` (exact F test).

    Returns:
        R² in (0, 1). n = 24, α = 0.05, 80 % power: 0.297 (Fisher z), 0.264 (noncentral F).
    """
    _check(n, alpha, power)
    from scipy import optimize, stats

    if method == "fisher_z":
        z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
        return math.tanh(z / math.sqrt(n - 3)) ** 2
    if method != "noncentral_f":
        raise LlmdynError(f"method must be 'fisher_z' or 'noncentral_f', got {method!r}")
    df2 = n - 2
    critical = stats.f.ppf(1 - alpha, 1, df2)

    def shortfall(r2: float) -> float:
        return stats.ncf.sf(critical, 1, df2, r2 / (1 - r2) * n) - power

    return float(optimize.brentq(shortfall, 1e-9, 1 - 1e-9, xtol=1e-10))


def power_sentence(n: int, paper_r2: float, *, alpha: float = 0.05, power: float = 0.8,
                   method: Method = "noncentral_f") -> str:
    """One sentence: the smallest detectable R² at n and whether ``paper_r2`` is above it."""
    floor = min_detectable_r2(n, alpha=alpha, power=power, method=method)
    name = "exact noncentral F" if method == "noncentral_f" else "Fisher z"
    can = ("could have seen" if paper_r2 >= floor else "could not reliably have seen")
    return (f"With n = {n} independent models, a one-predictor regression detects R² ≥ "
            f"{floor:.2f} at α = {alpha:g} with {power:.0%} power ({name}); this population "
            f"{can} the paper's effect (R² = {paper_r2:g}).")
