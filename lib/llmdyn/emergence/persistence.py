"""Does coupling keep rising to the end of training? Chapter 08's second-half rule.

Paper A says coupling "increases persistently throughout training" (Fig 1b) and that coupled
pairs become neighbours as training goes on (Figs 1c–e). A rank correlation over all
checkpoints, or a comparison of the first and last checkpoint, can pass while the curve peaks
early and falls for most of the updates. So both claims also read the trend over the **second
half of the checkpoints**: the OLS slope of the curve on log₂ step over checkpoints
``n // 2 … n − 1`` (one unit of the slope is one doubling of the step). The rule, fixed before
any result was seen (issue 29):

- **holds** when the rise condition is met (Spearman ρ of step and coupling over all
  checkpoints ≥ 0.7; for the adjacent/distant ratio, the last − first difference's interval
  lies above 0) *and* the 95 % interval of the second-half slope does not lie wholly below 0;
- **does not hold** when that interval lies wholly below 0 (or the rise condition fails by
  its own interval);
- **inconclusive** otherwise.

Intervals. Within one run, the slope's interval resamples the passages: it is an interval
*within one network* and says nothing about another seed. Over runs (4 in the default suite),
the mean's interval is Student's t with n − 1 degrees of freedom, and a share of runs takes
the exact (Clopper–Pearson) binomial interval: a percentile bootstrap over 4 values cannot
reach its stated coverage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from llmdyn import LlmdynError
from llmdyn.claims.claim import Claim, Grade, Measure, Op, Rule
from llmdyn.core.tables import markdown_table
from llmdyn.emergence.profiles import RunSeries
from llmdyn.stats.bootstrap import LEVEL, Estimate
from llmdyn.stats.regression import spearman

MIN_RHO = 0.7  # "persistently": ρ(step, coupling) over all checkpoints at least this
Rise = Literal["met", "failed", "unclear"]


def second_half(steps: Sequence[int]) -> slice:
    """The checkpoints of the second half, ``n // 2 … n − 1``; every step there must be > 0."""
    steps = np.asarray(steps)
    half = slice(len(steps) // 2, len(steps))
    if len(steps) < 3 or (steps[half] <= 0).any():
        raise LlmdynError(f"the second-half trend needs >= 3 checkpoints with steps > 0 in the "
                          f"second half, got steps {steps.tolist()}")
    return half


def late_slope(steps: Sequence[int], curve: Sequence[float]) -> float:
    """OLS slope of ``curve`` on log₂ step over the second half of the checkpoints, ``[ckpt]``."""
    steps, curve = np.asarray(steps, float), np.asarray(curve, float)
    half = second_half(steps)
    return float(np.polyfit(np.log2(steps[half]), curve[half], 1)[0])


def late_measure(steps: Sequence[int], values: np.ndarray, quantity: str, *,
                 reduce=np.median, seed: int = 0, **kw) -> Measure:
    """`late_slope` of the passages' ``reduce`` curve, with its interval over passages.

    Args:
        steps: ``[ckpt]`` optimizer updates.
        values: ``[prompt, ckpt]`` the quantity per passage and checkpoint.
        quantity: the measure's noun phrase.
        reduce: how passages combine into the curve (the median for the diagonal share, the
            mean for the locality ratio, as the chapter's figures and tables do).
        seed: seed of the passage draws.
        **kw: `Measure` fields (fmt, unit, detail).
    """
    steps = np.asarray(steps)
    second_half(steps)  # checks before the bootstrap
    if reduce is np.mean:
        # The OLS slope is linear in the curve, so the slope of the mean curve is the mean of
        # the passages' slopes: a mean over passages, with the interval the coverage table
        # gives a mean (the median curve has no such identity and is resampled as a whole).
        slopes = [late_slope(steps, row) for row in np.asarray(values, float)]
        return Measure.mean(slopes, quantity, seed=seed, **kw)
    return Measure.of_rows(lambda x: late_slope(steps, reduce(x, 0)), np.asarray(values),
                           quantity=quantity, seed=seed, **kw)


@dataclass(frozen=True)
class LateTrendRule(Rule):
    """The second-half rule: a rise condition read first, then the late slope's interval.

    The measure it judges is the second-half slope; the rise condition (e.g. ρ ≥ 0.7) is
    decided by the caller and passed in with its text.

    Attributes:
        rise: "met", "failed" (by its own interval) or "unclear".
        rise_rule: the rise condition in words, for the rule sentence.
        rise_text: the rise condition's outcome with its numbers, for the verdict's reason.
    """

    op: Op = ">="
    threshold: float = 0.0
    rise: Rise = "unclear"
    rise_rule: str = ""
    rise_text: str = ""

    def judge(self, est: Estimate) -> tuple[Grade, str]:
        """Does not hold on a late fall or a failed rise; holds on a rise with no late fall."""
        if not math.isfinite(est.value) or not est.has_interval:
            return super().judge(est)
        if est.hi < 0:
            return "does not hold", "it falls over the second half of the checkpoints"
        if self.rise == "failed":
            return "does not hold", self.rise_text
        if self.rise == "met":
            return "holds", ""
        return "inconclusive", self.rise_text

    def sentence(self, measure: Measure) -> str:
        """The rule in words, with all three outcomes."""
        level = round(100 * (measure.estimate.level if measure.estimate else LEVEL))
        return (f"holds when {self.rise_rule} and the {level} % interval of the "
                f"{measure.quantity} does not lie wholly below 0; does not hold when it does, "
                "or when the rise fails by its own interval; inconclusive otherwise")


@dataclass(frozen=True)
class RunTrend:
    """One run's coupling curve (median diagonal share over passages) read as a trend.

    Attributes:
        rho: Spearman ρ of step and the curve over all checkpoints.
        peak_step: the step at which the curve is highest.
        peak: the curve's highest value.
        last: its value at the last checkpoint.
        late: the second-half slope per doubling of the step, interval over passages.
    """

    rho: float
    peak_step: int
    peak: float
    last: float
    late: Measure


def run_trend(s: RunSeries, seed: int = 0) -> RunTrend:
    """`RunTrend` of one run's median diagonal share."""
    share = s.stack("diagonal_share")  # (ckpt, prompt)
    curve = np.median(share, 1)  # (ckpt,)
    top = int(np.argmax(curve))
    late = late_measure(s.steps, share.T, "second-half slope of the median diagonal share per "
                        "doubling of the step", seed=seed, fmt=".4f")
    return RunTrend(spearman(s.steps, curve).r, int(s.steps[top]), float(curve[top]),
                    float(curve[-1]), late)


def persistence_claim(series: dict[str, RunSeries], seed: int = 0) -> Claim:
    """Coupling increases persistently (Fig 1b): mean ρ ≥ 0.7 and no late fall, over runs.

    The measure is the mean over runs of the second-half slope, with its t interval over the
    runs; the rise condition is the mean ρ over runs.
    """
    trends = {run: run_trend(s, seed) for run, s in series.items()}
    rho = float(np.mean([t.rho for t in trends.values()]))
    detail = "; ".join(f"{run}: ρ {t.rho:.2f}, peak at step {t.peak_step}, slope "
                       f"{t.late.estimate.value:.4f}" for run, t in trends.items())
    measure = Measure.mean([t.late.estimate.value for t in trends.values()],
                     "second-half slope of the median diagonal share per doubling of the "
                     "step, mean over runs (t interval over runs)", fmt=".4f", detail=detail)
    rule = LateTrendRule(rise="met" if rho >= MIN_RHO else "unclear",
                         rise_rule=f"ρ(step, coupling) over all checkpoints, mean over runs, "
                                   f"is ≥ {MIN_RHO:g}",
                         rise_text=f"mean ρ(step, coupling) = {rho:.2f}")
    return Claim("train_coupling_persistent", "A", "§5.3, Fig 1b",
                 "Coupling increases persistently throughout training",
                 "a steady rise (Pythia 6.9B and 12B)", measure, rule)


def trend_table(series: dict[str, RunSeries], seed: int = 0) -> str:
    """Markdown: each run's ρ, where its coupling peaks, and its second-half slope."""
    rows = []
    for run, s in series.items():
        t = run_trend(s, seed)
        e = t.late.estimate
        rows.append({"run": run, "Spearman ρ(step, coupling)": f"{t.rho:.2f}",
                     "peak (step: median share)": f"{t.peak_step}: {t.peak:.3f}",
                     "last checkpoint": f"{s.steps[-1]}: {t.last:.3f}",
                     "second-half slope per doubling [95 % interval within one network]":
                         f"{e.value:.4f} [{e.lo:.4f}, {e.hi:.4f}]"})
    return markdown_table(rows)


def peak_sentence(series: dict[str, RunSeries]) -> str:
    """Where each run's coupling peaks, in words, with how far it falls by the last checkpoint."""
    parts = []
    for run, s in series.items():
        t = run_trend(s)
        if t.peak_step == s.steps[-1]:
            parts.append(f"{run} at its last checkpoint (step {t.peak_step}, {t.peak:.3f})")
        else:
            parts.append(f"{run} at step {t.peak_step} ({t.peak:.3f}), then falls to "
                         f"{t.last:.3f} by step {s.steps[-1]}")
    return "Coupling (median diagonal share) peaks in " + "; ".join(parts) + "."
