"""Summaries of a suite measured over training: the runs table, emergence timing, endpoints."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmdyn import LlmdynError
from llmdyn.stats.regression import spearman
from llmdyn.training.emergence import RunSeries, half_rise_step


def suite_table(series: dict[str, RunSeries], root: str | Path | None = None) -> str:
    """A Markdown table of the runs: shape, parameters, tokens, training time and final losses.

    Training time and tokens/s come from each run's ``run.json`` under ``root`` (a named suite);
    they are left empty for checkpoints given by path or hub id.
    """
    lines = ["| run | blocks | d_model | parameters | tokens seen | training time | tokens/s | "
             "train loss | held-out loss |", "|" + " --- |" * 9]
    for run, s in series.items():
        last = s.profiles[-1]
        blocks, width = last.coupling_map.shape[0], "?"
        summary = _run_summary(root, run)
        if summary:
            width = summary["config"]["size"]["d_model"]
        wall = f"{summary['wall_s']:.3g} s" if summary else ""
        speed = f"{summary['tokens_per_s']:.0f}" if summary else ""
        params = f"{s.params / 1e6:.2f}M" if s.params else ""
        tokens = f"{s.tokens[-1]:,.0f}" if np.isfinite(s.tokens[-1]) else ""
        lines.append(f"| {run} | {blocks} | {width} | {params} | {tokens} | {wall} | {speed} | "
                     f"{s.train_loss[-1]:.3f} | {s.heldout_loss[-1]:.3f} |")
    return "\n".join(lines)


def _run_summary(root: str | Path | None, run: str) -> dict | None:
    path = Path(root) / run / "run.json" if root is not None else None
    return json.loads(path.read_text()) if path is not None and path.exists() else None


@dataclass(frozen=True)
class EmergenceTiming:
    """When coupling rises and the loss falls, per run.

    Attributes:
        runs: run names, in order.
        coupling_step: ``[run]`` step at half the change of the median diagonal share.
        loss_step: ``[run]`` step at half the drop of the held-out loss.
        rho: ``[run]`` Spearman correlation of step and median diagonal share.
        log2_ratio: ``[run]`` |log₂(coupling_step / loss_step)| (NaN if either is 0 or NaN).
    """

    runs: tuple[str, ...]
    coupling_step: np.ndarray
    loss_step: np.ndarray
    rho: np.ndarray
    log2_ratio: np.ndarray

    def detail(self, field: str) -> str:
        """Per-run values of one field, for a claim's detail."""
        values = getattr(self, field)
        return "; ".join(f"{r}: {v:.2f}" for r, v in zip(self.runs, values, strict=True))

    def markdown(self) -> str:
        """The per-run table."""
        rows = ["| run | coupling half-way step | loss half-way step | ratio | Spearman ρ(step, "
                "coupling) |", "|" + " --- |" * 5]
        for i, run in enumerate(self.runs):
            ratio = self.coupling_step[i] / self.loss_step[i] if self.loss_step[i] else np.nan
            rows.append(f"| {run} | {self.coupling_step[i]:.1f} | {self.loss_step[i]:.1f} | "
                        f"{ratio:.2f} | {self.rho[i]:.2f} |")
        return "\n".join(rows)


def emergence_timing(series: dict[str, RunSeries]) -> EmergenceTiming:
    """Half-way steps of coupling and loss, and the rank correlation of coupling with steps."""
    coupling, loss, rho = [], [], []
    for s in series.values():
        if len(s.steps) < 3:
            raise LlmdynError(f"need at least 3 checkpoints per run, got steps {s.steps.tolist()}")
        share = np.median(s.stack("share"), 1)  # (ckpt,)
        coupling.append(half_rise_step(s.steps, share))
        loss.append(half_rise_step(s.steps, s.heldout_loss))
        rho.append(spearman(s.steps, share).r)
    coupling, loss = np.array(coupling), np.array(loss)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(np.log2(coupling / loss))
    ratio[~np.isfinite(ratio)] = np.nan
    return EmergenceTiming(tuple(series), coupling, loss, np.array(rho), ratio)


def endpoints(series: dict[str, RunSeries],
              fields: tuple[str, ...] = ("share", "mis", "lss", "expodistance")
              ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per-prompt values at the first and the last checkpoint, averaged over runs.

    Returns:
        ``(first, last)``: field → ``[prompt]``; every run must use the same prompts.
    """
    shapes = {r: s.profiles[0].mis.shape for r, s in series.items()}
    if len(set(shapes.values())) != 1:
        raise LlmdynError(f"runs were measured on different prompts: {shapes}")
    first = {f: np.mean([getattr(s.profiles[0], f) for s in series.values()], 0)
             for f in fields}
    last = {f: np.mean([getattr(s.profiles[-1], f) for s in series.values()], 0)
            for f in fields}
    return first, last
