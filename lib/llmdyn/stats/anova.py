"""Between cells against within cells: one-way ANOVA of a grid with replicates, and its effect size.

A designed experiment (a grid of cells, e.g. stochastic-depth rate × weight decay) with
replicates in each cell (seeds) can only show how an outcome depends on the design when the
cells move the outcome by more than the replicates scatter it. With ``k`` cells of ``n_i``
replicates, ``N = Σ n_i`` values ``y_ij`` and cell means ``ȳ_i``, Fisher's one-way ANOVA compares

    MS_between = Σ_i n_i (ȳ_i − ȳ)² / (k − 1),   MS_within = Σ_ij (y_ij − ȳ_i)² / (N − k),

through F = MS_between / MS_within, which is F(k − 1, N − k)-distributed when every cell has the
same mean (e.g. Montgomery, *Design and Analysis of Experiments*, §3.3).

The effect size is the variance ratio θ = σ²_cells / σ²_seeds: the spread of the cells' true
means, Σ n_i a_i² / ((k − 1) n₀) with a_i the cell effects, over the replicates' variance σ².
For fixed cells F follows the noncentral F(k − 1, N − k, λ) with λ = (k − 1) n₀ θ (exactly so
when the cells are balanced, n_i = n₀), so ``θ̂ = (F − 1) / n₀`` and inverting the noncentral
F's distribution function in λ gives an exact interval (the method of Steiger, 2004, for
effect sizes of an ANOVA). For unbalanced cells n₀ = (N − Σ n_i² / N) / (k − 1) (Searle,
Casella & McCulloch, 1992, §3.6) and the interval is approximate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy import stats as scipy_stats

from llmdyn import LlmdynError

ALPHA = 0.05  # the test's level: cells "differ" when p < ALPHA


@dataclass(frozen=True)
class OneWayAnova:
    """Fisher's one-way ANOVA of values grouped in cells, with the variance ratio θ.

    Attributes:
        f: F = MS_between / MS_within.
        p: P(F(k − 1, N − k) ≥ f): the chance of so large an F if every cell had the same mean.
        df_between: k − 1 (cells minus one).
        df_within: N − k (values minus cells).
        ms_between: mean square between cells (n-weighted variance of the cell means).
        ms_within: mean square within cells (pooled variance of the replicates).
        n0: replicates per cell (the effective number when cells are unbalanced).
        ratio: θ̂ = (F − 1) / n₀, the cells' variance over the replicates' (negative when the
            cell means scatter less than replicates alone would make them).
        ratio_lo: lower end of θ's interval (0 when the data cannot exclude θ = 0 at this end).
        ratio_hi: upper end of θ's interval.
        level: two-sided coverage of [ratio_lo, ratio_hi].
    """

    f: float
    p: float
    df_between: int
    df_within: int
    ms_between: float
    ms_within: float
    n0: float
    ratio: float
    ratio_lo: float
    ratio_hi: float
    level: float

    def differs(self, alpha: float = ALPHA) -> bool:
        """Whether the cells differ by more than replicates do: p < ``alpha``."""
        return bool(self.p < alpha)

    def ratio_text(self) -> str:
        """θ̂ with its interval, saying so where F < 1 puts θ̂ below 0.

        θ ≥ 0 by definition. A negative θ̂ = (F − 1) / n₀ means the cell means scatter less
        than seeds alone would make them; it is shown as 0. When F is so small that even θ = 0
        leaves it in the lower tail, the inverted interval is empty (both ends 0), and the text
        says that instead of printing "[0.00, 0.00]".
        """
        if self.ratio >= 0:
            return f"{self.ratio:.2f} [{self.ratio_lo:.2f}, {self.ratio_hi:.2f}]"
        if self.ratio_hi > 0:
            return (f"0 [0, {self.ratio_hi:.2f}] (F < 1: estimate (F − 1)/n₀ = "
                    f"{self.ratio:.2f}, shown as 0)")
        level = round(100 * self.level)
        return (f"0 (F < 1: the cell means scatter less than seeds alone make likely, so no "
                f"θ ≥ 0 fits at {level} %; estimate (F − 1)/n₀ = {self.ratio:.2f})")

    def summary(self) -> str:
        """One line: F, its degrees of freedom, p and the variance ratio with its interval."""
        return (f"F({self.df_between}, {self.df_within}) = {self.f:.2f}, p = {self.p:.2g}; "
                f"cells/seeds variance ratio {self.ratio_text()}")


def _cells(values, cells) -> list[np.ndarray]:
    """The values of each cell, in order of first appearance, checked."""
    values = np.asarray(values, dtype=np.float64).ravel()
    labels = np.array([str(c) for c in list(cells)])  # [item]
    if values.shape != labels.shape:
        raise LlmdynError(f"values and cells must have one entry per item, got {values.size} "
                          f"values and {labels.size} cell labels")
    if not np.isfinite(values).all():
        raise LlmdynError("values must be finite; drop NaN/inf items before the ANOVA")
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    groups = [values[inverse == i] for i in np.argsort(first)]
    if len(groups) < 2:
        raise LlmdynError(f"the ANOVA needs at least 2 cells, got {len(groups)}")
    if len(values) - len(groups) < 1:
        raise LlmdynError(f"the ANOVA needs replicates: {len(values)} values in "
                          f"{len(groups)} cells leave no within-cell degrees of freedom; give "
                          "at least 2 seeds per cell")
    return groups


def one_way_anova(values, cells, *, level: float = 0.95) -> OneWayAnova:
    """One-way ANOVA of ``values`` grouped by ``cells``, and θ = σ²_cells / σ²_seeds.

    Args:
        values: ``[item]`` outcomes (e.g. one test accuracy per ViT).
        cells: ``[item]`` cell labels (any hashable; e.g. "sd0.1-wd0.05").
        level: two-sided coverage of θ's interval.

    Raises:
        LlmdynError: mismatched lengths, non-finite values, fewer than 2 cells, or no cell with
            two replicates.
    """
    if not 0 < level < 1:
        raise LlmdynError(f"level must be in (0, 1), got {level}")
    groups = _cells(values, cells)
    sizes = np.array([g.size for g in groups], dtype=np.float64)  # [cell]
    means = np.array([g.mean() for g in groups])  # [cell]
    n, k = sizes.sum(), len(groups)
    grand = float(np.concatenate(groups).mean())
    ms_between = float((sizes * (means - grand) ** 2).sum() / (k - 1))
    ms_within = float(sum(((g - g.mean()) ** 2).sum() for g in groups) / (n - k))
    if ms_within == 0:
        raise LlmdynError("every cell's replicates are identical (no within-cell spread): the "
                          "ratio is undefined; are the seeds really different?")
    f = ms_between / ms_within
    n0 = float((n - (sizes**2).sum() / n) / (k - 1))
    lo, hi = _ratio_interval(f, k - 1, int(n - k), n0, level)
    return OneWayAnova(f, float(scipy_stats.f.sf(f, k - 1, n - k)), k - 1, int(n - k),
                       ms_between, ms_within, n0, (f - 1) / n0, lo, hi, level)


def _ratio_interval(f: float, dfn: int, dfd: int, n0: float, level: float
                    ) -> tuple[float, float]:
    """θ's interval by inverting the noncentral F's cdf in λ = dfn · n₀ · θ.

    ``ncf.cdf(f; λ)`` falls as λ grows; the ends are the λ where it equals (1 ± level) / 2,
    and 0 where even λ = 0 puts f below that quantile.
    """

    def noncentrality(target: float) -> float:
        def cdf(lam: float) -> float:
            if lam > 0:
                return scipy_stats.ncf.cdf(f, dfn, dfd, lam)
            return scipy_stats.f.cdf(f, dfn, dfd)

        if cdf(0.0) <= target:
            return 0.0
        top = max(10.0, 4 * dfn * f)
        while cdf(top) > target:  # widen until the root is bracketed
            top *= 4
        return float(optimize.brentq(lambda lam: cdf(lam) - target, 0.0, top, xtol=1e-10))

    lam_lo = noncentrality((1 + level) / 2)
    lam_hi = noncentrality((1 - level) / 2)
    return lam_lo / (dfn * n0), lam_hi / (dfn * n0)


def cell_summary(values, cells) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's mean and its replicates' half-range, in order of first appearance.

    Returns:
        ``([cell], [cell])``: means and half the max − min of each cell's values (± spread).
    """
    groups = _cells(values, cells)
    return (np.array([g.mean() for g in groups]),
            np.array([(g.max() - g.min()) / 2 for g in groups]))


def min_detectable_ratio(k: int, n0: int, *, alpha: float = ALPHA, power: float = 0.8) -> float:
    """The θ = σ²_cells / σ²_seeds the F test detects with ``power`` at ``alpha``, balanced cells.

    Solves P(F(k − 1, k(n₀ − 1), λ) > F_{1−α}) = power for λ, then θ = λ / ((k − 1) n₀).
    """
    if k < 2 or n0 < 2:
        raise LlmdynError(f"need k >= 2 cells and n0 >= 2 replicates, got {k}, {n0}")
    dfn, dfd = k - 1, k * (n0 - 1)
    crit = scipy_stats.f.isf(alpha, dfn, dfd)
    lam = optimize.brentq(lambda x: scipy_stats.ncf.sf(crit, dfn, dfd, x) - power, 1e-9, 1e4)
    return float(lam / (dfn * n0))
