"""A coupling result file checked against itself: its aggregates are the means of its prompts.

A file edited by hand, cut short or written by a broken run disagrees with itself: an aggregate
that is not the mean of the per-prompt values it lists, fewer prompts than its own parameters
ask for, or a value that is not a finite number (``"NaN"`` parses as a float).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from llmdyn import LlmdynError

__all__ = ["TOLERANCE", "check_consistent"]

# Aggregates are float32 means over the same prompts; 1e-5 is far above their rounding
# (~1e-7) and far below any edit worth making.
TOLERANCE = 1e-5
_SCORES = ("miscoupling", "diagonal_share")


def _fix(path: Any, raw: Mapping[str, Any]) -> str:
    name = raw.get("model", {}).get("name", "<model>") if isinstance(raw.get("model"), Mapping) \
        else "<model>"
    return (f"the file was edited or is corrupt; rerun its measurement: `llmdyn measure "
            f"coupling --model {name} --out {path}`")


def _finite(path: Any, raw: Mapping[str, Any], where: str, values: np.ndarray) -> None:
    bad = int(np.size(values) - np.isfinite(values).sum())
    if bad:
        raise LlmdynError(f"result file {path}: {bad} of {np.size(values)} values of {where} "
                          f"are NaN or infinite; {_fix(path, raw)}")


def check_consistent(path: Any, raw: Mapping[str, Any], params: Mapping[str, Any],
                     prompts: list[Mapping[str, Any]]) -> None:
    """Refuse a result file whose aggregates, counts or values disagree with its own prompts.

    Args:
        path: the file, for the message.
        raw: the file's parsed JSON (``aggregate`` with ``miscoupling``, ``diagonal_share``
            and optionally ``per_task``).
        params: its own parameters (``n_per_task``, ``tasks``).
        prompts: its per-prompt records (``id``, ``task``, ``miscoupling``,
            ``diagonal_share``).

    Raises:
        LlmdynError: a prompt count other than ``n_per_task`` per task, a repeated prompt id,
            a non-finite value, or an aggregate further than `TOLERANCE` from the mean of the
            per-prompt values it summarises.
    """
    tasks, n_per_task = list(params["tasks"]), int(params["n_per_task"])
    counts = Counter(p["task"] for p in prompts)
    if len(prompts) != n_per_task * len(tasks) or any(counts[t] != n_per_task for t in tasks):
        raise LlmdynError(f"result file {path} holds {len(prompts)} prompts "
                          f"({dict(counts)}), but its parameters ask for {n_per_task} from each "
                          f"of {tasks} ({n_per_task * len(tasks)}); {_fix(path, raw)}")
    ids = [p["id"] for p in prompts]
    if len(set(ids)) != len(ids):
        raise LlmdynError(f"result file {path} lists a prompt twice "
                          f"({Counter(ids).most_common(1)[0][0]}); {_fix(path, raw)}")
    agg = raw["aggregate"]
    groups = {"": prompts, **{t: [p for p in prompts if p["task"] == t] for t in tasks}}
    for task, chosen in groups.items():
        summary = agg if not task else agg.get("per_task", {}).get(task)
        if summary is None:
            continue  # an older file without per-task aggregates
        for score in _SCORES:
            values = np.array([p[score] for p in chosen], dtype=np.float64)
            where = f"{score} of {'every prompt' if not task else task}"
            _finite(path, raw, where, values)
            stated = np.array(summary[score], dtype=np.float64)
            _finite(path, raw, f"the aggregate {where}", stated)
            if abs(float(stated) - values.mean()) > TOLERANCE:
                raise LlmdynError(
                    f"result file {path}: its aggregate {score}"
                    f"{'' if not task else f' for {task}'} is {float(stated):.6g}, but the mean "
                    f"of its {len(values)} per-prompt values is {values.mean():.6g}; "
                    f"{_fix(path, raw)}")
    _finite(path, raw, "coupling_authors", np.array(agg["coupling_authors"], dtype=np.float64))
