"""What the n that would decide an open claim costs: its chapter's CPU time at that n.

The per-prompt cost table (``data/prompt_cost.json``, written by ``bench/prompt_cost.py``)
holds, for each chapter, a fixed CPU cost and a CPU cost per unit of each n-parameter, measured
on this machine's default models. A chapter's cost at some parameters is the additive model

    cpu_s = fixed_cpu_s + Σ_p cpu_s_per_unit[p] · value[p]

whose prediction of the default build the table checks against a measured run. A prompt-unit
claim's n is set by one parameter (`n_parameter`): the primary model's prompts by ``n_prompts``
(chapter 07's by ``n_per_task``, drawn per task), a compare model's by ``n_compare_prompts``,
and the exceptions in `BY_PREFIX`. The parameter is only trusted when its value in the build
equals the claim's observed n. A table measured on a GPU (``data/prompt_cost_cuda.json``)
gives that device's time the same way; without one, no GPU time is printed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from llmdyn.core.paths import data_file

CPU_TABLE = "prompt_cost.json"
GPU_TABLE = "prompt_cost_cuda.json"
#: (chapter, claim-id prefix) -> the parameter that sets those claims' n, where the default
#: rule (primary model: n_prompts, compare model: n_compare_prompts) is not the one
BY_PREFIX = {("04_jacobian_alignment", "table1_"): "n_lens_prompts"}
PRIMARY = {"07_regularity": "n_per_task"}  # a chapter whose primary prompts are set otherwise
PER_TASK = "n_per_task"  # the n of a per-task parameter is its value times the tasks
MEASURED_BY = "bench/prompt_cost.py"  # the script that writes the tables
NO_GPU = "`bench/prompt_cost.py --device cuda` on a GPU machine writes its table"


@dataclass(frozen=True)
class ChapterCost:
    """One chapter's measured cost: a fixed part and a part per unit of each n-parameter."""

    fixed_s: float
    per_unit_s: Mapping[str, float]  # parameter -> seconds per unit
    defaults: Mapping[str, int]  # parameter -> its value in the measured default run
    #: parameter -> (the parameter whose sample it draws from, units each unit of that one
    #: gives): raising it raises that one too (the bench's `Knob.bound_by`, in the table)
    bound_by: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    #: the day this chapter was measured (YYYY-MM-DD), where a partial rerun of the bench kept
    #: the row from an earlier table (it writes that table's day); None: the table's own day
    measured: str | None = None

    def seconds(self, values: Mapping[str, int]) -> float:
        """The additive model at ``values`` (parameters not given keep their measured default)."""
        return self.fixed_s + sum(rate * values.get(p, self.defaults[p])
                                  for p, rate in self.per_unit_s.items())


@dataclass(frozen=True)
class CostTable:
    """The per-prompt cost table of one device ("cpu" or "cuda")."""

    device: str  # "cpu", or the GPU's name
    models: tuple[str, ...]  # the models the table was measured on, primary first
    chapters: Mapping[str, ChapterCost]
    source: str  # what measured it: the command and the day of its last run

    def chapter_source(self, chapter: str) -> str:
        """What measured one chapter's row: the table's command on that row's own day."""
        day = self.chapters[chapter].measured
        return f"{MEASURED_BY}, measured {day}" if day else self.source

    @classmethod
    def read(cls, path: Path) -> CostTable | None:
        """The table in ``path``, or None where there is no such file."""
        if not Path(path).is_file():
            return None
        raw = json.loads(Path(path).read_text())
        chapters = {
            name: ChapterCost(
                float(c["fixed_cpu_s"]),
                {p: float(v["cpu_s_per_unit"]) for p, v in c["parameters"].items()},
                {p: int(v["default"]) for p, v in c["parameters"].items()},
                {p: (v["bound_by"], int(v.get("per_bound", 1)))
                 for p, v in c["parameters"].items() if v.get("bound_by")},
                c.get("measured"))
            for name, c in raw["chapters"].items()}
        models = tuple(raw.get("models", ("smollm2-135m", "gemma3-270m")))
        day = str(raw.get("start", ""))[:10] or "on an unrecorded day"
        return cls(raw.get("gpu") or raw.get("device", "cpu"), models, chapters,
                   f"{MEASURED_BY}, measured {day}")


def cost_tables() -> tuple[CostTable | None, CostTable | None]:
    """The CPU and GPU tables: ``data/prompt_cost.json`` and ``data/prompt_cost_cuda.json``."""
    return CostTable.read(data_file(CPU_TABLE)), CostTable.read(data_file(GPU_TABLE))


