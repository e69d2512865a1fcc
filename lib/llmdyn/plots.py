"""The papers' figure types in one consistent style; each helper draws on an Axes and returns it."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

TRAINED_COLOR = "black"
UNTRAINED_COLOR = "tab:blue"  # the papers draw initialisation in blue


def style() -> None:
    """Readable defaults for every chapter: sizes tuned for the book's column width."""
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 110, "font.size": 12, "axes.titlesize": 12,
        "axes.labelsize": 12, "xtick.labelsize": 11, "ytick.labelsize": 11,
        "legend.fontsize": 11, "figure.constrained_layout.use": True,
    })


def _as_numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def coupling_grid(
    A,
    ax: Axes,
    *,
    labels: Sequence[int],
    title: str,
    vmax: float | None = None,
    cbar: bool = True,
) -> Axes:
    """Grid of |A_{i,j}| matrices, one k×k tile per (block i, block j) (paper A Fig 3, B Fig 7).

    Args:
        A: coupling matrices ``[layer, layer, k, k]``; tile (i, j) shows ``|U_j^T J_i V_j|``.
        ax: where to draw.
        labels: the paper's layer numbers for the rows/columns (l = block + 1).
        title: names the model, prompt and token.
        vmax: colour-scale maximum (default: the 99th percentile, so one large singular
            value does not wash out the rest).
        cbar: draw a colour bar.

    Returns:
        The axes.
    """
    A = np.abs(_as_numpy(A))
    n, _, k, _ = A.shape
    gap = max(1, k // 10)
    size = n * k + (n - 1) * gap
    canvas = np.full((size, size), np.nan)
    for i in range(n):
        for j in range(n):
            r, c = i * (k + gap), j * (k + gap)
            canvas[r:r + k, c:c + k] = A[i, j]
    vmax = vmax if vmax is not None else float(np.nanpercentile(A, 99))
    image = ax.imshow(canvas, cmap="magma", vmin=0, vmax=vmax, interpolation="nearest")
    centres = [i * (k + gap) + k / 2 - 0.5 for i in range(n)]
    ax.set_xticks(centres, [str(v) for v in labels])
    ax.set_yticks(centres, [str(v) for v in labels])
    ax.set_xlabel("reference layer l′ (its top-k singular vectors U, V)")
    ax.set_ylabel("layer l (its Jacobian J)")
    ax.set_title(title)
    if cbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8, label="|A| entry")
    return ax


def layer_heatmap(
    M,
    ax: Axes,
    *,
    title: str,
    label: str,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "RdYlBu",
    first_layer: int = 1,
) -> Axes:
    """Heatmap of a layer × layer quantity such as normalised mis-coupling (paper B Fig 6).

    Args:
        M: ``[layer, layer]``; ``M[i, j]`` compares the Jacobian of layer i with the singular
            vectors of layer j.
        ax: where to draw.
        title: names the model and prompt set.
        label: colour-bar label (the quantity and its direction, e.g. "lower = coupled").
        vmin: colour-scale minimum.
        vmax: colour-scale maximum.
        cmap: colour map (red = low = strong coupling by default, as in paper B).
        first_layer: the paper's number of row 0 (1: paper layers l = block + 1).

    Returns:
        The axes.
    """
    M = _as_numpy(M)
    n = M.shape[0]
    extent = (first_layer - 0.5, first_layer + n - 0.5, first_layer + n - 0.5, first_layer - 0.5)
    image = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax, extent=extent,
                      interpolation="nearest")
    ax.set_xlabel("layer j (singular vectors)")
    ax.set_ylabel("layer i (Jacobian)")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label=label)
    return ax


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
    mid = np.nanmedian(values, 0) if center == "median" else np.nanmean(values, 0)
    if spread == "iqr":
        lo, hi = np.nanpercentile(values, 25, 0), np.nanpercentile(values, 75, 0)
    else:
        lo, hi = np.nanmin(values, 0), np.nanmax(values, 0)
    ax.plot(x, mid, color=color, label=label)
    ax.fill_between(x, lo, hi, color=color, alpha=0.2, linewidth=0)
    return ax


