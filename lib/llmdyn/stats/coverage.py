"""Which interval judges which statistic at which n: the one table, checked by simulation.

An interval's 95 % is a promise about coverage; at small n the bootstrap breaks it (its
intervals are too narrow). So no interval is used on faith. For each kind of statistic the book
judges (``KINDS``) and each n it uses (``SIZES``: 3 and 4 runs, 8-9, 16, 20 and 21 prompts, 27
models, 32 ViTs, 120 token pairs) every candidate method (``METHODS``) is run on ``N_SIMS``
simulated samples whose parameter is known (``simulate``), and its coverage is the share of
intervals that contain it (``N_SIMS`` = 1,000 samples for the bootstrap, 2,000 for the HC4
Pitman–Morgan interval, which is found numerically, 10,000 for the closed forms, which cost
nothing). The result is committed as ``data/coverage.csv`` (written by
``tools/coverage.py``; ``tests/stats/test_coverage.py`` recomputes it) and `choose` reads it:

- a method is **calibrated** at (kind, n) when its coverage is within ``margin`` of 95 %,
  **conservative** above that, and **undercovers** below; ``MARGIN`` is three binomial
  standard errors of a 95 % coverage over 1,000 draws (the fewest any row has),
  3·√(0.95·0.05/1000) = 2.1 points;
- at an n, the first calibrated method in ``METHODS[kind]``'s order is used, else the first
  conservative one, else none: the row gets **no verdict**, with the reason;
- an n between two simulated sizes uses the row of the size below it (coverage grows with n);
  an n below ``SIZES[0]`` is not judged;
- the bootstrap is never used with ``BOOTSTRAP_MIN_N - 1`` or fewer units (a t or exact
  interval, or per-unit values with no pooled verdict), nor simulated there;
- a statistic of no listed kind (``"other"``: spreads, peak positions, custom ratios) is
  bootstrapped only at an n where BCa was calibrated or conservative for every kind tested.

The simulated populations are skewed where the book's data are (norms, LSS, losses):
Gamma(4, 1) values (skewness 1) for means, medians, ratios and differences; a line with
normal noise for slopes; a bivariate normal with ρ = 0.7 (R² = 0.49) for R²; Bernoulli(0.7)
for fractions. The kinds over runs and pairs are skewed too:

- ``log_ratio`` (a geometric-mean ratio over runs): log(a_i/b_i) = ln 2 + 0.25·(G_i − 4)/2,
  G_i ~ Gamma(4, 1): log ratios with skewness 1, true ratio 2;
- ``variance_ratio`` (paired variances): b = X0 + X1, a = √2·(X0 + X2), X_k ~ Gamma(2, 1), so
  both margins are Gamma(4)-shaped (skewness 1, excess kurtosis 1.5) with correlation 0.5, and
  var(a)/var(b) = 2;
- ``correlation_difference`` (r(y, x1) − r(y, x2)): (y, x1, x2) = L·z, L the Cholesky factor
  of the correlations (0.6, 0.3; x1–x2 0.5) and z three standardised Gamma(4, 1) values, so
  the correlations are exact and y has skewness 1; the difference is 0.3;
- ``independent_difference`` (mean(a) − mean(b) of two independent groups, Welch's t): a ~
  Gamma(4, 1) and b ~ Gamma(4, 1.5), both skewness 1, b with 1.5 times a's spread; the
  difference is −2.
"""

from __future__ import annotations

import csv
import math
from functools import cache
from pathlib import Path

import numpy as np
from scipy import stats as sps

from llmdyn import LlmdynError
from llmdyn.core.paths import data_file
from llmdyn.stats import bootstrap, intervals
from llmdyn.stats.bootstrap import LEVEL, N_RESAMPLES

# New kinds go at the end: a kind's position seeds its simulated samples.
KINDS = ("mean", "median", "ratio", "difference", "slope", "r2", "fraction",
         "log_ratio", "variance_ratio", "correlation_difference", "independent_difference")
