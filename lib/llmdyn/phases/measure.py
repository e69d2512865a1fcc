"""The Thought/Fixation boundary of a model, measured from its trajectories and logit lens."""

from __future__ import annotations

from collections.abc import Sequence

from llmdyn.data.named import Prompt
from llmdyn.phases.split import PhaseBoundary, estimate_boundary, window_that_fits
from llmdyn.trajectories.geometry import depth_profile, token_states
from llmdyn.trajectories.lens import lens_entropy


def measure_boundary(model, prompts: Sequence[str], store=None, *, window: int = 11,
                     min_size: int = 3, lens: str = "paper",
                     cut_long_prompts: bool = False) -> PhaseBoundary:
    """Measure the curves of ``prompts`` on ``model`` (cached) and estimate its boundary.

    A convenience for chapters that only need the boundary: the last token's states come from
    :func:`llmdyn.trajectories.token_states` and the entropies from
    :func:`llmdyn.trajectories.lens_entropy` (one forward pass per prompt, shared through
    ``store``).

    Args:
        model: a :class:`llmdyn.models.LoadedModel`.
        prompts: texts (paper B: 100 SQuAD questions with context).
        store: a :class:`llmdyn.core.ResultStore` for ``model`` (None: no caching).
        window: LSS window length (paper B: 11), shrunk by :func:`window_that_fits` for shallow
            models.
        min_size: minimum points per segment for every fit.
        lens: logit lens of the entropies, ``"paper"`` (paper B §3.7) or ``"normed"``
            (:func:`llmdyn.trajectories.lens_entropy`).
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        The boundary estimates, named after ``model.name``; ``.first_fixation(criterion)``
        gives the layer the chapters split at.
    """
    prompts = [p.text if isinstance(p, Prompt) else p for p in prompts]
    profile = depth_profile(token_states(model, prompts, store, cut_long_prompts=cut_long_prompts),
                            window_that_fits(window, model.n_layers))
    entropy = lens_entropy(model, prompts, store, lens=lens, cut_long_prompts=cut_long_prompts)
    return estimate_boundary(model.name, norms=profile.norms, windowed_lss=profile.lss,
                             entropy=entropy,
                             min_size=min_size)
