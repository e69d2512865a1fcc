"""Results computed from block Jacobians, cached per prompt under a key the library builds.

A cached result depends on the measurement's own parameters (k, layers, ``last_point``, …),
which the measuring function names, and on the route the Jacobians took where its arithmetic
differs beyond bits (:func:`llmdyn.jacobians.mlp_start.route_params`), which is resolved here
from the model: no caller adds it, so none can forget it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore
from llmdyn.jacobians.mlp_start import route_params
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import check_prompts_fit

Arrays = dict[str, Any]


def jacobian_key(model: LoadedModel, params: Mapping[str, Any]) -> dict[str, Any]:
    """The cache key of a Jacobian result: the measurement's ``params`` and the route's.

    ``cut_long_prompts`` is not in it: a prompt that fits gives the same result either way,
    and :func:`cached_per_prompt` refuses a long prompt before reading the cache unless it is
    cut (:func:`llmdyn.trace.encode`).
    """
    clash = sorted(set(params) & set(route_params(model)))
    if clash:
        raise LlmdynError(f"measurement parameters {clash} are route parameters; the route's "
                         "are added by jacobian_key")
    return {**params, **route_params(model)}


def cached_per_prompt(store: ResultStore | None, measurement: str, model: LoadedModel,
                      params: Mapping[str, Any], prompts: Sequence[str],
                      compute: Callable[[str], Mapping[str, Any]], *, cut_long_prompts: bool,
                      progress: bool = True) -> list[Arrays]:
    """``compute(prompt)`` of each prompt, through ``store`` under :func:`jacobian_key`.

    Args:
        store: results cache (None: compute without caching).
        measurement: the cache's measurement name (e.g. ``"depth_coupling"``).
        model: the model the Jacobians are of.
        params: the measurement's parameters (JSON types), without the route's.
        prompts: texts; each is one cached item.
        compute: one prompt's arrays by name.
        cut_long_prompts: whether a prompt longer than the context is cut to its end; when
            False a long prompt raises here, before any cached result is read.
        progress: progress bar over the prompts (with a store).

    Returns:
        One dict of arrays per prompt, in order.
    """
    check_prompts_fit(model, prompts, cut_long_prompts=cut_long_prompts)
    if store is None:
        return [dict(compute(p)) for p in prompts]
    return store.map(measurement, jacobian_key(model, params), list(prompts), compute,
                     progress=progress)
