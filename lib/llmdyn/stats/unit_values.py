"""One number per independent unit, from values measured on the sub-items within each unit.

An interval is taken over independent units (prompts, models, runs, seeds, ViTs), never over
what lies within one: the tokens of a prompt, the noise draws or tiles of a prompt, the
passages of a run share their unit's randomness, and an interval over them is too narrow.
So sub-items are first summarised within their unit, by a named summary ("mean" or
"median"), and the claim gets one value per unit, keyed by unit id, in the form
`llmdyn.claims.units` accepts (``{unit id: value}``).

Two input forms, one result:

- `per_unit`: values keyed by ``(unit id, sub-item id)`` pairs, e.g.
  ``{("p3", 0): 0.71, ("p3", 1): 0.69, ("p4", 0): 0.80}``;
- `per_unit_groups`: the sub-item values of each unit, ``{unit id: [values]}``.

Both return ``{unit id: summary}`` ordered by unit id, and stop with one clear line on an empty
unit (no sub-items, e.g. a prompt whose tokens were all filtered out), an expected unit that is
missing, a non-finite value or an unknown summary.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

from llmdyn import LlmdynError

SUMMARIES = {"mean": np.mean, "median": np.median}


def per_unit(values: Mapping[tuple[Hashable, Hashable], float], summary: str, *,
             units: Iterable[Hashable] | None = None, unit: str = "unit",
             within: str = "sub-item") -> dict[Hashable, float]:
    """One ``summary`` per unit of values keyed by ``(unit id, sub-item id)``.

    Args:
        values: ``{(unit id, sub-item id): value}``.
        summary: "mean" or "median" of each unit's sub-item values.
        units: the unit ids expected (e.g. every prompt asked); each must have a value.
            None: the units present in ``values``.
        unit: what a unit is, for messages ("prompt", "run").
        within: what a sub-item is, for messages ("token", "noise draw").

    Returns:
        ``{unit id: summary of its sub-items}``, ordered by unit id.
    """
    groups: dict[Hashable, list[float]] = {u: [] for u in (units or ())}
    for key, value in values.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise LlmdynError(f"per_unit takes values keyed by (unit id, {within} id) pairs, "
                              f"got the key {key!r}; for {{unit id: [values]}} use "
                              "per_unit_groups")
        if units is not None and key[0] not in groups:
            raise LlmdynError(f"{unit} {key[0]!r} is not among the expected units "
                              f"({_few(groups)}); pass it in units= or drop its values")
        groups.setdefault(key[0], []).append(value)
    return per_unit_groups(groups, summary, unit=unit, within=within)


def per_unit_groups(groups: Mapping[Hashable, Sequence[float] | np.ndarray], summary: str, *,
                    unit: str = "unit", within: str = "sub-item") -> dict[Hashable, float]:
    """One ``summary`` per unit of each unit's sub-item values, ``{unit id: [values]}``.

    Args:
        groups: the sub-item values of each unit (any 1-d sequence or array).
        summary: "mean" or "median".
        unit: what a unit is, for messages ("prompt", "run").
        within: what a sub-item is, for messages ("token", "noise draw").

    Returns:
        ``{unit id: summary}``, ordered by unit id.
    """
    if summary not in SUMMARIES:
        raise LlmdynError(f"summary must be one of {sorted(SUMMARIES)}, got {summary!r}")
    if not groups:
        raise LlmdynError(f"no {unit}s given: one value per {unit} needs at least one {unit}")
    try:
        ids = sorted(groups)
    except TypeError as err:
        raise LlmdynError(f"{unit} ids must be of one orderable type (all str or all int), "
                          f"got {_few(groups)}") from err
    out = {}
    for uid in ids:
        x = np.asarray(groups[uid], dtype=np.float64).ravel()
        if x.size == 0:
            raise LlmdynError(f"{unit} {uid!r} has no {within}s: it cannot give a value; drop "
                              f"the {unit} (and say why) or measure it")
        if not np.isfinite(x).all():
            raise LlmdynError(f"{unit} {uid!r} has {int((~np.isfinite(x)).sum())} non-finite "
                              f"{within} values of {x.size}: drop them explicitly before "
                              "summarising (a NaN would silently change the summary)")
        out[uid] = float(SUMMARIES[summary](x))
    return out


def _few(ids: Iterable[Hashable]) -> str:
    """The first five ids, for a message."""
    ids = list(ids)
    return ", ".join(repr(i) for i in ids[:5]) + (f", ... ({len(ids)} in all)"
                                                  if len(ids) > 5 else "")
