"""Power: the smallest R² a sample of n units detects, and the power of a judging rule.

For a two-sided test of "slope = 0" at level α with power 1 − β, two routes (Cohen 1988, ch. 3
and ch. 9):

- **Fisher z**: atanh(r) is about normal with standard error 1 / sqrt(n − 3), so the smallest
  detectable correlation is r = tanh((z_{1−α/2} + z_{1−β}) / sqrt(n − 3)) and R² = r².
- **Noncentral F** (exact for the fixed-x regression): the F test has 1 and n − 2 degrees of
  freedom; under an effect f² = R² / (1 − R²) its statistic is noncentral F with λ = f² · n.
  R² is the value at which P(F > F_{1−α}) = 1 − β.

The second half simulates the power of the rule that actually judges a claim (a bootstrap
interval against a threshold): `rule_power` counts the grades it gives on data with a known effect.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

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


def power_sentence(n: int, *, alpha: float = 0.05, power: float = 0.8,
                   method: Method = "noncentral_f") -> str:
    """Background: the smallest R² an F test of the slope detects at n (not a verdict's power).

    A verdict's own power is `rule_power`'s; this sentence only says what a significance test at
    this n could see.
    """
    floor = min_detectable_r2(n, alpha=alpha, power=power, method=method)
    name = "exact noncentral F" if method == "noncentral_f" else "Fisher z"
    return (f"With n = {n} independent units, the F test of a one-predictor slope detects R² ≥ "
            f"{floor:.2f} at α = {alpha:g} with {power:.0%} power ({name}).")


# The power of a judging rule, by simulation -----------------------------------------------------
#
# A verdict comes from a rule on a bootstrap interval, not from a test of "slope = 0", so its
# power has no closed form: simulate data with a known effect at the real n, judge each draw with
# the chapter's own rule, and count the grades.

Judge = Callable[[np.ndarray, np.ndarray, int], str]  # (x [unit], y [unit], seed) -> grade
Draw = Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]]  # rng -> (x, y), [unit]


@dataclass(frozen=True)
class RulePower:
    """How often a rule gives each grade on data simulated with a known effect.

    Attributes:
        counts: grade -> number of draws that got it.
        n_draws: number of simulated data sets.
        seed: seed of the simulation (data and each draw's bootstrap seed follow from it).
    """

    counts: Mapping[str, int]
    n_draws: int
    seed: int

    def share(self, grade: str) -> float:
        """Fraction of draws graded ``grade`` (0 if none)."""
        return self.counts.get(grade, 0) / self.n_draws

    def margin(self, grade: str, z: float = 1.96) -> float:
        """Half-width of the normal 95 % interval of ``share(grade)`` (Monte Carlo error)."""
        p = self.share(grade)
        return z * math.sqrt(max(p * (1 - p), 1 / self.n_draws) / self.n_draws)


def rule_power(judge: Judge, draw: Draw, *, n_draws: int = 1000, seed: int = 0) -> RulePower:
    """Grade ``n_draws`` simulated data sets with ``judge`` and count the grades.

    Args:
        judge: the rule as the chapter applies it, ``(x, y, bootstrap seed) -> grade``.
        draw: one simulated data set at the real n, ``rng -> (x, y)``.
        n_draws: number of data sets (Monte Carlo error of a share p: sqrt(p(1−p)/n_draws)).
        seed: seed of the data; draw i's bootstrap uses seed + i.
    """
    if not isinstance(n_draws, int) or n_draws < 10:
        raise LlmdynError(f"n_draws must be an int >= 10, got {n_draws!r}")
    rng = np.random.default_rng(seed)
    counts: dict[str, int] = {}
    for i in range(n_draws):
        x, y = draw(rng)
        grade = judge(x, y, seed + i)
        counts[grade] = counts.get(grade, 0) + 1
    return RulePower(counts, n_draws, seed)


def linear_draw(x, r2: float, *, sign: float = 1.0, scale: float = 1.0) -> Draw:
    """Data with population R² = ``r2`` on the fixed design ``x``: y = sign·√r2·z + √(1−r2)·ε.

    z is x standardised (mean 0, variance 1 over the units) and ε ~ N(0, 1) is drawn anew each
    time; y is then multiplied by ``scale`` (e.g. the observed spread of y, so that slopes have
    the data's units). The F test of the slope on this design has noncentrality n·r2/(1 − r2),
    as in `min_detectable_r2`.
    """
    x = np.asarray(x, float)
    if x.ndim != 1 or x.size < 4 or np.ptp(x) == 0:
        raise LlmdynError(f"x must be a 1-D design of at least 4 varying values, got {x.shape}")
    if not 0 <= r2 < 1:
        raise LlmdynError(f"r2 must lie in [0, 1), got {r2}")
    z = (x - x.mean()) / x.std()  # [unit]

    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        eps = rng.standard_normal(x.size)  # [unit]
        return x, scale * (sign * math.sqrt(r2) * z + math.sqrt(1 - r2) * eps)

    return draw


def f_test_judge(alpha: float = 0.05) -> Judge:
    """The rule "the OLS F test of slope = 0 has p < α" as a judge (for known-answer checks).

    F = R² / (1 − R²) · (n − 2) with 1 and n − 2 degrees of freedom.
    """
    from scipy import stats

    from llmdyn.stats.bootstrap import r2

    def judge(x: np.ndarray, y: np.ndarray, seed: int) -> str:
        fit = float(r2(np.asarray(x, float), np.asarray(y, float)))
        f = fit / (1 - fit) * (len(x) - 2)
        return "holds" if stats.f.sf(f, 1, len(x) - 2) < alpha else "does not hold"

    return judge