def adjacency(
    W,
    ax: Axes,
    *,
    title: str,
    first_layer: int = 1,
    color: str = "tab:red",
) -> Axes:
    """Layers on a circle, edges weighted by coupling strength (paper A Fig 1c–e).

    Args:
        W: ``[layer, layer]`` non-negative coupling strengths, already normalised over the
            depth pairs to [0, 1]; edge (i, j) uses the mean of W[i, j] and W[j, i].
        ax: where to draw.
        title: names the model.
        first_layer: the paper's number of node 0.
        color: edge colour.

    Returns:
        The axes.
    """
    W = _as_numpy(W)
    n = W.shape[0]
    angle = np.linspace(0, 2 * np.pi, n, endpoint=False)
    xy = np.stack([np.cos(angle), np.sin(angle)], 1)  # (layer, 2)
    sym = (W + W.T) / 2
    for i in range(n):
        for j in range(i + 1, n):
            w = float(np.clip(sym[i, j], 0, 1))
            ax.plot(*xy[[i, j]].T, color=color, alpha=w ** 2, linewidth=0.3 + 2.5 * w)
    ax.scatter(*xy.T, s=60, color="white", edgecolor="black", zorder=3)
    for i in range(n):
        if n <= 12 or i % max(1, n // 10) == 0:
            ax.annotate(str(i + first_layer), 1.13 * xy[i], ha="center", va="center",
                        fontsize=8)
    ax.set_aspect("equal")
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-1.3, 1.3)
    ax.axis("off")
    ax.set_title(title)
    return ax


# ----------------------------------------------------------------------------- paper B, ch. 03–04
PHASE_COLOR = "tab:red"  # paper B draws the Thought/Fixation transition as a dotted red line


def phase_boundary(ax: Axes, boundary: float, *, heatmap: bool = False,
                   label: str | None = "Thought | Fixation") -> Axes:
    """Mark the Thought/Fixation transition at layer ``boundary`` (paper B Figs 2–5).

    Args:
        ax: where to draw.
        boundary: the first Fixation layer (x position of a line plot over layers 0 … L).
        heatmap: on a :func:`layer_heatmap` of blocks (paper depth l = block + 1), draw both
            lines between depths ``boundary - 1`` and ``boundary``.
        label: legend label of the line (None: no legend entry).

    Returns:
        The axes.
    """
    style = dict(color=PHASE_COLOR, linestyle=":", linewidth=1.8)
    if heatmap:
        ax.axvline(boundary - 0.5, **style, label=label)
        ax.axhline(boundary - 0.5, **style)
    else:
        ax.axvline(boundary, **style, label=label)
    return ax


def entropy_lines(
    E,
    ax: Axes,
    *,
    title: str,
    log_vocab: float,
    labels: Sequence[str] | None = None,
    color: str | None = TRAINED_COLOR,
    alpha: float = 0.35,
    x=None,
) -> Axes:
    """Logit-lens entropy of the last token per layer, one line per prompt (paper B Figs 5, 8).

    Args:
        E: ``[prompt, layer+1]`` entropies in nats.
        ax: where to draw.
        title: names the model and the prompt set.
        log_vocab: ln(vocab), drawn as a dashed line (the entropy of the uniform distribution).
        labels: one legend label per prompt (None: no legend entries, one shared colour).
        color: line colour (None with labels: the colour cycle).
        alpha: line opacity.
        x: x positions ``[layer+1]`` (default 0 … L); pass relative depth to compare models.

    Returns:
        The axes.
    """
    E = _as_numpy(E)
    x = np.arange(E.shape[1]) if x is None else _as_numpy(x)
    for i, row in enumerate(E):
        if labels is None:
            ax.plot(x, row, color=color, alpha=alpha, linewidth=1)
        else:
            ax.plot(x, row, color=color, alpha=alpha, linewidth=1.6, label=labels[i],
                    marker="o", markersize=2.5)
    ax.axhline(log_vocab, color="grey", linestyle="--", linewidth=1,
               label=f"ln(vocab) = {log_vocab:.2f}")
    ax.set_ylim(-0.2, log_vocab * 1.06)
    ax.set_xlabel("layer l (0 = embedding)")
    ax.set_ylabel("entropy S(Pˡ) of the next token (nats)")
    if x is None:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    return ax


def topk_table(
    tokens: Sequence[Sequence[str]],
    probs,
    ax: Axes,
    *,
    layers: Sequence[int],
    title: str,
    entropy=None,
) -> Axes:
    """Top-k next tokens with their probabilities at selected layers (paper B Figs 9–11).

    Each row is a layer, each column a rank; a cell shows the token and its probability and is
    shaded by the probability.

    Args:
        tokens: ``[layer][k]`` decoded tokens, one row per entry of ``layers``.
        probs: ``[layer, k]`` their probabilities.
        ax: where to draw.
        layers: the layer numbers of the rows (0 = embedding).
        title: names the model and the prompt.
        entropy: ``[layer]`` entropies to print beside the layer numbers (optional).

    Returns:
        The axes.
    """
    probs = _as_numpy(probs)
    n, k = probs.shape
    image = ax.imshow(probs, cmap="Greens", vmin=0, vmax=1, aspect="auto",
                      interpolation="nearest")
    for r in range(n):
        for c in range(k):
            text = repr(tokens[r][c])[1:-1]  # shows spaces and newlines unambiguously
            text = (text[:11] + "…") if len(text) > 12 else text
            ax.text(c, r, f"‘{text}’\n{probs[r, c]:.3f}", ha="center", va="center",
                    fontsize=8, color="white" if probs[r, c] > 0.6 else "black")
    rows = [f"l = {layer}" + ("" if entropy is None else f"\nS = {float(entropy[i]):.2f}")
            for i, layer in enumerate(layers)]
    ax.set_yticks(range(n), rows, fontsize=8)
    ax.set_xticks(range(k), [f"#{c + 1}" for c in range(k)])
    ax.set_xlabel("rank of the next-token prediction")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label="probability Pˡ(token)")
    return ax


