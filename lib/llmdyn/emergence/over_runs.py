"""Chapter 08's claims over training runs: one number per run, then the interval over runs.

A claim about training is a claim about runs: the passages a run is measured on share its
weights, so they are not independent evidence about how training goes. Runs of different sizes
are not draws of one population either (their values are ordered by size), so the verdicts
are taken over the runs of one size that differ in seed, and so in initial weights and data
order (`one_size`: the default suite's 5 runs of size s); the sizes are shown apart
(`size_trend`). Every judged claim here first summarises the passages within each run (their
mean at a checkpoint, the median curve's half-way point, its late slope) and then takes the
interval over those runs, keyed by run name:

- a ratio of the last to the first checkpoint: the geometric mean over runs of each run's
  ratio, with Student's t interval on the logs (kind "log_ratio", `llmdyn.stats.coverage`);
- a last − first difference: the mean paired difference over runs, Student's t interval;
- a lag or a slope: its mean over runs, Student's t interval.

A claim about a single run has n = 1 run: its number is shown, with no verdict, and the verdict
over the runs is its own row.

Paper A follows Pythia's own checkpoints. A suite trained here (a named suite of
`llmdyn.training.suite.SUITES`) stands in for them: `on_suite` marks every claim so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from llmdyn import LlmdynError
from llmdyn.claims.claim import Claim, Measure, above, at_least, at_most, below, slug, within
from llmdyn.emergence.persistence import late_slope
from llmdyn.emergence.profiles import RunSeries, half_rise_step
from llmdyn.emergence.suite_summary import adjacent_over_distant, emergence_timing
from llmdyn.stats import bootstrap
from llmdyn.stats.bootstrap import Estimate
from llmdyn.trace import LastPoint


def run_means(series: dict[str, RunSeries], values) -> tuple[dict[str, float], dict[str, float]]:
    """Each run's mean over passages at its first and its last checkpoint.

    Args:
        series: run name → its measured checkpoints.
        values: ``(profile) -> [prompt]`` the per-passage values of one checkpoint.

    Returns:
        ``(first, last)``: run name → one number per run.
    """
    first = {run: float(np.mean(values(s.profiles[0]))) for run, s in series.items()}
    last = {run: float(np.mean(values(s.profiles[-1]))) for run, s in series.items()}
    return first, last


def size_of(run: str) -> str:
    """The size part of a run's name: "s" for "s-seed3" (the whole name where it has no seed)."""
    return run.rsplit("-seed", 1)[0]


def one_size(series: dict[str, RunSeries]) -> dict[str, RunSeries]:
    """The runs of the size trained with the most seeds (the larger size where tied).

    Those runs differ only in seed, so in initial weights and data order: independent draws
    of one training recipe, the unit the chapter's verdicts are taken over.
    """
    if not series:
        raise LlmdynError("series is empty; pass at least one run's RunSeries")
    sizes: dict[str, list[str]] = {}
    for run in series:
        sizes.setdefault(size_of(run), []).append(run)
    size = max(sizes, key=lambda k: (len(sizes[k]), series[sizes[k][0]].params))
    return {run: series[run] for run in sizes[size]}


def size_trend(series: dict[str, RunSeries]) -> Claim:
    """The coupling's last/first ratio for each size's first run, side by side: no verdict.

    One run per size, ordered by parameters: a trend over sizes that the runs of one size
    cannot show, and that an interval over a mix of sizes would mistake for seed noise.
    """
    first_of = {}
    for run, s in sorted(series.items(), key=lambda rs: rs[1].params):
        first_of.setdefault(size_of(run), (run, s))
    first, last = run_means(dict(first_of.values()), lambda p: p.diagonal_share)
    return Claim("train_coupling_by_size", "A", "§5.3, Fig 1b", "Coupling grows with training "
                 "at every size", "low at step 0, high at step 143k (Pythia 6.9B and 12B)",
                 Measure.per_unit([last[r] / first[r] for r in first],
                                  "last/first ratio of the diagonal share, one run per size",
                                  labels=list(first), fmt=".2f", unit="×", sampling_unit="run"))


def _per_run(values: dict[str, float], fmt: str) -> str:
    return "; ".join(f"{run}: {v:{fmt}}" for run, v in values.items())