SIZES = (3, 4, 8, 16, 20, 21, 27, 32, 120)  # the book's n; a range (8-9) at its smallest n
METHODS: dict[str, tuple[str, ...]] = {  # candidates, preferred first
    "mean": ("t", "bca"),
    "median": ("order", "bca"),
    "ratio": ("delta_t", "bca"),
    "difference": ("t", "bca"),
    "slope": ("ols_t", "bca"),
    "r2": ("fisher_z", "bca"),
    "fraction": ("exact",),
    "log_ratio": ("log_t",),
    "variance_ratio": ("pitman_morgan_hc4", "pitman_morgan"),
    "correlation_difference": ("zou",),
    "independent_difference": ("welch",),
}
BOOTSTRAP_MIN_N = 6  # ≤ 5 independent units: a t or exact interval, never the bootstrap
# simulated samples per (kind, n, method): bootstrap rows are costly, and so is the HC4
# Pitman–Morgan interval, a numerical inversion
N_SIMS = {"bca": 1000, "pitman_morgan_hc4": 2000}
N_SIMS_CLOSED = 10_000  # closed-form and exact intervals
SEED = 2029  # seed of the simulated samples and of their bootstrap draws
TABLE = data_file("coverage.csv")
COLUMNS = ("kind", "n", "method", "coverage", "n_sims", "margin", "status")
USABLE = ("calibrated", "conservative")


def margin(n_sims: int, level: float = LEVEL) -> float:
    """Three binomial standard errors of a coverage of ``level`` estimated from ``n_sims`` draws."""
    return 3 * math.sqrt(level * (1 - level) / n_sims)


MARGIN = margin(min(N_SIMS.values()))  # 0.0207: the resolution of the coarsest row


def n_sims(method: str) -> int:
    """Simulated samples for one method's rows."""
    return N_SIMS.get(method, N_SIMS_CLOSED)


def status(coverage: float, level: float = LEVEL) -> str:
    """"calibrated", "conservative" or "undercovers" for a simulated coverage."""
    if abs(coverage - level) <= MARGIN:
        return "calibrated"
    return "conservative" if coverage > level else "undercovers"


def simulate(kind: str, n: int, count: int, rng: np.random.Generator):
    """``count`` samples of size ``n`` with a known parameter.

    Returns:
        ``(samples, truth)``: a tuple of ``[sim, item]`` arrays (the statistic's inputs) and
        the population value of the statistic.
    """
    shape = (count, n)
    if kind in ("mean", "median"):
        truth = 4.0 if kind == "mean" else float(sps.gamma.median(4))
        return (rng.gamma(4.0, 1.0, shape),), truth
    if kind == "ratio":  # a = b · lognormal factor, paired: E[a]/E[b] = 2·exp(σ²/2)
        b = rng.gamma(4.0, 1.0, shape)
        return (b * rng.lognormal(math.log(2), 0.25, shape), b), 2 * math.exp(0.25 ** 2 / 2)
    if kind == "difference":  # paired, a − b = 0.5 + centred Gamma(4, 1) noise
        b = rng.gamma(4.0, 1.0, shape)
        return (b + 0.5 + rng.gamma(4.0, 1.0, shape) - 4.0, b), 0.5
    if kind == "slope":
        x = rng.uniform(0, 1, shape)
        return (x, 1 + 2 * x + rng.normal(0, 0.5, shape)), 2.0
    if kind == "r2":
        x = rng.normal(size=shape)
        return (x, 0.7 * x + math.sqrt(1 - 0.49) * rng.normal(size=shape)), 0.49
    if kind == "fraction":
        return ((rng.uniform(size=shape) < 0.7).astype(np.float64),), 0.7
    if kind == "log_ratio":  # log(a/b) = ln 2 + skewed noise of sd 0.25
        b = rng.gamma(4.0, 1.0, shape)
        return (b * np.exp(math.log(2) + 0.25 * (rng.gamma(4.0, 1.0, shape) - 4) / 2), b), 2.0
    if kind == "variance_ratio":  # Gamma(4)-shaped margins sharing X0: correlation 0.5
        x = rng.gamma(2.0, 1.0, (3, *shape))
        return (math.sqrt(2) * (x[0] + x[2]), x[0] + x[1]), 2.0
    if kind == "correlation_difference":
        z = (rng.gamma(4.0, 1.0, (3, *shape)) - 4) / 2  # independent, mean 0, sd 1, skewed
        y, x1, x2 = np.einsum("ij,j...->i...", np.linalg.cholesky(CORRELATIONS), z)
        return (y, x1, x2), CORRELATIONS[0, 1] - CORRELATIONS[0, 2]
    if kind == "independent_difference":  # two groups, unequal spread: 4 − 6 = −2
        return (rng.gamma(4.0, 1.0, shape), rng.gamma(4.0, 1.5, shape)), -2.0
    raise LlmdynError(f"unknown kind {kind!r}; one of {KINDS}")