def spectrum(
    S,
    ax: Axes,
    *,
    title: str,
    n_top: int = 5,
    first_layer: int = 1,
    color: str = TRAINED_COLOR,
    label: str = "",
) -> Axes:
    """Top singular values of the block Jacobians against depth (paper A Figs 33–34).

    Args:
        S: singular values, descending, ``[prompt, layer, k]``.
        ax: where to draw (log-scale y).
        title: names the model and the prompts.
        n_top: how many singular values to draw: σ₁ bold with its IQR over prompts, σ₂ … fading.
        first_layer: the paper's number of row 0 (l = block + 1).
        color: line colour.
        label: legend prefix (e.g. "trained").

    Returns:
        The axes.
    """
    S = _as_numpy(S)
    depth = np.arange(first_layer, first_layer + S.shape[1])
    for r in range(min(n_top, S.shape[2]) - 1, -1, -1):
        mid = np.median(S[:, :, r], 0)
        if r == 0:
            band(depth, S[:, :, 0], ax, label=f"{label} σ₁".strip(), color=color)
        else:
            ax.plot(depth, mid, color=color, linewidth=0.8, alpha=0.25 + 0.5 / (r + 1),
                    label=f"{label} σ₂…σ{n_top}".strip() if r == 1 else None)
    ax.set_yscale("log")
    ax.set_xlabel("layer l")
    ax.set_ylabel("singular value of $J^l$ (median over prompts)")
    ax.set_title(title)
    return ax


def fit_scatter(
    x,
    y,
    fit,
    ax: Axes,
    *,
    label: str,
    color: str = TRAINED_COLOR,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
) -> Axes:
    """Points, their OLS line and its 95 % confidence band, the fit summarised in the legend.

    Args:
        x: predictor values ``[n]``.
        y: response values ``[n]``.
        fit: an :class:`llmdyn.stats.LinearFit` of y on x, or None to draw the points only.
        ax: where to draw.
        label: legend label of the points; the fit's slope, R² and p are appended.
        color: colour of points, line and band.
        xlabel: x-axis label.
        ylabel: y-axis label.
        title: axes title.

    Returns:
        The axes.
    """
    x, y = _as_numpy(x).ravel(), _as_numpy(y).ravel()
    if fit is None:
        ax.scatter(x, y, s=18, color=color, alpha=0.7, label=f"{label} (no fit: x constant)")
    else:
        ax.scatter(x, y, s=18, color=color, alpha=0.7,
                   label=f"{label}: slope {fit.slope:.3g}, R² = {fit.r2:.2f}, p = {fit.p:.2g}")
        grid = np.linspace(x.min(), x.max(), 100)
        lo, hi = fit.band(grid)
        ax.plot(grid, fit.predict(grid), color=color, linewidth=1.2)
        ax.fill_between(grid, lo, hi, color=color, alpha=0.15, linewidth=0)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax


# ----------------------------------------------------------------------------- paper B, ch. 01–02
CRITERION_STYLES = {  # one line style per llmdyn.phases criterion
    "lss_peak": dict(color="tab:purple", linestyle="-.", label="LSS trend turns"),
    "entropy_spread": dict(color="tab:green", linestyle="--", label="entropy spread rises"),
    "norm_velocity": dict(color="tab:orange", linestyle=(0, (1, 1.5)),
                          label="norm velocity changes"),
}


