"""Summaries of a suite measured over training: runs table, timing, endpoints, locality.

The claims over runs are in `llmdyn.emergence.over_runs`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core.tables import markdown_table
from llmdyn.emergence.persistence import run_trend
from llmdyn.emergence.profiles import RunSeries, half_rise_step
from llmdyn.stats.regression import spearman
from llmdyn.trace import LAST_POINTS
from llmdyn.training import suite as suites
from llmdyn.training.baselines import reference_losses


def suite_table(series: dict[str, RunSeries], root: str | Path | None = None) -> str:
    """A Markdown table of the runs: shape, parameters, tokens, training time and final losses.

    Training time and tokens/s come from each run's ``run.json`` under ``root`` (a named suite);
    they are left empty for checkpoints given by path or hub id.
    """
    rows = []
    for run, s in series.items():
        last = s.profiles[-1]
        blocks, width = last.miscoupling_map.shape[0], "?"
        summary = _run_summary(root, run)
        if summary:
            width = summary["config"]["size"]["d_model"]
        wall = f"{summary['wall_s']:.3g} s" if summary else ""
        speed = f"{summary['tokens_per_s']:.0f}" if summary else ""
        params = f"{s.params / 1e6:.2f}M" if s.params else ""
        tokens = f"{s.tokens[-1]:,.0f}" if np.isfinite(s.tokens[-1]) else ""
        rows.append({"run": run, "blocks": blocks, "d_model": width, "parameters": params,
                     "tokens seen": tokens, "training time": wall, "tokens/s": speed,
                     "train loss": f"{s.train_loss[-1]:.3f}",
                     "held-out loss": f"{s.heldout_loss[-1]:.3f}"})
    return markdown_table(rows)


def suite_references(suite: str | Sequence[str],
                     root: str | Path | None = None) -> dict[str, float] | None:
    """Unigram and bigram reference losses of a named suite's held-out split, nats per token.

    Both count models are fitted on the suite's training split with its own tokenizer
    (`llmdyn.training.baselines.reference_losses`) and scored on the whole held-out split; the
    runs' held-out loss is measured on a fixed set of sequences from the same split. None for
    checkpoints given by path or hub id: their corpus and tokenizer are not the suite's.
    """
    if not isinstance(suite, str):
        return None
    spec = suites.get_suite(suite)
    data = suites.prepare_data(spec, root)
    return reference_losses(data.train, data.heldout, spec.vocab_size)


def _place(loss: float, refs: dict[str, float]) -> str:
    if loss > refs["unigram"]:
        return "above the unigram reference"
    return "below the bigram reference" if loss < refs["bigram"] else "between the two"


def reference_text(series: dict[str, RunSeries], refs: dict[str, float] | None) -> str:
    """Where each run's loss sits between the references, at its half-way point and at the end.

    The half-way loss (half of the drop from the first checkpoint to the last) is the loss at
    which `emergence_timing` reads the loss's half-way step: when it lies near the unigram
    reference, "coupling emerges with the loss" compares coupling with learning token
    frequencies.
    """
    if not refs:
        return "No reference losses: these checkpoints were not trained on the suite's corpus."
    rows = [f"Reference losses on the held-out split (count models fitted on the training "
            f"split, same tokenizer): unigram {refs['unigram']:.2f}, bigram "
            f"{refs['bigram']:.2f} nats per token.", ""]
    table = []
    for run, s in series.items():
        first, last = s.heldout_loss[0], s.heldout_loss[-1]
        half = (first + last) / 2
        table.append({"run": run, "loss at step 0": f"{first:.2f}",
                      "half-way loss": f"{half:.2f} ({_place(half, refs)})",
                      "final loss": f"{last:.2f}", "final loss sits": _place(last, refs)})
    return "\n".join([*rows, markdown_table(table)])


def _run_summary(root: str | Path | None, run: str) -> dict | None:
    path = Path(root) / run / "run.json" if root is not None else None
    return json.loads(path.read_text()) if path is not None and path.exists() else None


@dataclass(frozen=True)
class EmergenceTiming:
    """When coupling rises and the loss falls, per run.

    Attributes:
        runs: run names, in order.
        share_step: ``[run]`` step at half the change of the median diagonal share 1 − m̃².
        loss_step: ``[run]`` step at half the drop of the held-out loss.
        rho: ``[run]`` Spearman correlation of step and median diagonal share.
        log2_ratio: ``[run]`` |log₂(share_step / loss_step)| (NaN if either is 0 or NaN).
    """

    runs: tuple[str, ...]
    share_step: np.ndarray
    loss_step: np.ndarray
    rho: np.ndarray
    log2_ratio: np.ndarray

    def detail(self, field: str) -> str:
        """Per-run values of one field, for a claim's detail."""
        values = getattr(self, field)
        return "; ".join(f"{r}: {v:.2f}" for r, v in zip(self.runs, values, strict=True))

    def markdown(self) -> str:
        """The per-run table."""
        rows = []
        for i, run in enumerate(self.runs):
            ratio = self.share_step[i] / self.loss_step[i] if self.loss_step[i] else np.nan
            rows.append({"run": run, "coupling half-way step": f"{self.share_step[i]:.1f}",
                         "loss half-way step": f"{self.loss_step[i]:.1f}",
                         "ratio": f"{ratio:.2f}",
                         "Spearman ρ(step, coupling)": f"{self.rho[i]:.2f}"})
        return markdown_table(rows)