def n_parameter(chapter: str, claim_id: str, model: str,
                params: Mapping[str, object]) -> str | None:
    """The chapter parameter that sets a prompt-unit claim's n; None where none is known.

    Args:
        chapter: the chapter's name, e.g. "04_jacobian_alignment".
        claim_id: the claim's id (`BY_PREFIX` matches its start).
        model: the model the claim is about.
        params: the chapter's parameters in effect (``model`` names the primary one).
    """
    for (where, prefix), name in BY_PREFIX.items():
        if where == chapter and claim_id.startswith(prefix):
            return name if name in params else None
    name = PRIMARY.get(chapter, "n_prompts") if model == params.get("model") \
        else "n_compare_prompts"
    return name if name in params else None


def planned_values(name: str, n_now: int, n_planned: int, params: Mapping[str, object],
                   bound_by: Mapping[str, tuple[str, int]]) -> dict[str, int] | None:
    """The n-parameters that give ``n_planned`` units where ``name`` gives ``n_now`` today.

    None when ``name``'s value does not account for the observed ``n_now`` (then the claim's
    n is not set by it, and no cost is given). A per-task parameter scales with the tasks; a
    parameter drawn from another's sample (``bound_by``, `ChapterCost.bound_by`) raises that one
    just enough to hold it.
    """
    value = params.get(name)
    if not isinstance(value, int) or value < 1:
        return None
    if name == PER_TASK:
        if n_now % value:
            return None
        planned = {name: math.ceil(n_planned / (n_now // value))}
    elif value == n_now:
        planned = {name: n_planned}
    else:
        return None
    source, per = bound_by.get(name, (None, 1))
    if source is not None and isinstance(params.get(source), int):
        planned[source] = max(int(params[source]), math.ceil(planned[name] / per))
    return planned


def chapter_seconds(table: CostTable, chapter: str, planned: Mapping[str, int],
                    params: Mapping[str, object]) -> float | None:
    """The chapter's seconds on ``table``'s device with ``planned`` over the build's values."""
    cost = table.chapters.get(chapter)
    if cost is None or any(p not in cost.per_unit_s for p in planned):
        return None
    values = {p: int(params[p]) for p in cost.per_unit_s if isinstance(params.get(p), int)}
    return cost.seconds({**values, **planned})


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 600 else f"{seconds / 60:.1f} min"


def cost_text(chapter: str, claim_id: str, model: str, n_now: int | None,
              n_planned: int | None, params: Mapping[str, object], *,
              tables: tuple[CostTable | None, CostTable | None] | None = None) -> str:
    """"cost: …" for a prompt-unit plan, or "" where the table cannot price it.

    Args:
        chapter: the claim's chapter, e.g. "04_jacobian_alignment".
        claim_id: the claim's id.
        model: the model the claim is about.
        n_now: the units the estimate holds.
        n_planned: the units its plan needs.
        params: the chapter's parameters in effect.
        tables: the CPU and GPU tables (default: ``data/prompt_cost.json`` and
            ``data/prompt_cost_cuda.json``).
    """
    if not n_now or not n_planned:
        return ""
    cpu, gpu = tables if tables is not None else cost_tables()
    if cpu is None or chapter not in cpu.chapters:
        return ""
    if params.get("model") != cpu.models[0]:
        return (f"cost: not priced (the per-prompt cost table was measured on "
                f"{' + '.join(cpu.models)}, this build ran {params.get('model')})")
    name = n_parameter(chapter, claim_id, model, params)
    bounds = cpu.chapters[chapter].bound_by
    planned = planned_values(name, n_now, n_planned, params, bounds) if name else None
    seconds = chapter_seconds(cpu, chapter, planned, params) if planned else None
    if seconds is None:
        return "cost: not priced (no chapter parameter accounts for this n)"
    setting = ", ".join(f"{p} = {v}" for p, v in planned.items())
    text = f"cost: the chapter at {setting} ≈ {_minutes(seconds)} of CPU on this machine"
    on_gpu = chapter_seconds(gpu, chapter, planned, params) if gpu is not None else None
    if on_gpu is not None:
        text += f", ≈ {_minutes(on_gpu)} on an {gpu.device} (estimate)"
    else:  # a GPU number needs a GPU table; none is made up from the CPU's
        text += f"; on a GPU: not measured ({NO_GPU})"
    return f"{text} ({cpu.chapter_source(chapter)})"
