"""The independent units a verdict is computed over, and per-unit values keyed by unit id.

A claim's interval is taken over one number per **independent unit**: a prompt, a model, a
training run, a seed, a ViT or a task (`UNITS`). Prompts drawn from a few tasks are not
independent of each other: where the task explains much of their spread (chapter 07's six
leaderboard tasks), each task is summarised first (`per_cluster`) and the interval is taken over
the tasks. Tokens, tiles, layers, noise draws, passages and
checkpoints are never units (`NOT_UNITS`): they share their prompt's, model's or run's
randomness, so an interval over them is too narrow. A chapter first summarises them within
their unit (e.g. the median over a prompt's tokens, `llmdyn.stats` for the summaries) and
hands the claim one value per unit.

Values may come keyed by unit id (``{"prompt 3": 0.71, ...}``). Paired samples are then
matched by id, not by position, and a unit missing from one side is an error rather than a
silent shift of every later pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from llmdyn import LlmdynError

UNITS = {"prompt": "prompts", "model": "models", "run": "runs", "seed": "seeds",
         "ViT": "ViTs", "task": "tasks"}  # singular -> plural, as "n = 20 prompts" shows it
NOT_UNITS = ("token", "tile", "layer", "layer pair", "noise draw", "passage", "checkpoint")


def check_unit(unit: str) -> str:
    """``unit`` if it names an independent unit (or is "" for none), else a clear error."""
    if unit == "" or unit in UNITS:
        return unit
    if unit.rstrip("s") in NOT_UNITS or unit in NOT_UNITS:
        raise LlmdynError(f"sampling_unit={unit!r} is not an independent unit: summarise the "
                          f"{unit} within each prompt, model or run first (one number per "
                          f"unit), then pass sampling_unit='prompt' (or 'model', 'run', ...)")
    raise LlmdynError(f"sampling_unit must be one of {sorted(UNITS)}, got {unit!r}")


def counted(unit: str, n: int) -> str:
    """"20 prompts", "1 run"; "20 items" when no unit is declared."""
    if not unit:
        return f"{n} item{'s' if n != 1 else ''}"
    return f"{n} {unit if n == 1 else UNITS[unit]}"


def per_cluster(values, clusters: Sequence[str], statistic=np.mean) -> dict[str, float]:
    """One number per cluster: ``statistic`` of the values of its members, keyed by cluster.

    Args:
        values: ``[member]`` one value per member (e.g. per prompt).
        clusters: ``[member]`` each member's cluster (e.g. its task), in the order of values.
        statistic: ``[member] -> float`` (default the mean).

    Returns:
        ``{cluster: statistic of its members}``, clusters in order of first appearance.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    clusters = [str(c) for c in clusters]
    if len(clusters) != values.size or values.size == 0:
        raise LlmdynError(f"per_cluster needs one cluster per value, got {len(clusters)} "
                          f"clusters for {values.size} values")
    names = list(dict.fromkeys(clusters))
    return {c: float(statistic(values[[k == c for k in clusters]])) for c in names}


def keyed(ids: Sequence[str], values) -> dict[str, float]:
    """``{unit id: value}`` from ``[unit]`` values in the order of ``ids`` (lengths must match)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if len(ids) != values.size:
        raise LlmdynError(f"keyed needs one value per unit id, got {values.size} values for "
                          f"{len(ids)} ids")
    return dict(zip(map(str, ids), values.tolist(), strict=True))


def aligned(samples: Sequence, *, paired: bool) -> tuple[list, tuple[str, ...]]:
    """Samples as arrays, with their unit ids where they came keyed by id.

    Args:
        samples: arrays ``[unit]``, or mappings ``{unit id: value}`` (all of one form).
        paired: the samples hold the same units (then every mapping has the same ids, and the
            arrays follow the first mapping's order).

    Returns:
        ``(arrays, ids)``: ``ids`` are the unit ids, ``()`` for plain arrays: the first
        sample's when paired (every sample holds the same units), else every sample's in turn
        (independent groups hold different units).
    """
    keyed = [isinstance(s, Mapping) for s in samples]
    if not any(keyed):
        return list(samples), ()
    if not all(keyed):
        raise LlmdynError("samples must all be keyed by unit id (mappings) or all be arrays, "
                          "not a mix")
    ids = tuple(str(k) for k in samples[0])
    if paired:
        for s in samples[1:]:
            missing, extra = set(ids) - set(map(str, s)), set(map(str, s)) - set(ids)
            if missing or extra:
                raise LlmdynError(f"paired samples must hold the same units; missing "
                                  f"{sorted(missing)[:5]}, extra {sorted(extra)[:5]}")
        by_id = [{str(k): v for k, v in s.items()} for s in samples]
        return [np.asarray([s[i] for i in ids], dtype=np.float64) for s in by_id], ids
    ids = tuple(str(k) for s in samples for k in s)
    return [np.asarray(list(s.values()), dtype=np.float64) for s in samples], ids
