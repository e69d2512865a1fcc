"""What would decide an open row: the number of units at which its own rule decides, by simulation.

A row that is inconclusive, or has no verdict for lack of units, raises one question: how many
prompts, models or runs would settle it? The planner answers with the row's own rule, interval
method and coverage table, never with statistics of its own (a planner with its own test would
plan for a different test):

1. the **truth** is what was observed: the per-unit values, resampled with replacement (paired
   units stay together), so the effect, the spread and the skew over units are the data's;
2. at a candidate n, ``n_draws`` samples of n units are drawn from it and each is judged by
   ``judge``, the caller's rule at that n (the chapter's statistic with the interval that
   `llmdyn.stats.coverage.choose` allows at n, then the rule), and the share of draws that
   decide (holds or does not hold) is counted;
3. n grows by doubling from ``start`` until that share reaches ``target`` (80 %), then the
   smallest such n is found by bisection; draws at every n use the same seed, so the share
   varies smoothly with n.

The answer is "not within ``max_n``" when no n up to ``max_n`` (1,000) decides, and "not
plannable" with fewer than `MIN_UNITS` units, whose spread is unknown. The plan is a prediction:
it assumes the observed units are representative of the units that would be added.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from llmdyn import LlmdynError

DECIDED = ("holds", "does not hold")
MIN_UNITS = 4  # fewer observed units leave the spread unknown: no plan
MAX_N = 1000
TARGET = 0.8

Judge = Callable[[tuple[np.ndarray, ...], int], str]  # (samples [unit] each, seed) -> grade
Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, ...]]  # (rng, n) -> samples


@dataclass(frozen=True)
class Plan:
    """The n that would decide a row, or why there is none.

    Attributes:
        n: the smallest n whose draws decide with probability ≥ ``target``; None if none.
        share: the share of decided draws at ``n`` (at ``max_n`` when n is None).
        verdict: the grade most of the decided draws give at ``n`` ("" when n is None).
        reason: "" for a plan; "not within N" or "not plannable: …" otherwise.
        observed: number of units the truth was taken from.
    """

    n: int | None
    share: float
    verdict: str
    reason: str
    observed: int

    def text(self, unit: str = "units") -> str:
        """"n = 48 prompts (80 % would decide: holds)" or the reason."""
        if self.n is None:
            return self.reason
        return (f"n = {self.n} {unit} ({self.share:.0%} of simulated samples decide, most "
                f"as '{self.verdict}')")


def empirical_draw(samples: Sequence[np.ndarray], *, paired: bool = True) -> Draw:
    """Draws of n units from the observed per-unit values (paired units resampled together)."""
    arrays = [np.asarray(s, dtype=np.float64).ravel() for s in samples]
    if paired and len({a.size for a in arrays}) > 1:
        raise LlmdynError(f"paired samples must have equal lengths, got {[a.size for a in arrays]}")

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
        if paired:
            rows = rng.integers(0, arrays[0].size, n)  # [unit]
            return tuple(a[rows] for a in arrays)
        return tuple(a[rng.integers(0, a.size, n)] for a in arrays)

    return draw


def decided_share(judge: Judge, draw: Draw, n: int, *, n_draws: int,
                  seed: int) -> tuple[float, str]:
    """The share of ``n_draws`` samples of ``n`` units that ``judge`` decides, and their grade."""
    rng = np.random.default_rng([seed, 7919])  # the same draws at every n: a smooth share
    grades = [judge(draw(rng, n), seed + i) for i in range(n_draws)]
    decided = [g for g in grades if g in DECIDED]
    most = max(DECIDED, key=decided.count) if decided else ""
    return len(decided) / n_draws, most


def plan(judge: Judge, samples: Sequence[np.ndarray] | None = None, *, draw: Draw | None = None,
         paired: bool = True, target: float = TARGET, start: int = MIN_UNITS,
         max_n: int = MAX_N, n_draws: int = 400, seed: int = 0) -> Plan:
    """The smallest n at which ``judge`` decides with probability ≥ ``target``.

    Args:
        judge: the row's rule at a sample: ``(samples, seed) -> grade``, with the interval
            that the coverage table allows at that sample's n.
        samples: the observed per-unit values (one array per sample: two for a paired ratio).
        draw: how to draw n units (default: `empirical_draw` of ``samples``; tests pass a
            known population).
        paired: whether the samples hold the same units.
        target: probability of a decision to plan for.
        start: the first n tried.
        max_n: the largest n tried.
        n_draws: simulated samples per n (Monte Carlo error of a share p: sqrt(p(1-p)/n_draws)).
        seed: seed of the draws.
    """
    if not 0 < target < 1:
        raise LlmdynError(f"target must lie in (0, 1), got {target}")
    observed = 0 if samples is None else min(np.size(s) for s in samples)
    if draw is None:
        if samples is None:
            raise LlmdynError("plan needs the observed per-unit samples or a draw")
        if observed < MIN_UNITS:
            return Plan(None, float("nan"), "", f"not plannable: {observed} units observed, "
                        f"fewer than {MIN_UNITS}, so their spread is unknown", observed)
        draw = empirical_draw(samples, paired=paired)

    def share(n: int) -> tuple[float, str]:
        return decided_share(judge, draw, n, n_draws=n_draws, seed=seed)

    lo, hi = None, max(start, 2)
    while True:  # doubling: the first n that decides often enough
        got = share(hi)
        if got[0] >= target:
            break
        if hi >= max_n:
            return Plan(None, got[0], "", f"not within {max_n}: {got[0]:.0%} of simulated "
                        f"samples of {max_n} units decide", observed)
        lo, hi = hi, min(2 * hi, max_n)
    best = (hi, *got)
    while lo is not None and hi - lo > 1:  # bisection between the last miss and the first hit
        mid = (lo + hi) // 2
        got = share(mid)
        if got[0] >= target:
            hi, best = mid, (mid, *got)
        else:
            lo = mid
    return Plan(best[0], best[1], best[2], "", observed)