PAIRED = ("log_ratio", "variance_ratio", "correlation_difference")  # no unpaired form
CORRELATIONS = np.array([[1.0, 0.6, 0.3],  # of (y, x1, x2) for correlation_difference
                         [0.6, 1.0, 0.5],
                         [0.3, 0.5, 1.0]])

STATISTICS = {"mean": bootstrap.mean, "median": bootstrap.median,
              "ratio": bootstrap.ratio_of_means, "difference": bootstrap.difference_of_means,
              "slope": bootstrap.slope, "r2": bootstrap.r2, "fraction": bootstrap.fraction_true,
              "log_ratio": bootstrap.geometric_mean_ratio,
              "variance_ratio": bootstrap.variance_ratio,
              "correlation_difference": bootstrap.correlation_difference,
              "independent_difference": bootstrap.difference_of_means}


def interval(kind: str, method: str, *samples: np.ndarray, paired: bool = True,
             signed: bool = False, seed: int = 0, level: float = LEVEL):
    """``(lo, hi)`` of ``method`` for a statistic of ``kind``; samples ``[..., item]``.

    Args:
        kind: one of ``KINDS``.
        method: "bca" or the closed-form method of that kind (``METHODS``).
        *samples: the statistic's inputs.
        paired: paired samples (differences, ratios, (x, y) pairs); the kinds of ``PAIRED``
            are paired by definition.
        signed: for R², the signed R² r·|r|.
        seed: seed of the bootstrap draws.
        level: two-sided coverage (for k rivals judged together,
            ``intervals.bonferroni_level(k)``).
    """
    if kind in PAIRED and not paired:
        raise LlmdynError(f"a {kind} compares paired values of the same units; got "
                          "paired=False (summarise each unit first, then pass one value per "
                          "unit in each sample)")
    if method == "bca":
        stat = bootstrap.signed_r2 if signed else STATISTICS[kind]
        return bootstrap.bca(stat, *samples, paired=paired, seed=seed,
                             n_resamples=N_RESAMPLES, level=level)
    closed = {("mean", "t"): lambda: intervals.t_mean(*samples, level=level),
              ("difference", "t"): lambda: intervals.t_difference(*samples, paired=paired,
                                                                   level=level),
              ("ratio", "delta_t"): lambda: intervals.delta_t(*samples, level=level),
              ("slope", "ols_t"): lambda: intervals.ols_t(*samples, level=level),
              ("r2", "fisher_z"): lambda: intervals.fisher_z(*samples, signed=signed,
                                                             level=level),
              ("fraction", "exact"): lambda: intervals.clopper_pearson(*samples, level=level),
              ("median", "order"): lambda: intervals.order_median(*samples, level=level),
              ("log_ratio", "log_t"): lambda: intervals.log_t(*samples, level=level),
              ("variance_ratio", "pitman_morgan"):
                  lambda: intervals.pitman_morgan(*samples, level=level),
              ("variance_ratio", "pitman_morgan_hc4"):
                  lambda: intervals.pitman_morgan_hc4(*samples, level=level),
              ("correlation_difference", "zou"): lambda: intervals.zou(*samples, level=level),
              ("independent_difference", "welch"):
                  lambda: intervals.t_difference(*samples, paired=False, level=level)}
    if (kind, method) not in closed:
        raise LlmdynError(f"no method {method!r} for a {kind}; one of {METHODS.get(kind)}")
    return closed[(kind, method)]()


def simulated_coverage(kind: str, n: int, method: str, *, sims: int | None = None,
                       seed: int = SEED) -> float:
    """Share of ``sims`` intervals of ``method`` at size ``n`` that contain the true value."""
    rng = np.random.default_rng([seed, KINDS.index(kind), n])
    samples, truth = simulate(kind, n, sims or n_sims(method), rng)
    lo, hi = interval(kind, method, *samples, seed=seed)
    return float(np.mean((lo <= truth) & (truth <= hi)))  # NaN ends never cover


