"""A chapter's claims as one family of tests: Holm's step-down, read from each claim's own interval.

A chapter grades many claims at 95 % each, so some decided grades are expected by chance. Each
chapter's graded estimates are one stated family (`Family`; chapter 04's two tables are one),
and the headline grade is Holm-adjusted (Holm 1979): with m tests in the family and p-values
p_(1) ≤ … ≤ p_(m), H_(i) is rejected while p_(j) ≤ α / (m − j + 1) for every j ≤ i.

The p-values are not computed by a second route: a row's p-value is the α at which its own
interval method, at level 1 − α, just stops deciding it. So "p_i ≤ α / r" is the same statement
as "the claim's interval at level 1 − α / r still decides it", and Holm becomes a sequence of
wider intervals of the same method on the same per-unit values (`interval_at`): with r tests
not yet rejected, every row that its level-(1 − α/r) interval decides is rejected (they would
be, one by one, as r falls), r falls by their number, and the rest are read again, until none
is. A rejected row keeps its grade, read from the interval at which it was rejected; a row never
rejected is inconclusive, read from its interval at the last level. Each adjusted grade names
the interval it was read from (`Adjusted`), so the guard (`llmdyn.claims.breaks.grade_breaks`)
checks it like any other.

Rows in the family: the estimates a 95 % interval grades (holds, does not hold, inconclusive).
Facts (judged on their value), rows with no verdict and rows whose interval cannot be recomputed
at another level (computed elsewhere, e.g. by statsmodels, with no per-unit values kept) are not
in it; the last say so (`Adjusted.reason`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llmdyn import LlmdynError
from llmdyn.claims.claim import JUDGED, Claim
from llmdyn.stats import bootstrap, coverage
from llmdyn.stats.bootstrap import LEVEL, Estimate

ALPHA = 1 - LEVEL  # the family-wise error rate: the book's 95 % over a whole chapter
DECIDED = ("holds", "does not hold")


@dataclass(frozen=True)
class Adjusted:
    """One claim's Holm-adjusted grade and the interval it was read from.

    Attributes:
        grade: the Holm-adjusted grade (the headline grade).
        unadjusted: the grade of the claim's own 95 % interval.
        level: two-sided level of the interval ``grade`` was read from (NaN when not adjusted).
        lo: that interval's lower end.
        hi: its upper end.
        family: the family's name (the chapter).
        m: the number of tests in the family.
        reason: why the claim is not in the family ("" when it is).
    """

    grade: str
    unadjusted: str
    level: float
    lo: float
    hi: float
    family: str
    m: int
    reason: str = ""

    @property
    def changed(self) -> bool:
        """Whether Holm moved the grade."""
        return self.grade != self.unadjusted

    def text(self) -> str:
        """"Holm over 12 tests: inconclusive at 99.6 %, unadjusted holds"; "" out of the family."""
        if self.reason:
            return ""
        beside = f", unadjusted {self.unadjusted}" if self.changed else ""
        tests = f"{self.m} test{'s' if self.m != 1 else ''}"
        return f"Holm over {tests}: {self.grade} at {level_text(self.level)}{beside}"


def level_text(level: float) -> str:
    """A level as a percentage with the digits it needs: "95 %", "99.83 %"."""
    for digits in range(0, 4):
        text = f"{100 * level:.{digits}f}"
        if abs(float(text) - 100 * level) < 1e-9:
            return f"{text} %"
    return f"{100 * level:.3f} %"


def _kind(claim: Claim) -> str:
    """The coverage kind the estimate's interval was computed as (as `interval_estimate` maps)."""
    recipe = claim.measure.recipe
    if recipe.kind == "ratio" and not recipe.paired:
        return "other"
    if recipe.kind == "difference" and not recipe.paired:
        return "independent_difference"
    return recipe.kind