def emergence_claim(series: dict[str, RunSeries]) -> Claim:
    """Coupling grows with training: last/first diagonal share, geometric mean over runs ≥ 2."""
    first, last = run_means(series, lambda p: p.diagonal_share)
    ratios = {run: last[run] / first[run] for run in series}
    return Claim("train_coupling_emerges", "A", "§5.3, Fig 1b",
                 "Coupling is low at initialisation and grows with training",
                 "low at step 0, high at step 143k (Pythia 6.9B and 12B)",
                 Measure.of(bootstrap.geometric_mean_ratio, last, first, kind="log_ratio",
                            quantity="last/first ratio of the diagonal share (each run's mean "
                                     "over passages), geometric mean over runs",
                            unit="×", fmt=".2f", sampling_unit="run",
                            detail=f"per run: {_per_run(ratios, '.2f')}"),
                 at_least(2))  # the rule of chapter 05 for trained over untrained


ENDS: dict[LastPoint, str] = {"final_norm": "after the final norm (paper A eq. 7)",
                              "block_output": "at the last block's output (variant)"}


def falls_claims(series: dict[str, RunSeries]) -> list[Claim]:
    """LSS and expodistance fall over training: last − first ≤ 0, mean over runs, t interval.

    Each run's value at a checkpoint is its mean over passages of the whole-trajectory score;
    both ends of the trajectory are judged (`ENDS`).
    """
    claims = []
    for end, where in ENDS.items():
        tag = "" if end == "final_norm" else "_block_output"
        for score, name, fmt, cid, statement, paper in (
                ("lss", "LSS", ".2f", "train_lss_falls", "Linearity emerges with training",
                 "LSS falls over the checkpoints"),
                ("expodistance", "expodistance", ".3f", "train_ed_falls",
                 "Norm growth becomes exponential with training",
                 "log-like growth early, exponential-like late")):
            first, last = run_means(series, lambda p, sc=score, e=end: p.whole(sc, e))
            change = {run: last[run] - first[run] for run in series}
            claims.append(Claim(
                f"{cid}{tag}", "A", "§5.5, Figs 27–28" if score == "lss" else "Figs 29–30",
                f"{statement}; trajectories end {where}", paper,
                Measure.difference(last, first, f"last − first {name} (each run's mean over "
                                   "passages), mean over runs", fmt=fmt, sampling_unit="run",
                                   detail=f"per run: {_per_run(change, fmt)}"),
                at_most(0)))
    return claims


def timing_lag(share: np.ndarray, loss: np.ndarray) -> float:
    """Coupling's half-way point minus the loss's, in checkpoint intervals (< 0: coupling first).

    Args:
        share: ``[prompt, ckpt]`` diagonal share; its median over prompts is the coupling curve.
        loss: ``[ckpt]`` held-out loss of the same checkpoints.

    Each half-way point is `half_rise_step` on the checkpoint index (0, 1, 2, …), so one unit
    is one checkpoint interval whatever the steps are (a factor 2 on the 1, 2, 4, … grid).
    """
    index = np.arange(len(loss))
    return half_rise_step(index, np.median(share, 0)) - half_rise_step(index, loss)


def run_lags(series: dict[str, RunSeries]) -> dict[str, float]:
    """Each run's `timing_lag` (one number per run)."""
    return {run: float(timing_lag(s.stack("diagonal_share").T, s.heldout_loss))
            for run, s in series.items()}


LAG = "coupling − loss half-way point (checkpoint intervals)"


def timing_claims(series: dict[str, RunSeries], tolerance: float = 1.0) -> list[Claim]:
    """Do coupling and the loss reach half-way within ``tolerance`` checkpoint intervals?

    One row per run shows its lag (n = 1 run: no verdict), then the verdict over runs: the mean
    lag with its t interval over runs lies within ±``tolerance``. Every id carries the
    tolerance (``..._tol0_5``, ``..._tol1``), so each tolerance is its own row.
    """
    if not tolerance > 0:
        raise LlmdynError(f"tolerance must be > 0 checkpoint intervals, got {tolerance}")
    claims, tag, lags = [], f"tol{slug(f'{tolerance:g}')}", run_lags(series)
    over = f"train_timing_runs_{tag}"
    for run, lag in lags.items():
        half = emergence_timing({run: series[run]})
        m = Measure(LAG, Estimate(lag, np.nan, np.nan, 1), fmt=".2f", missing="no verdict",
                    reason=f"one run (n = 1 run): the verdict over the runs is {over}",
                    detail=f"half-way at step {half.share_step[0]:.1f} (coupling) and "
                           f"{half.loss_step[0]:.1f} (loss)",
                    sampling_unit="run", unit_ids=(run,), samples=((lag,),))
        claims.append(Claim(f"train_timing_{slug(run)}_{tag}", "A", "§5.3", f"{run}: coupling "
                            f"and the loss reach half-way within {tolerance:g} checkpoint "
                            "interval(s)", "“at similar training iterations”", m,
                            within(0, tolerance)))
    claims.append(Claim(
        over, "A", "§5.3", "Coupling emerges at similar training iterations as performance, "
        f"over runs (within ±{tolerance:g} interval)", "similar iterations (Pythia 6.9B and 12B)",
        Measure.mean(lags, f"{LAG}, mean over runs", fmt=".2f", sampling_unit="run",
                     detail=f"per run: {_per_run(lags, '.2f')}"), within(0, tolerance)))
    return claims


