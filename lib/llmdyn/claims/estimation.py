"""An estimate with the interval its kind and n allow, and the recipe to recompute it elsewhere.

`interval_estimate` asks `llmdyn.stats.coverage.choose` which interval judges a statistic of a
kind over n independent units (``data/coverage.csv``), and computes it: a closed-form or exact
interval where one is calibrated, else BCa where it covers, else none (with the reason). A
`Recipe` keeps the kind, statistic and pairing of a measure, so that the same estimate can be
recomputed on other units (the planner of `llmdyn.claims.planning` draws them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmdyn import LlmdynError
from llmdyn.stats import bootstrap, coverage
from llmdyn.stats.bootstrap import Estimate

FEW_VALUES = 5  # a per-unit statistic with at most this many distinct values is few-valued


def interval_estimate(kind: str, statistic, *samples, paired: bool = True, seed: int = 0,
                      method: str | None = None, signed: bool = False,
                      rows: bool = False) -> tuple[Estimate, str]:
    """The estimate of ``statistic`` with the interval `coverage.choose` allows, and why not.

    Args:
        kind: a kind of `coverage.KINDS`, or "other".
        statistic: vectorised ``([resample, item], ...) -> [resample]``, or with ``rows`` a
            statistic of whole ``[item, ...]`` arrays.
        *samples: the inputs, items on the first axis.
        paired: paired samples (the same items in each).
        seed: seed of the bootstrap draws.
        method: a requested method, used only where the table allows it.
        signed: R² with the slope's sign.
        rows: resample rows of ``[item, ...]`` arrays (`bootstrap.bootstrap_rows`).

    Returns:
        ``(estimate, reason)``: reason is "" when the estimate has an interval it may be
        judged on; otherwise the estimate has no interval and the reason says why.
    """
    sizes = [len(np.asarray(s)) if rows else np.size(s) for s in samples]
    if paired and len(set(sizes)) > 1:
        raise LlmdynError(f"paired samples must have equal lengths, got {sizes}; pass "
                          "paired=False for independent ones")
    n = min(sizes)
    if kind == "ratio" and not paired:  # the linearised t is for paired samples only
        kind = "other"
    if kind == "difference" and not paired:  # two groups: Welch's t, simulated as its own kind
        kind = "independent_difference"
    chosen, reason = coverage.choose(kind, n, method)
    if chosen == "bca":
        boot = bootstrap.bootstrap_rows if rows else bootstrap.bootstrap
        est = boot(statistic, *samples, paired=paired, seed=seed)
        if est.method == "percentile":
            return est, ("BCa is undefined here (the resampled statistic takes too few values) "
                         "and the percentile interval shown was never calibrated "
                         "(data/coverage.csv); judge the share of units on the paper's side "
                         "instead (the sign test)")
        return est, "" if est.has_interval else "the bootstrap gives no interval here"
    arrays = [np.asarray(s, dtype=np.float64) if rows else
              np.asarray(s, dtype=np.float64).ravel() for s in samples]
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(statistic(*arrays) if rows else statistic(*[a[None] for a in arrays])[0])
    if chosen is None:
        return Estimate(value, math.nan, math.nan, n), reason
    values = np.unique(arrays[0][np.isfinite(arrays[0])]) if kind == "median" else ()
    if 0 < len(values) <= FEW_VALUES < n:
        return Estimate(value, math.nan, math.nan, n), (
            f"the median of a statistic with {len(values)} values over {n} units: ties make "
            "its interval uncalibrated (data/coverage.csv simulates continuous values); judge "
            "the share of units on the paper's side instead (the sign test)")
    lo, hi = coverage.interval(kind, chosen, *arrays, paired=paired, signed=signed)
    est = Estimate(value, float(lo), float(hi), n, method=chosen)
    return est, "" if est.has_interval else f"the {chosen} interval is undefined here"


@dataclass(frozen=True)
class Recipe:
    """How an estimate was computed from its samples: enough to recompute it on other units.

    Attributes:
        kind: its kind of statistic (`coverage.KINDS`, or "other").
        statistic: the vectorised statistic ``([resample, item], ...) -> [resample]``.
        paired: whether the samples hold the same units.
        signed: R² with the slope's sign.
        method: the interval method asked for (None: the table's choice at each n).
    """

    kind: str
    statistic: bootstrap.Statistic
    paired: bool = True
    signed: bool = False
    method: str | None = None

    def estimate(self, *samples, seed: int = 0) -> tuple[Estimate, str]:
        """`interval_estimate` of these samples, as the measure computed its own."""
        return interval_estimate(self.kind, self.statistic, *samples, paired=self.paired,
                                 seed=seed, method=self.method, signed=self.signed)
