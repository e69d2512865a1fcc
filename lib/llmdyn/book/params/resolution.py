"""Resolve a chapter's model-relative defaults once, from the models' configs, before any run."""

from __future__ import annotations

from typing import TypeVar

from llmdyn import LlmdynError
from llmdyn.book.params.base import ChapterParams

P = TypeVar("P", bound=ChapterParams)


def resolve(params: P) -> P:
    """A new ``params`` with its None defaults set for ``params.model``, compare models checked.

    Reads each model's config (not its weights): the primary model's depth and width resolve
    the relative defaults in one call of :meth:`ChapterParams.for_model`, whose result carries
    what was set (``resolution``); ``compare_models`` None becomes the packaged models other
    than ``params.model``; each compare model must load, and one that is the primary model under
    another spelling is dropped with a printed note.

    Raises:
        LlmdynError: the model or a compare model does not load; the message names the
            parameter (``model`` or ``compare_models``) and what to give instead.
    """
    from llmdyn.models import known_models, model_shape, other_packaged

    try:
        shape = model_shape(params.model)
    except LlmdynError as err:
        raise LlmdynError(f"notebook parameter 'model' = {params.model!r} does not load: {err} "
                          f"Give a name from `llmdyn models` ({', '.join(known_models())}), a "
                          "checkpoint directory such as results/suite/<run>/step<N>, or a hub "
                          "id.") from None
    depths, kept = [shape.n_layers], None
    if hasattr(params, "compare_models"):
        compare = params.compare_models
        if compare is None:  # relative to the model: the other packaged models
            compare = other_packaged(params.model)
        kept = _distinct_compare_models(params.model, shape.source, compare, depths)
    return params.for_model(shape.n_layers, shape.d_model, shallowest=min(depths),
                            compare_models=kept)


def _distinct_compare_models(primary: str, source: str, compare: list[str],
                             depths: list[int]) -> list[str]:
    """The compare models that load and differ from the primary model, each once, in order.

    Appends each kept model's depth to ``depths``.
    """
    from llmdyn.models import model_shape

    kept, seen = [], {source}
    for name in compare:
        try:
            shape = model_shape(name)
            other = shape.source
        except LlmdynError as err:
            raise LlmdynError(f"notebook parameter 'compare_models': {name!r} does not load: "
                              f"{err} Remove it from compare_models (e.g. compare_models = "
                              f"{[n for n in compare if n != name]!r}).") from None
        if other in seen:
            print(f"compare model {name!r} is the same model as "
                  f"{primary if other == source else 'an earlier compare model'!r}: skipped")
            continue
        seen.add(other)
        kept.append(name)
        depths.append(shape.n_layers)
    return kept