def direction_claim(series: dict[str, RunSeries]) -> Claim:
    """Coupling reaches half-way before the loss: the mean lag over runs, t interval, is < 0."""
    lags = run_lags(series)
    first = sum(v < 0 for v in lags.values())
    return Claim("train_timing_direction", "A", "§5.3 (ours)", "Coupling reaches half-way "
                 "before the loss does", "not stated (“similar iterations”)",
                 Measure.mean(lags, f"{LAG}, mean over runs", fmt=".2f", sampling_unit="run",
                              detail=f"{first} of {len(lags)} runs: coupling first; per run: "
                                     f"{_per_run(lags, '.2f')}"), below(0))


def run_locality(s: RunSeries) -> np.ndarray:
    """``[ckpt]`` a run's `adjacent_over_distant`, mean over its passages, at every checkpoint."""
    return np.array([adjacent_over_distant(p.diagonal_share_map).mean() for p in s.profiles])


def locality_claims(series: dict[str, RunSeries]) -> list[Claim]:
    """Coupling concentrates on adjacent blocks (paper A Figs 1c–e), over runs of >= 3 blocks.

    Per run, `adjacent_over_distant` averaged over its passages. At the end it is > 1
    (neighbours couple more): the mean over runs of the last checkpoint's ratio, t interval.
    It concentrates during training: each run's last − first difference of the ratio, mean
    over runs, t interval, > 0. Each run's late slope and peak are shown beside it.
    """
    deep = {r: s for r, s in series.items() if s.n_layers >= 3}
    name = "adjacent/distant ratio of the diagonal share"
    if not deep:
        reason = "every run has fewer than 3 blocks, so no pair is distant"
        return [Claim(i, "A", "Figs 1c–e", t, "coupled pairs are mostly neighbours",
                      Measure.not_run(name, reason), r) for i, t, r in (
                          ("train_local_end", "Adjacent blocks couple most", above(1)),
                          ("train_local_grows", "Coupling concentrates on adjacent blocks "
                           "during training", above(0)))]
    curves = {run: run_locality(s) for run, s in deep.items()}
    first = {run: float(c[0]) for run, c in curves.items()}
    last = {run: float(c[-1]) for run, c in curves.items()}
    runs = f"runs {', '.join(deep)} (>= 3 blocks)"
    shape = "; ".join(f"{run}: {first[run]:.2f} → {last[run]:.2f}, peak at step "
                      f"{deep[run].steps[int(np.argmax(c))]}, late slope "
                      f"{late_slope(deep[run].steps, c):.3f}" for run, c in curves.items())
    return [
        Claim("train_local_end", "A", "Figs 1c–e", "At the end of training adjacent blocks couple "
              "more than distant ones", "edges mostly between neighbouring blocks",
              Measure.mean(last, f"{name} at the last checkpoint (each run's mean over "
                           "passages), mean over runs", fmt=".2f", sampling_unit="run",
                           detail=f"{runs}; per run: {_per_run(last, '.2f')}"), above(1)),
        Claim("train_local_grows", "A", "Figs 1c–e", "Coupling concentrates on adjacent blocks "
              "during training", "neighbour edges appear as training goes on",
              Measure.difference(last, first, f"last − first {name} (each run's mean over "
                                 "passages), mean over runs", fmt=".2f", sampling_unit="run",
                                 detail=f"{runs}; {shape}"), above(0))]


def suite_stand_in(suite: object, n_runs: int) -> str:
    """What stands in for Pythia's checkpoints: a named suite trained here.

    "" for checkpoints given as a list (e.g. real Pythia revisions): those are no stand-in.
    """
    if not isinstance(suite, str):
        return ""
    return f"a Pythia-style suite of {n_runs} runs trained here ('{suite}'), for Pythia"


def on_suite(claims: Sequence[Claim], suite: object, n_runs: int) -> list[Claim]:
    """The claims, each marked with `suite_stand_in` (unchanged for real checkpoints)."""
    what = suite_stand_in(suite, n_runs)
    return [replace(c, stand_in=what) for c in claims]
