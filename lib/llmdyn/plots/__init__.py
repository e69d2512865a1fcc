"""The papers' figure types in one style, by figure family; each draws on an Axes and returns it.

``from llmdyn import plots; plots.style()`` and every figure function stay importable from
``llmdyn.plots``; the families live in ``plots.base``, ``matrices``, ``depth``, ``lens``,
``trajectories``, ``spectra`` and ``layout`` (figure grids shared by the chapters).
``plots.show("<name>")`` (module ``output``) ends a figure cell: it shows the figure captioned
with the paper figure it regenerates and keeps its SVG for the book (see
``llmdyn.book.figure_files``).

Names resolve lazily (``lazy_loader``): ``plots.band`` imports ``plots.depth`` alone, so a
chapter depends on the figure families it draws with and no other.

May import: ``phases.split``, ``data``, ``stats``, ``core``; never model or Jacobian code.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["base", "depth", "layout", "lens", "matrices", "output", "spectra", "training",
                "trajectories"],
    submod_attrs={
        "base": ["TRAINED_COLOR", "UNTRAINED_COLOR", "style"],
        "depth": ["band", "PHASE_COLOR", "mark_boundary", "CRITERION_STYLES", "phase_criteria",
                  "residual_lines", "size_points", "model_medians", "grouped_bars", "depth_panel",
                  "twin_bands"],
        "layout": ["TWINS", "twins", "per_model", "token_coupling_twins", "trajectory_grid"],
        "lens": ["entropy_lines", "topk_table"],
        "matrices": ["coupling_grid", "layer_heatmap", "adjacency", "token_coupling_grid"],
        "output": ["render", "caption_text", "show", "not_drawn"],
        "spectra": ["spectrum", "fit_scatter"],
        "training": ["step_axis", "run_color", "over_steps", "loss_curves", "against_depth",
                     "scatter_runs"],
        "trajectories": ["token_label", "pc_trajectories"],
    },
)
