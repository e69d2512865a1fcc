"""The plots package keeps its flat names, and the shared figure grids have the right shape."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from llmdyn import LlmdynError, plots  # noqa: E402


def test_flat_names_are_the_family_modules_own_objects():
    import importlib

    families = {
        "base": ["style", "TRAINED_COLOR", "UNTRAINED_COLOR"],
        "matrices": ["coupling_grid", "layer_heatmap", "adjacency", "token_coupling_grid"],
        "depth": ["band", "mark_boundary", "phase_criteria", "residual_lines", "size_points",
                  "model_medians", "grouped_bars"],
        "lens": ["entropy_lines", "topk_table"],
        "spectra": ["spectrum", "fit_scatter"],
        "trajectories": ["token_label", "pc_trajectories"],
    }
    for module, names in families.items():
        family = importlib.import_module(f"llmdyn.plots.{module}")
        for name in names:
            assert getattr(plots, name) is getattr(family, name), f"plots.{name}"


def test_layer_heatmap_draws_the_matrix_in_paper_numbering_with_a_labelled_colour_bar():
    M = np.arange(9.0).reshape(3, 3)
    fig, ax = plt.subplots()
    plots.layer_heatmap(M, ax, title="m: t", label="m̃ (lower = coupled)", vmin=0, vmax=8)
    image = ax.get_images()[0]
    np.testing.assert_array_equal(image.get_array(), M)  # the values, not a resampled copy
    assert list(image.get_extent()) == [0.5, 3.5, 3.5, 0.5]  # rows and columns: layers 1–3
    assert image.get_clim() == (0, 8) and ax.get_title() == "m: t"
    assert fig.axes[-1].get_ylabel() == "m̃ (lower = coupled)"
    plt.close(fig)


def test_twins_put_the_untrained_model_left():
    fig, axes = plots.twins()
    assert list(axes) == ["untrained", "trained"]
    assert axes["untrained"].get_position().x0 < axes["trained"].get_position().x0
    plots.layer_heatmap(np.eye(3), axes["trained"], label="m̃", title="t")
    plt.close(fig)


def test_per_model_gives_one_column_each():
    fig, axes = plots.per_model(["a", "b", "c"], rows=2)
    assert list(axes) == ["a", "b", "c"] and all(len(col) == 2 for col in axes.values())
    assert fig.get_size_inches() == pytest.approx((3 * 6.2, 2 * 4.4))
    plt.close(fig)
    with pytest.raises(LlmdynError, match="names"):
        plots.per_model([])


def test_trajectory_grid_draws_three_rows_per_model():
    proj = np.random.default_rng(0).normal(size=(3, 5, 2))  # (tok, layer+1, 2)
    run = dict(proj=proj, tokens=["a", "b", "c"], n_layers=4,
               windows={"shallow": (0, 2), "deep": (2, 4)})
    fig = plots.trajectory_grid({"m (trained)": run, "n (trained)": run}, title="t")
    assert len(fig.axes) >= 6 and fig.axes[0].get_title().startswith("m (trained)")
    plt.close(fig)


def test_depth_panel_and_twin_bands():
    fig, axes = plots.per_model(["m"])
    ax = axes["m"][0]
    plots.twin_bands(np.ones((3, 5)), 2 * np.ones((2, 5)), ax, twin_label="twin")
    plots.depth_panel(ax, {"lss_peak": 2, "entropy_spread": 3, "norm_velocity": 3}, 4,
                      ylabel="y", title="m: curve")
    assert ax.get_xlim() == (-0.5, 4.5) and ax.get_title() == "m: curve"
    assert {"twin", "trained: mean (band: min–max)"} <= set(ax.get_legend_handles_labels()[1])
    plt.close(fig)


def test_a_split_into_thirds_is_drawn_with_its_middle_shaded():
    from llmdyn.phases.split import PhaseSplit

    fig, ax = plt.subplots()
    plots.mark_boundary(ax, PhaseSplit.thirds(30))  # Thought 1–10, Fixation 20–30
    (line,) = ax.get_lines()
    assert line.get_xdata()[0] == 20
    (shade,) = ax.patches
    x0, x1 = shade.get_x(), shade.get_x() + shade.get_width()
    assert (x0, x1) == pytest.approx((10.5, 19.5))  # layers 11–19 are in neither phase
    plt.close(fig)
    fig, ax = plt.subplots()
    plots.mark_boundary(ax, PhaseSplit.at(16, 30))  # no gap: the line alone, at the boundary
    assert not ax.patches and ax.get_lines()[0].get_xdata()[0] == 16
    plt.close(fig)


def test_model_medians_joins_no_two_models_with_a_line():
    # two unrelated models side by side: a line from one to the other would read as a trend
    fig, ax = plt.subplots()
    values = {"trained": [np.array([1.0, 2.0, 3.0]), np.array([5.0, 6.0, 7.0])]}
    plots.model_medians(values, ax, models=["a", "b"], ylabel="LSS", title="t")
    (points, *_), = [c for c in ax.containers]
    assert points.get_linestyle() == "None"
    np.testing.assert_allclose(points.get_ydata(), [2.0, 6.0])  # the medians, as markers
    plt.close(fig)
