"""What would decide an open claim: its own rule replayed by `llmdyn.stats.planner` at larger n.

A claim is *open* when it is inconclusive, or has no verdict because its n is too small for any
covered interval. Its plan replays the claim exactly: the measure's `Recipe` (kind, statistic,
pairing) recomputes the estimate with the interval the coverage table allows at each simulated
n, the claim's rule grades it, and units with the same values would not be graded either
(`Claim`'s zero-width check). The per-unit values the claim judged are the truth the planner
resamples.

Rows that cannot be planned say why: a fact, a claim with no rule or no per-unit values kept, a
bootstrap-only statistic (each simulated sample would need thousands of resamples: plan it with
a covered statistic instead).
"""

# llmdyn: outside the code hash (no stored array depends on this module; see core/store.py)

from __future__ import annotations

from dataclasses import replace

import numpy as np

from llmdyn.claims.claim import Claim
from llmdyn.claims.units import UNITS
from llmdyn.stats import planner

N_DRAWS = 200  # simulated samples per n: the share's Monte Carlo error is ≤ 3.5 points


def is_open(claim: Claim) -> bool:
    """Inconclusive, or no verdict for want of units (an estimate whose n no interval covers)."""
    grade, m = claim.verdict.grade, claim.measure
    if grade == "inconclusive":
        return True
    return (grade == "no verdict" and m.recipe is not None and m.estimate is not None
            and not m.estimate.has_interval and bool(m.samples))


def judge(claim: Claim) -> planner.Judge:
    """The claim's rule at a sample of units: ``(samples, seed) -> grade``."""
    recipe = claim.measure.recipe

    def grade(samples: tuple[np.ndarray, ...], seed: int) -> str:
        est, reason = recipe.estimate(*samples, seed=seed)
        if reason or not est.has_interval:
            return "no verdict"
        replayed = replace(claim, measure=replace(claim.measure, estimate=est, missing=""))
        return replayed.verdict.grade

    return grade


def unplannable(claim: Claim) -> str:
    """Why an open claim cannot be planned ("" when it can)."""
    m = claim.measure
    if claim.rule is None:
        return "no rule to decide"
    if m.recipe is None or not m.samples:
        return "its per-unit values were not kept"
    if m.recipe.kind == "other":
        return ("not plannable: a bootstrap-only statistic; a covered per-unit statistic "
                "would decide it")
    if not m.sampling_unit:
        return "not plannable: no independent unit declared"
    return ""


def to_decide(claim: Claim, *, n_draws: int = N_DRAWS, seed: int = 0) -> str:
    """The n that would decide an open claim, in words; "" for a claim that is not open."""
    if not is_open(claim):
        return ""
    why = unplannable(claim)
    if why:
        return why
    m = claim.measure
    samples = [np.asarray(s) for s in m.samples]
    plan = planner.plan(judge(claim), samples, paired=m.recipe.paired, n_draws=n_draws,
                        seed=seed)
    return plan.text(UNITS[m.sampling_unit])