def rows(*, seed: int = SEED, kinds=KINDS, sizes=SIZES) -> list[dict]:
    """The coverage table: one row per kind, simulated n and candidate method."""
    out = []
    for kind in kinds:
        for n in sizes:
            for method in METHODS[kind]:
                if method == "bca" and n < BOOTSTRAP_MIN_N:
                    continue
                cov = simulated_coverage(kind, n, method, seed=seed)
                out.append({"kind": kind, "n": n, "method": method, "coverage": round(cov, 4),
                            "n_sims": n_sims(method), "margin": round(MARGIN, 4),
                            "status": status(cov)})
    return out


def write(path: Path = TABLE, **kw) -> list[dict]:
    """Simulate the table (`rows`) and write it as CSV."""
    table = rows(**kw)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)
    return table


@cache
def table(path: Path = TABLE) -> dict[tuple[str, int, str], str]:
    """The committed table: ``{(kind, n, method): status}``."""
    if not path.exists():
        raise LlmdynError(f"the coverage table {path} is missing; it is committed with the "
                          "repository (regenerate it with `python tools/coverage.py`)")
    with path.open(newline="", encoding="utf-8") as f:
        return {(r["kind"], int(r["n"]), r["method"]): r["status"] for r in csv.DictReader(f)}


@cache
def simulated_table(path: Path = TABLE) -> dict[tuple[str, int, str], float]:
    """The committed table's simulated coverages: ``{(kind, n, method): coverage}``."""
    table(path)  # the same check that the table exists
    with path.open(newline="", encoding="utf-8") as f:
        return {(r["kind"], int(r["n"]), r["method"]): float(r["coverage"])
                for r in csv.DictReader(f)}


def simulated(kind: str, n: int, method: str) -> float | None:
    """The simulated coverage of ``method`` for a ``kind`` at ``n`` units, or None if not simulated.

    The row of the simulated size at or below ``n``, as `choose` reads it.
    """
    if n < SIZES[0]:
        return None
    size = max(s for s in SIZES if s <= n)
    return simulated_table().get((kind, size, method))


def _usable(kind: str, size: int, method: str) -> str:
    """The table's status, or "" where the method was not simulated at that size."""
    return table().get((kind, size, method), "")


def choose(kind: str, n: int, method: str | None = None) -> tuple[str | None, str]:
    """The interval method for a statistic of ``kind`` over ``n`` units, or None and why.

    Args:
        kind: one of ``KINDS``, or "other" for a statistic of no listed kind.
        n: number of independent units.
        method: a method the caller asks for; it is used only where the table allows it.

    Returns:
        ``(method, "")``, or ``(None, reason)``: the row gets no verdict.
    """
    if kind != "other" and kind not in KINDS:
        raise LlmdynError(f"unknown kind {kind!r}; one of {KINDS} or 'other'")
    if n < SIZES[0]:
        return None, (f"n = {n} is below the smallest n whose coverage was tested "
                      f"({SIZES[0]}; data/coverage.csv)")
    size = max(s for s in SIZES if s <= n)
    if kind == "other":
        ok = all(_usable(k, size, "bca") in USABLE for k in KINDS if "bca" in METHODS[k])
        if method not in (None, "bca") or not ok or n < BOOTSTRAP_MIN_N:
            return None, (f"a bootstrap interval of this statistic is not trusted at n = {n}: "
                          "BCa did not reach 95 % coverage for every kind tested at "
                          f"n = {size} (data/coverage.csv)")
        return "bca", ""
    candidates = [m for m in METHODS[kind] if method in (None, m)]
    if method is not None and not candidates:
        raise LlmdynError(f"no method {method!r} for a {kind}; one of {METHODS[kind]}")
    for wanted in USABLE:
        for m in candidates:
            if _usable(kind, size, m) == wanted and not (m == "bca" and n < BOOTSTRAP_MIN_N):
                return m, ""
    which = f"the {method} interval" if method else "no interval method"
    return None, (f"{which} of a {kind} reaches 95 % coverage at n = {n} "
                  f"(simulated at n = {size}; data/coverage.csv)")
