"""Curves along depth and per-model summaries: bands, phase lines, residuals, medians, bars."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

from llmdyn.core import masked
from llmdyn.phases.split import PhaseSplit
from llmdyn.plots.base import TRAINED_COLOR, UNTRAINED_COLOR, _as_numpy, _series_color


def band(
    x,
    values,
    ax: Axes,
    *,
    label: str,
    color: str = TRAINED_COLOR,
    center: str = "median",
    spread: str = "iqr",
) -> Axes:
    """A centre line with a band over prompts (median+IQR in paper A, mean+min/max in paper B).

    Args:
        x: positions along the x axis, ``[n]``.
        values: ``[prompt, n]``; NaN entries are ignored.
        ax: where to draw.
        label: legend label.
        color: line and band colour.
        center: ``"median"`` or ``"mean"``.
        spread: ``"iqr"`` (25–75 %) or ``"minmax"``.

    Returns:
        The axes.
    """
    values = _as_numpy(values)
    # windowed curves are NaN where no window fits: reduce only the columns that hold values
    mid = masked.columns(values, "median" if center == "median" else "mean")
    if spread == "iqr":
        lo, hi = (masked.columns(values, "percentile", q=q) for q in (25, 75))
    else:
        lo, hi = masked.columns(values, "min"), masked.columns(values, "max")
    ax.plot(x, mid, color=color, label=label)
    ax.fill_between(x, lo, hi, color=color, alpha=0.2, linewidth=0)
    return ax


PHASE_COLOR = "tab:red"  # paper B draws the Thought/Fixation transition as a dotted red line


def mark_boundary(ax: Axes, boundary: float | PhaseSplit, *, heatmap: bool = False,
                   label: str | None = "Thought | Fixation") -> Axes:
    """Mark the Thought/Fixation transition at layer ``boundary`` (paper B Figs 2–5).

    Args:
        ax: where to draw.
        boundary: the first Fixation layer (x position of a line plot over layers 0 … L), or a
            :class:`~llmdyn.phases.PhaseSplit`, drawn at its first Fixation layer; layers it
            leaves out between the phases (the middle third of ``"thirds"``) are shaded grey.
        heatmap: on a :func:`layer_heatmap` of blocks (paper depth l = block + 1), draw both
            lines between depths ``boundary - 1`` and ``boundary``.
        label: legend label of the line (None: no legend entry).

    Returns:
        The axes.
    """
    style = dict(color=PHASE_COLOR, linestyle=":", linewidth=1.8)
    if isinstance(boundary, PhaseSplit):
        (_, last_thought), (first_fixation, _) = boundary.thought, boundary.fixation
        if first_fixation - last_thought > 1 and not heatmap:
            ax.axvspan(last_thought + 0.5, first_fixation - 0.5, color="0.85", zorder=0,
                       label=f"in neither phase ({boundary.name})")
        boundary = first_fixation
    if heatmap:
        ax.axvline(boundary - 0.5, **style, label=label)
        ax.axhline(boundary - 0.5, **style)
    else:
        ax.axvline(boundary, **style, label=label)
    return ax


CRITERION_STYLES = {  # one line style per llmdyn.phases.split criterion
    "lss_peak": dict(color="tab:purple", linestyle="-.", label="LSS trend turns"),
    "entropy_spread": dict(color="tab:green", linestyle="--", label="entropy spread rises"),
    "norm_velocity": dict(color="tab:orange", linestyle=(0, (1, 1.5)),
                          label="norm velocity changes"),
}


def phase_criteria(ax: Axes, layers, *, legend: bool = True) -> Axes:
    """Vertical lines at each criterion's Thought -> Fixation estimate (``llmdyn.phases.split``).

    Args:
        ax: a plot over layers 0 … L.
        layers: criterion name -> layer, e.g. ``PhaseBoundary.layers``.
        legend: give the lines legend labels.

    Returns:
        The axes.
    """
    for name, layer in layers.items():
        style = dict(CRITERION_STYLES.get(name, dict(color=PHASE_COLOR, linestyle=":",
                                                     label=name)))
        label = f"{style.pop('label')} ({layer})"
        ax.axvline(layer, linewidth=1.5, alpha=0.9, **style, label=label if legend else None)
    return ax


def residual_lines(x, residuals, ax: Axes, *, label: str, color: str = TRAINED_COLOR) -> Axes:
    """Each prompt's deviation from the mean curve, with ±1 std dotted (paper B Fig 13).

    Args:
        x: positions ``[n]``.
        residuals: ``[prompt, n]`` (``geometry.residuals``); NaN entries are skipped.
        ax: where to draw.
        label: legend label of the ±1 std lines.
        color: colour of the lines.

    Returns:
        The axes.
    """
    r = _as_numpy(residuals)
    x = _as_numpy(x)
    for row in r:
        ax.plot(x, row, color=color, alpha=0.25, linewidth=0.7)
    sd = masked.columns(r, "std")  # NaN where no window fits, without a warning
    ax.plot(x, sd, color=color, linestyle=":", linewidth=1.8, label=label)
    ax.plot(x, -sd, color=color, linestyle=":", linewidth=1.8)
    ax.axhline(0, color="grey", linewidth=0.8)
    return ax


def size_points(sizes, whole, fixation, ax: Axes, *, labels: Sequence[str], ylabel: str,
                title: str) -> Axes:
    """Per-model means over all layers and over the Fixation layers vs size (paper B Fig 12).

    Open grey points: the mean over every layer; filled red points: over the Fixation layers.

    Args:
        sizes: ``[model]`` parameter counts (log x axis).
        whole: ``[model]`` the mean over every layer.
        fixation: ``[model]`` the mean over the Fixation layers only.
        ax: where to draw.
        labels: ``[model]`` model names, written beside the points.
        ylabel: the quantity.
        title: names the prompt set.

    Returns:
        The axes.
    """
    sizes, whole, fixation = (_as_numpy(v).astype(float) for v in (sizes, whole, fixation))
    order = np.argsort(sizes)
    ax.plot(sizes[order], whole[order], color="grey", marker="o", markerfacecolor="white",
            markersize=7, label="(1) all layers")
    ax.plot(sizes[order], fixation[order], color=PHASE_COLOR, marker="o", markersize=7,
            label="(2) Fixation layers")
    for s, a, b, name in zip(sizes, whole, fixation, labels, strict=True):
        ax.plot([s, s], [a, b], color="grey", linewidth=0.6, linestyle="--")
        ax.annotate(name, (s, max(a, b)), textcoords="offset points", xytext=(4, 6), fontsize=8)
    ax.set_xscale("log")
    ax.set_xticks(sorted(set(sizes)), [f"{v / 1e6:.3g}M" for v in sorted(set(sizes))])
    ax.minorticks_off()
    ax.set_xlim(min(sizes) / 1.6, max(sizes) * 1.6)
    ax.set_xlabel("parameters")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return ax


def model_medians(
    values,
    ax: Axes,
    *,
    models: Sequence[str],
    ylabel: str,
    title: str,
    log: bool = False,
) -> Axes:
    """Median over prompts with the inter-quartile range, per model (paper A Figs 5, 25).

    Trained series are black and untrained blue, as in the paper; pass the models sorted by
    parameter count. The models are unrelated to each other, so no line joins one model's point
    to the next (a line would read as a trend along the x axis).

    Args:
        values: series name (``"trained"``, ``"untrained"``, …) -> one ``[prompt]`` array per
            model, in the order of ``models``; NaN entries are ignored.
        ax: where to draw.
        models: x tick labels, ``[model]``.
        ylabel: the quantity.
        title: names the prompt set.
        log: logarithmic y axis.

    Returns:
        The axes.
    """
    n = len(values)
    x = np.arange(len(models), dtype=float)
    for i, (name, per_model) in enumerate(values.items()):
        if len(per_model) != len(models):
            raise ValueError(f"values[{name!r}] has {len(per_model)} arrays for "
                             f"{len(models)} models")
        vals = [_as_numpy(v).astype(float) for v in per_model]
        mid = np.array([np.nanmedian(v) for v in vals])
        lo = np.array([np.nanpercentile(v, 25) for v in vals])
        hi = np.array([np.nanpercentile(v, 75) for v in vals])
        xs = x + (i - (n - 1) / 2) * 0.12
        color = _series_color(name, i)
        ax.errorbar(xs, mid, yerr=[mid - lo, hi - mid], color=color, marker="o", capsize=5,
                    linestyle="none", elinewidth=1.2, label=f"{name} (median, IQR)")
    ax.set_xticks(x, list(models))
    ax.set_xlim(-0.5, len(models) - 0.5)
    ax.set_xlabel("model (sorted by parameter count)")
    ax.set_ylabel(ylabel)
    if log:
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _: f"{v:g}")  # 2, 3, 5 rather than 2×10⁰
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
    ax.set_title(title)
    ax.legend(fontsize=10)
    return ax


def grouped_bars(
    values,
    ax: Axes,
    *,
    groups: Sequence[str],
    ylabel: str,
    title: str,
    reference: float | None = None,
    reference_label: str = "chance",
    hatched: Sequence[str] = (),
) -> Axes:
    """Bars of one score per group and series, e.g. diagonal share per kind of coupling.

    Args:
        values: series name -> ``[group]`` values; series named ``"trained"``/``"untrained"``
            (or starting so) take the papers' black/blue.
        ax: where to draw.
        groups: x tick labels, ``[group]``.
        ylabel: the score.
        title: names the model, prompt and layers.
        reference: draw a dashed horizontal line here (e.g. chance level 1/k).
        reference_label: legend label of that line.
        hatched: series drawn as hatched outlines (e.g. a control condition).

    Returns:
        The axes.
    """
    n = len(values)
    width = 0.8 / max(n, 1)
    x = np.arange(len(groups), dtype=float)
    for i, (name, vals) in enumerate(values.items()):
        color = _series_color(name, i)
        hatch = "//" if name in hatched else None
        ax.bar(x + (i - (n - 1) / 2) * width, _as_numpy(vals).astype(float), width,
               color=color if hatch is None else "white", edgecolor=color, hatch=hatch,
               label=name)
    if reference is not None:
        ax.axhline(reference, color="grey", linestyle="--", linewidth=1, label=reference_label)
    ax.set_xticks(x, list(groups))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=10)
    return ax


def depth_panel(ax: Axes, boundaries: dict[str, int], n_layers: int, *, ylabel: str,
                title: str) -> Axes:
    """Finish a panel of a curve along depth: the boundary estimates, every layer, labels.

    Args:
        ax: the panel, with its curves drawn.
        boundaries: `llmdyn.phases.split` estimates by criterion (``PhaseBoundary.layers``).
        n_layers: the model's depth L (the axis shows 0 … L even where no window fits).
        ylabel: what the curve is.
        title: the panel's title.
    """
    from matplotlib.ticker import MaxNLocator

    phase_criteria(ax, boundaries)
    ax.set_xlim(-0.5, n_layers + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("layer l (0 = embedding, L = last block output)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=9)
    return ax


def twin_bands(values, twin, ax: Axes, *, twin_label: str) -> Axes:
    """Mean and min–max band over prompts of the trained model, and of its twin if given.

    Args:
        values: ``[prompt, layer+1]`` of the trained model.
        twin: ``[prompt, layer+1]`` of the untrained twin, or None.
        ax: where to draw.
        twin_label: the twin's legend entry.
    """
    values = _as_numpy(values)
    depth = np.arange(values.shape[1])
    band(depth, values, ax, center="mean", spread="minmax",
         label="trained: mean (band: min–max)")
    if twin is not None:
        band(depth, _as_numpy(twin), ax, center="mean", spread="minmax", color=UNTRAINED_COLOR,
             label=twin_label)
    return ax