def emergence_timing(series: dict[str, RunSeries]) -> EmergenceTiming:
    """Half-way steps of coupling and loss, and the rank correlation of coupling with steps."""
    share_steps, loss, rho = [], [], []
    for s in series.values():
        if len(s.steps) < 3:
            raise LlmdynError(f"need at least 3 checkpoints per run, got steps {s.steps.tolist()}")
        share = np.median(s.stack("diagonal_share"), 1)  # [ckpt]
        share_steps.append(half_rise_step(s.steps, share))
        loss.append(half_rise_step(s.steps, s.heldout_loss))
        rho.append(spearman(s.steps, share).r)
    share_steps, loss = np.array(share_steps), np.array(loss)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(np.log2(share_steps / loss))
    ratio[~np.isfinite(ratio)] = np.nan
    return EmergenceTiming(tuple(series), share_steps, loss, np.array(rho), ratio)


def seed_table(series: dict[str, RunSeries]) -> str:
    """Markdown: the runs of one size that differ only in seed, side by side.

    The spread between two seeds is the seed-to-seed spread that a single run cannot show.
    Sizes trained with one seed are skipped.
    """
    sizes: dict[str, list[str]] = {}
    for run in series:
        sizes.setdefault(run.rsplit("-seed", 1)[0], []).append(run)
    pairs = {size: runs for size, runs in sizes.items() if len(runs) >= 2}
    if not pairs:
        return "No size was trained with more than one seed."
    out = []
    for size, runs in pairs.items():
        cells = {r: _seed_cells(series[r]) for r in runs}
        out.append(markdown_table([{f"size {size}": label, **{r: cells[r][label] for r in runs}}
                                   for label in next(iter(cells.values()))]))
    return "\n\n".join(out)


def _seed_cells(s: RunSeries) -> dict[str, str]:
    t = run_trend(s)
    index = np.arange(len(s.steps))
    lag = (half_rise_step(index, np.median(s.stack("diagonal_share"), 1))
           - half_rise_step(index, s.heldout_loss))  # as `over_runs.timing_lag`
    return {"held-out loss, last checkpoint": f"{s.heldout_loss[-1]:.3f}",
            "median diagonal share, last checkpoint": f"{t.last:.3f}",
            "coupling peaks at step": f"{t.peak_step} ({t.peak:.3f})",
            "Spearman ρ(step, coupling)": f"{t.rho:.2f}",
            "late slope per doubling (steps ≥ last / 4)": f"{t.late:.4f}",
            "lag, checkpoint intervals": f"{lag:.2f}"}


def adjacent_over_distant(diagonal_share_map: np.ndarray) -> np.ndarray:
    """Mean diagonal share of adjacent block pairs over that of distant ones, ``[prompt]``.

    Paper A Figs 1c–e draw the coupled pairs of Pythia's blocks as graph edges, mostly between
    neighbours. Here: mean over |l − l′| = 1 divided by mean over |l − l′| ≥ 2 of 1 − m̃²
    (``diagonal_share_map: [prompt, layer, layer]``); 1 means no preference for neighbours.
    """
    n = diagonal_share_map.shape[-1]
    if diagonal_share_map.ndim != 3 or n < 3:
        raise LlmdynError(f"diagonal_share_map must be [prompt, layer, layer] with >= 3 blocks "
                          f"(distant pairs need |l - l'| >= 2), got shape "
                          f"{diagonal_share_map.shape}")
    gap = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))  # [layer, layer]
    return diagonal_share_map[:, gap == 1].mean(-1) / diagonal_share_map[:, gap >= 2].mean(-1)


def ends_table(series: dict[str, RunSeries]) -> str:
    """Markdown: each run's whole-trajectory LSS and expodistance, first → last checkpoint.

    Both ends of the trajectory are shown (after the final norm, at the last block's output).
    Values are the mean (LSS) and median (expodistance) over the prompts.
    """
    cols = [(score, end) for score in ("lss", "expodistance") for end in LAST_POINTS]
    rows = []
    for run, s in series.items():
        row = {"run": run, "blocks": s.n_layers}
        for score, end in cols:
            reduce = np.mean if score == "lss" else np.median
            a, b = (reduce(p.whole(score, end)) for p in (s.profiles[0], s.profiles[-1]))
            name = "LSS" if score == "lss" else "expodistance"
            row[f"{name}: {end.replace('_', ' ')}"] = f"{a:.2f} → {b:.2f}"
        rows.append(row)
    return markdown_table(rows)


def locality_table(series: dict[str, RunSeries]) -> str:
    """Markdown: each run's `adjacent_over_distant` (mean over prompts) over training.

    Every second checkpoint and the last; runs of fewer than 3 blocks have no distant pair and
    are left out.
    """
    deep = {r: s for r, s in series.items() if s.n_layers >= 3}
    if not deep:
        return "No run has 3 or more blocks, so no pair of blocks is distant."
    steps = next(iter(deep.values())).steps
    shown = sorted(set(range(0, len(steps), 2)) | {len(steps) - 1})
    rows = []
    for run, s in deep.items():
        ratio = [adjacent_over_distant(s.profiles[i].diagonal_share_map).mean()
                 if i < len(s.profiles) else np.nan for i in shown]
        rows.append({"run": run, "blocks": s.n_layers,
                     **{f"step {steps[i]}": f"{x:.2f}" for i, x in zip(shown, ratio, strict=True)}})
    return markdown_table(rows)
