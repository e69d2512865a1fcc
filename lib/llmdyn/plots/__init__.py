"""The papers' figure types in one style, by figure family; each draws on an Axes and returns it.

``from llmdyn import plots; plots.style()`` and every figure function stay importable from
``llmdyn.plots``; the families live in ``plots.base``, ``matrices``, ``depth``, ``lens``,
``trajectories``, ``spectra`` and ``layout`` (figure grids shared by the chapters).
``plots.show("<name>")`` (module ``output``) ends a figure cell: it shows the figure captioned
with the paper figure it regenerates and keeps its SVG for the book (see ``llmdyn.figures``).
"""

from llmdyn.plots.base import (  # noqa: F401
    TRAINED_COLOR,
    UNTRAINED_COLOR,
    style,
)
from llmdyn.plots.depth import (  # noqa: F401
    CRITERION_STYLES,
    PHASE_COLOR,
    band,
    depth_panel,
    grouped_bars,
    mark_boundary,
    model_medians,
    phase_criteria,
    residual_lines,
    size_points,
    twin_bands,
)
from llmdyn.plots.layout import (  # noqa: F401
    TWINS,
    per_model,
    token_coupling_twins,
    trajectory_grid,
    twins,
)
from llmdyn.plots.lens import (  # noqa: F401
    entropy_lines,
    topk_table,
)
from llmdyn.plots.matrices import (  # noqa: F401
    adjacency,
    coupling_grid,
    layer_heatmap,
    token_coupling_grid,
)
from llmdyn.plots.output import show  # noqa: F401
from llmdyn.plots.spectra import (  # noqa: F401
    fit_scatter,
    spectrum,
)
from llmdyn.plots.trajectories import (  # noqa: F401
    pc_trajectories,
    token_label,
)