def token_label(token: str) -> str:
    """A readable token: the tokenizers' space and newline markers (Ġ, ▁, Ċ) decoded, quoted."""
    return repr(token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\n"))


def pc_trajectories(
    proj,
    ax: Axes,
    *,
    tokens: Sequence[str],
    title: str,
    layers: tuple[int, int] | None = None,
    legend: bool = False,
) -> Axes:
    """Token trajectories in a 2-D principal-component plane (paper B Fig 1, paper A Fig 12).

    Each token's points x^first … x^last are joined in depth order from an open circle at
    x^first; the last token is black and on top, the others take a qualitative colour map.

    Args:
        proj: ``[tok, layer+1, 2]`` projected trajectories (``metrics.pca_projection``).
        ax: where to draw.
        tokens: the token strings, ``[tok]`` (legend labels).
        title: names the model, the prompt and the layers.
        layers: (first, last) layer indices drawn, both included (None: all).
        legend: add a legend of the tokens.

    Returns:
        The axes.
    """
    proj = _as_numpy(proj)
    n_tok = proj.shape[0]
    first, last = (0, proj.shape[1] - 1) if layers is None else layers
    cmap = plt.get_cmap("tab10" if n_tok <= 11 else "tab20")
    for i in range(n_tok):
        final = i == n_tok - 1
        color = "black" if final else cmap(i % cmap.N)
        pts = proj[i, first:last + 1]  # (points, 2)
        ax.plot(pts[:, 0], pts[:, 1], color=color, marker="o", markersize=2.5 if final else 2,
                linewidth=1.7 if final else 0.9, alpha=1.0 if final else 0.85,
                zorder=3 if final else 2, label=token_label(tokens[i]))
        ax.plot(pts[0, 0], pts[0, 1], marker="o", markersize=6, markerfacecolor="none",
                color=color, zorder=3 if final else 2)
    ax.xaxis.set_major_locator(plt.MaxNLocator(5))  # long tick labels must not overlap
    ax.set_xlabel("PC 1 of X^L")
    ax.set_ylabel("PC 2 of X^L")
    ax.set_title(title)
    if legend:
        ax.legend(fontsize=7, loc="best", ncol=1 if n_tok <= 12 else 2)
    return ax


def phase_criteria(ax: Axes, layers, *, legend: bool = True) -> Axes:
    """Vertical lines at each criterion's Thought -> Fixation estimate (``llmdyn.phases``).

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
    sd = np.nanstd(r, axis=0) if np.isfinite(r).any() else np.full(r.shape[1], np.nan)
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


# ----------------------------------------------------------------------------- paper A, ch. 06–07


def token_coupling_grid(
    A,
    ax: Axes,
    *,
    labels: Sequence[str],
    title: str,
    row_label: str,
    col_label: str,
    normalize: bool = True,
    vmax: float | None = None,
) -> Axes:
    """Grid of |A| tiles over token pairs at fixed layers l, l′ (paper A Figs 4, 17–19, 21–23).

    Jacobians of different tokens differ in scale by orders of magnitude (the first token is
    often an attention sink), so by default each tile is divided by its Frobenius norm: the
    colours then show where a tile's mass lies, which is what m̃(A) scores.

    Args:
        A: ``[tok, tok, k, k]``; tile (i, j) expresses row i's Jacobian at layer l in the top-k
            singular vectors of column j's Jacobian at layer l′.
        ax: where to draw.
        labels: one label per row and column (tokens or token pairs).
        title: names the model, the prompt, the layers and the kind of coupling.
        row_label: what varies along the rows (e.g. "t (Jacobian J^l_tt)").
        col_label: what varies along the columns (e.g. "t′ (singular vectors of J^l′_t′t′)").
        normalize: show |A| / ‖A‖_F per tile (all-zero tiles stay 0).
        vmax: colour-scale maximum (default: the 99th percentile of the shown values).

    Returns:
        The axes.
    """
    A = np.abs(_as_numpy(A)).astype(float)  # (tok, tok, k, k)
    if normalize:
        norm = np.linalg.norm(A, axis=(-2, -1), keepdims=True)  # (tok, tok, 1, 1)
        A = np.divide(A, norm, out=np.zeros_like(A), where=norm > 0)
    coupling_grid(A, ax, labels=list(labels), title=title, vmax=vmax,  # type: ignore[arg-type]
                  cbar=False)
    ax.figure.colorbar(ax.images[-1], ax=ax, shrink=0.8,
                       label="|A| / ‖A‖_F per tile" if normalize else "|A| entry")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    ax.tick_params(axis="y", labelsize=7)
    return ax


def _series_color(name: str, i: int) -> str:
    """The papers' colours: series named "untrained …" blue, "trained …" black, others cycle."""
    if name.startswith("untrained"):
        return UNTRAINED_COLOR
    return TRAINED_COLOR if name.startswith("trained") else f"C{(i + 1) % 10}"


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
    parameter count.

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
                    linewidth=1.2, label=f"{name} (median, IQR)")
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
    ax.legend(fontsize=8)
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
    ax.legend(fontsize=8)
    return ax