def replayable(claim: Claim) -> str:
    """Why a judged estimate's interval cannot be recomputed at another level ("" when it can)."""
    m = claim.measure
    est = m.estimate
    if m.recipe is None or not m.samples or est is None or not est.method:
        return ("no per-unit values or interval method kept: its interval cannot be read at "
                "another level")
    lo, hi = interval_at(claim, est.level)
    if not (math.isclose(lo, est.lo, rel_tol=1e-9, abs_tol=1e-12)
            and math.isclose(hi, est.hi, rel_tol=1e-9, abs_tol=1e-12)):
        return "its interval does not recompute from its per-unit values"
    return ""


def interval_at(claim: Claim, level: float) -> tuple[float, float]:
    """The claim's interval at another two-sided ``level``: same method, same units, same draws.

    Bootstrap intervals reuse seed 0, the seed every measure's draws use, so the intervals of
    one claim nest as the level grows.
    """
    if not 0 < level < 1:
        raise LlmdynError(f"level must be in (0, 1), got {level}")
    m = claim.measure
    samples = [np.asarray(s, dtype=np.float64) for s in m.samples]
    method = m.estimate.method
    if method in ("bca", "percentile"):  # BCa, or its percentile fallback where BCa is undefined
        lo, hi = bootstrap.bca(m.recipe.statistic, *samples, paired=m.recipe.paired, seed=0,
                               level=level)
    else:
        lo, hi = coverage.interval(_kind(claim), method, *samples, paired=m.recipe.paired,
                                   signed=m.recipe.signed, level=level)
    return float(lo), float(hi)


def _read(claim: Claim, level: float) -> tuple[str, float, float]:
    """The grade the claim's interval at ``level`` gives, and that interval."""
    lo, hi = interval_at(claim, level)
    est = claim.measure.estimate
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive", lo, hi  # no interval at this level: nothing rejected
    grade, _ = claim.rule.judge(Estimate(est.value, lo, hi, est.n, level, method=est.method))
    return grade, lo, hi


def in_family(claim: Claim) -> bool:
    """A judged estimate: graded by its 95 % interval, not a fact."""
    return (claim.rule is not None and claim.measure.kind == "estimate"
            and claim.verdict.grade in JUDGED)


def holm(claims: Sequence[Claim], *, family: str, alpha: float = ALPHA) -> dict[str, Adjusted]:
    """Holm-adjusted grades of a family of claims, read from each claim's own intervals.

    Args:
        claims: every claim of the family (a chapter's, all its tables); those not graded by
            an interval are left out (`in_family`).
        family: the family's name, e.g. "chapter 04".
        alpha: the family-wise error rate.

    Returns:
        claim id -> `Adjusted`, for every claim that is a judged estimate.
    """
    if not 0 < alpha < 1:
        raise LlmdynError(f"alpha must be in (0, 1), got {alpha}")
    judged = [c for c in claims if in_family(c)]
    why = {c.id: replayable(c) for c in judged}
    tested = [c for c in judged if not why[c.id]]
    m = len(tested)
    out = {c.id: Adjusted(c.verdict.grade, c.verdict.grade, math.nan, math.nan, math.nan, family,
                          m, why[c.id]) for c in judged if why[c.id]}
    open_ = [c for c in tested if c.verdict.grade in DECIDED]  # only a decided row can reject
    rejected: dict[str, Adjusted] = {}
    while True:
        left = m - len(rejected)
        level = 1 - alpha / left if left else LEVEL
        read = {c.id: _read(c, level) for c in open_}
        kept = [c for c in open_ if read[c.id][0] in DECIDED]
        if not kept:
            break
        for c in kept:
            grade, lo, hi = read[c.id]
            rejected[c.id] = Adjusted(grade, c.verdict.grade, level, lo, hi, family, m)
        open_ = [c for c in open_ if c.id not in rejected]
    for c in tested:
        if c.id in rejected:
            out[c.id] = rejected[c.id]
            continue
        grade, lo, hi = _read(c, level)
        out[c.id] = Adjusted(grade, c.verdict.grade, level, lo, hi, family, m)
    return out
