"""Figures over training checkpoints (paper A Figs 1b, 8, 27–30): curves against steps or depth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib as mpl
import matplotlib.ticker  # noqa: F401  (mpl.ticker)
import numpy as np
from matplotlib.axes import Axes

from llmdyn.plots.depth import band


def step_axis(ax: Axes, *, label: str = "training step") -> Axes:
    """A symmetric-log step axis, so that step 0 (initialisation) and 1, 2, 4, … all show.

    Ticks sit at 0 and the powers of two up to the last step drawn (Pythia's checkpoints).
    """
    ax.set_xscale("symlog", linthresh=1, linscale=0.4)
    last = max(1.0, ax.dataLim.x1)
    ticks = [0] + [2**i for i in range(int(np.log2(last)) + 1)]
    ticks = ticks[:: max(1, len(ticks) // 10)]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
    ax.set_xlabel(f"{label} (log scale; 0 = initialisation)")
    return ax


def run_color(i: int) -> str:
    """One colour per run, in the order the runs are listed."""
    return f"C{i % 10}"


def over_steps(series: Mapping[str, tuple[Sequence[float], np.ndarray]], ax: Axes, *,
               ylabel: str, title: str, log_y: bool = False) -> Axes:
    """Median and inter-quartile band over prompts of one score, per run, against the step.

    Args:
        series: run name → (steps ``[ckpt]``, values ``[ckpt, prompt]``).
        ax: where to draw.
        ylabel: the score.
        title: names the suite and prompts.
        log_y: logarithmic y axis.

    Returns:
        The axes.
    """
    for i, (run, (steps, values)) in enumerate(series.items()):
        band(np.asarray(steps), np.asarray(values).T, ax, label=run, color=run_color(i))
        ax.plot(steps, np.nanmedian(values, 1), "o", color=run_color(i), markersize=3)
    step_axis(ax)
    if log_y:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=10)
    return ax


def loss_curves(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], ax: Axes, *,
                title: str, ylabel: str = "held-out loss (nats per token)") -> Axes:
    """One loss curve per run against the step (one value per checkpoint)."""
    for i, (run, (steps, loss)) in enumerate(series.items()):
        ax.plot(steps, loss, "o-", color=run_color(i), label=run, markersize=3)
    step_axis(ax)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=10)
    return ax


def reference_lines(ax: Axes, references: Mapping[str, float] | None) -> Axes:
    """Horizontal lines at count models' losses (``{"unigram": nats, "bigram": nats}``).

    A model above the unigram line has not yet learned its tokens' frequencies; one below the
    bigram line uses more than the previous token (`llmdyn.training.baselines`). Nothing is
    drawn for ``None`` (checkpoints whose corpus and tokenizer are not the suite's).
    """
    for (name, loss), style in zip((references or {}).items(), ("--", ":"), strict=False):
        ax.axhline(loss, color="grey", linestyle=style, linewidth=1,
                   label=f"{name} reference ({loss:.2f})")
    if references:
        ax.legend(fontsize=10)
    return ax


def against_depth(curves: Mapping[int, np.ndarray], depths: Sequence[int], ax: Axes, *,
                  ylabel: str, title: str, log_y: bool = False, cmap: str = "viridis") -> Axes:
    """One median-over-prompts curve per checkpoint against depth, coloured by training step.

    Args:
        curves: step → values ``[prompt, depth]``.
        depths: the depth of each column.
        ax: where to draw.
        ylabel: the score.
        title: names the run and prompts.
        log_y: logarithmic y axis.
        cmap: colour map over the checkpoints, early (dark) to late (light).

    Returns:
        The axes; a colour bar labels the steps.
    """
    steps = sorted(curves)
    colors = mpl.colormaps[cmap](np.linspace(0, 0.9, len(steps)))
    for color, step in zip(colors, steps, strict=True):
        ax.plot(depths, np.nanmedian(curves[step], 0), "o-", color=color, markersize=3,
                label=f"step {step}")
    ax.set_xlabel("depth l (block boundary)")
    ax.xaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize=9, ncol=2)
    return ax


def scatter_runs(points: Mapping[str, tuple[np.ndarray, np.ndarray]], ax: Axes, *,
                 xlabel: str, ylabel: str, title: str, log_x: bool = False) -> Axes:
    """One marker series per run (e.g. tokens seen against coupling, paper A Fig 8)."""
    for i, (run, (x, y)) in enumerate(points.items()):
        ax.plot(x, y, "o-", color=run_color(i), label=run, markersize=4, linewidth=0.8)
    if log_x:
        ax.set_xscale("symlog", linthresh=max(1.0, float(np.min(
            [np.min(x[x > 0]) for x, _ in points.values() if np.any(x > 0)] or [1.0]))))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=10)
    return ax
