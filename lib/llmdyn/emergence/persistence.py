"""Does coupling keep rising to the end of training? Chapter 08's late-slope rule.

Paper A says coupling "increases persistently throughout training" (Fig 1b). A rank
correlation over all checkpoints, or a comparison of the first and last checkpoint, can pass
while the curve peaks early and falls for most of the updates. So the claim reads the trend
over the **last quarter of training**: per run, the OLS slope of its coupling curve (the median
diagonal share over the passages) on log₂ step over the checkpoints with step ≥ last step / 4
(`late_window`; one unit of the slope is one doubling of the step). On Pythia's grid 0, 1, 2,
4, …, 512 that is steps 128, 256 and 512.

The run is the independent unit: one slope per run, then Student's t interval over the runs
(n − 1 degrees of freedom; a bootstrap over 4 values cannot reach its stated coverage). The
rule is the book's plain three-grade rule: **holds** when the interval lies wholly ≥ 0, **does
not hold** when wholly < 0, **inconclusive** otherwise. Each run's peak step is shown beside it.

The passages inside one run are not independent evidence about training (they share the run's
weights), so no interval is taken over them: a run's slope is one number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llmdyn import LlmdynError
from llmdyn.claims.claim import Claim, Measure, at_least
from llmdyn.core.tables import markdown_table
from llmdyn.emergence.profiles import RunSeries
from llmdyn.stats.regression import spearman

LATE_FRACTION = 4  # the late window: checkpoints with step >= last step / LATE_FRACTION


def late_window(steps: Sequence[int]) -> np.ndarray:
    """Indices of the checkpoints with step ≥ last step / 4; at least 3, all with step > 0."""
    steps = np.asarray(steps)
    late = np.flatnonzero(steps >= steps[-1] / LATE_FRACTION) if steps.size else steps
    if late.size < 3 or (steps[late] <= 0).any():
        raise LlmdynError(f"the late slope needs >= 3 checkpoints with step >= last step / "
                          f"{LATE_FRACTION} (and step > 0), got steps {steps.tolist()}; save "
                          "more checkpoints late in training")
    return late


def late_slope(steps: Sequence[int], curve: Sequence[float]) -> float:
    """OLS slope of ``curve`` on log₂ step over `late_window`, ``[ckpt] -> float``."""
    steps, curve = np.asarray(steps, float), np.asarray(curve, float)
    late = late_window(steps)
    return float(np.polyfit(np.log2(steps[late]), curve[late], 1)[0])


@dataclass(frozen=True)
class RunTrend:
    """One run's coupling curve (median diagonal share over passages) read as a trend.

    Attributes:
        rho: Spearman ρ of step and the curve over all checkpoints.
        peak_step: the step at which the curve is highest.
        peak: the curve's highest value.
        last: its value at the last checkpoint.
        late: the late slope per doubling of the step (`late_slope`), one number per run.
    """

    rho: float
    peak_step: int
    peak: float
    last: float
    late: float


def run_trend(s: RunSeries) -> RunTrend:
    """`RunTrend` of one run's median diagonal share."""
    curve = np.median(s.stack("diagonal_share"), 1)  # [ckpt]
    top = int(np.argmax(curve))
    return RunTrend(spearman(s.steps, curve).r, int(s.steps[top]), float(curve[top]),
                    float(curve[-1]), late_slope(s.steps, curve))


QUANTITY = ("late slope of the median diagonal share per doubling of the step (steps ≥ last / "
            f"{LATE_FRACTION}), mean over runs")


def late_measure(series: dict[str, RunSeries]) -> Measure:
    """Mean over runs of each run's late slope, with Student's t interval over the runs."""
    trends = {run: run_trend(s) for run, s in series.items()}
    detail = "; ".join(f"{run}: slope {t.late:.4f}, peak at step {t.peak_step}"
                       for run, t in trends.items())
    return Measure.mean({run: t.late for run, t in trends.items()}, QUANTITY, fmt=".4f",
                        detail=detail, sampling_unit="run")


def persistence_claim(series: dict[str, RunSeries]) -> Claim:
    """Coupling increases persistently (Fig 1b): the mean late slope over runs is ≥ 0."""
    return Claim("train_coupling_persistent", "A", "§5.3, Fig 1b",
                 "Coupling increases persistently throughout training",
                 "a steady rise (Pythia 6.9B and 12B)", late_measure(series), at_least(0))


def interval_cell(m: Measure) -> str:
    """"0.0126 [−0.0080, 0.0333] (n = 4 runs, t interval)", or why there is no interval."""
    e = m.estimate
    if e is None or not math.isfinite(e.value):
        return f"n/a ({m.reason})" if m.reason else "n/a"
    if not e.has_interval:
        return f"{m.number(e.value)} (no interval: {m.reason or m.interval_text()})"
    return f"{m.number(e.value)} [{m.number(e.lo)}, {m.number(e.hi)}] ({m.interval_text()})"


def trend_table(series: dict[str, RunSeries]) -> str:
    """Markdown: each run's ρ, where its coupling peaks, and its late slope; then over runs."""
    rows = []
    for run, s in series.items():
        t = run_trend(s)
        rows.append({"run": run, "Spearman ρ(step, coupling)": f"{t.rho:.2f}",
                     "peak (step: median share)": f"{t.peak_step}: {t.peak:.3f}",
                     "last checkpoint": f"{s.steps[-1]}: {t.last:.3f}",
                     f"late slope per doubling (steps ≥ last / {LATE_FRACTION})":
                         f"{t.late:.4f}"})
    rows.append({"run": "mean over runs", "Spearman ρ(step, coupling)": "",
                 "peak (step: median share)": "", "last checkpoint": "",
                 f"late slope per doubling (steps ≥ last / {LATE_FRACTION})":
                     interval_cell(late_measure(series))})
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
