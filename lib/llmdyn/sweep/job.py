"""The standalone measurement job: one model in, one self-describing coupling result file out.

``llmdyn measure coupling --model NAME --out FILE`` measures paper A's mean depth coupling (m̃ and
the diagonal share, K = 30, the last token, every block) over the leaderboard prompt suites
(6 tasks × 200 prompts in the paper) and writes one JSON file holding the per-prompt values, the
aggregates and their provenance (model identity, parameters, package versions). It is the unit
the workflow distributes over a cluster; :mod:`llmdyn.sweep.join` reads many such files back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core.atomic import check_new_file
from llmdyn.core.declared import param, violation
from llmdyn.core.paths import results_root
from llmdyn.core.store import (
    ResultStore,
    atomic_write,
    canonical_params,
    params_hash,
    safe_name,
    versions,
)
from llmdyn.coupling.default_k import K_MIN, PAPER_K
from llmdyn.data.prompts import ALL_TASKS, sample_leaderboard
from llmdyn.sweep.consistency import check_consistent

FORMAT = "llmdyn.coupling.depth-measurement/2"  # bump when the file's schema changes
# Format 1 named m̃ "coupling_mis" (its map "normalized_map") and 1 − m̃² "coupling_share";
# its files are read as format 2.
FORMAT_1 = "llmdyn.coupling.depth-measurement/1"
RENAMED_IN_2 = {"coupling_mis": "miscoupling", "coupling_share": "diagonal_share",
                "normalized_map": "miscoupling_map"}


def _each_task_once(tasks: tuple[str, ...]) -> str | None:
    # a task named twice would have its prompts drawn twice, and the file refused on reading
    twice = sorted({t for t in tasks if tasks.count(t) > 1})
    if twice:
        return f"distinct task names ({', '.join(twice)} named more than once; name each task once)"
    return None if tasks else f"a non-empty list of names from {ALL_TASKS}"


@dataclass(frozen=True)
class MeasureParams:
    """Parameters of one coupling measurement; every result file records them.

    Each field declares its default, doc and bounds (:func:`llmdyn.core.declared.param`); the
    checks are made from those, and ``llmdyn measure``'s options are built from them.
    """

    # paper A's K, which relative_k also gives every model 240 or more wide
    k: int = param(PAPER_K, at_least=K_MIN,
                   doc="top singular vectors per Jacobian (paper A: 30; Fig 36 varies 10–50)")
    n_per_task: int = param(200, at_least=1, doc="prompts drawn from each task (paper A: 200)")
    tasks: tuple[str, ...] = param(ALL_TASKS, choices=ALL_TASKS, check=_each_task_once,
                                   doc="leaderboard tasks to draw from (paper A: the six of the "
                                       "Open LLM Leaderboard v1)")
    seed: int = param(0, at_least=0, doc="seed of the prompt draw (the same seed gives every "
                                         "model the same prompts)")
    max_chars: int | None = param(None, at_least=1,
                                  doc="keep each prompt's last max_chars characters, the same cut "
                                      "for every model (for tiny models' 64-token contexts; None: "
                                      "whole prompts, as the paper)")
    token: int = field(default=-1, init=False)  # the last token's J_tt (paper A §5.1)
    layers: str = field(default="all", init=False)  # every block

    def __post_init__(self) -> None:
        """Tasks become a tuple; then every field is checked against its declaration."""
        tasks = (self.tasks,) if isinstance(self.tasks, str) else tuple(self.tasks)
        object.__setattr__(self, "tasks", tasks)
        broken = violation(self)
        if broken is not None:
            raise LlmdynError(f"{broken.name} must be {broken.expected}, got {broken.value!r}")

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types, as recorded in the result file."""
        return canonical_params(asdict(self))


@dataclass(frozen=True)
class CouplingResult:
    """One model's measurement, as read back from its result file.

    Attributes:
        path: the file it came from.
        model: the model's identity (``name``, ``key``, ``source``, ``sha256`` or ``revision``).
        params: the parameters it was measured with.
        miscoupling: mean m̃(A) over prompts and layer pairs l ≠ l′ (paper A eq. 14).
        diagonal_share: mean diagonal share 1 − m̃² (chance 1/k).
        authors: mean of the authors'-code score ‖|A| − S_i‖_F / ‖s_i‖₂ over prompts and pairs
            l ≠ l′ (a miscoupling, not a coupling strength; the file keeps it under the key
            ``coupling_authors`` of format 2).
        prompt_ids: ``[prompt]`` ids of the prompts, in measured order.
        prompt_miscoupling: ``[prompt]`` each prompt's mean m̃ over pairs l ≠ l′.
        prompt_diagonal_share: ``[prompt]`` each prompt's mean diagonal share.
        versions: package versions of the run.
    """

    path: Path
    model: dict[str, Any]
    params: dict[str, Any]
    miscoupling: float
    diagonal_share: float
    authors: float
    prompt_ids: tuple[str, ...]
    prompt_miscoupling: np.ndarray
    prompt_diagonal_share: np.ndarray
    versions: dict[str, Any]

    @property
    def name(self) -> str:
        """The model spec it was loaded from (a hub id for leaderboard models)."""
        return str(self.model["name"])


def result_path(model: str, root: str | os.PathLike | None = None) -> Path:
    """Where the workflow keeps a model's result file: ``<root>/<safe model name>.json``.

    ``root`` None: ``<results root>/measure`` (``$LLMDYN_RESULTS/measure``, else
    ``results/measure``).
    """
    directory = Path(root) if root is not None else results_root() / "measure"
    return directory / f"{safe_name(model)}.json"


def measure_coupling(model: str, params: MeasureParams = MeasureParams(), *,
                     device: str = "cpu", cache: bool = True) -> dict[str, Any]:
    """Measure one model's mean depth coupling over the leaderboard prompts.

    The per-prompt coupling is :func:`llmdyn.coupling.depth_coupling` (last token, all blocks,
    cached per prompt in ``results/`` unless ``cache`` is False, so an interrupted job resumes);
    the aggregate is :func:`llmdyn.coupling.summarize_depth` of those.

    Args:
        model: a name, local path or hub id accepted by :func:`llmdyn.models.load_model`.
        params: what to measure.
        device: torch device (``"cuda"`` on a GPU node).
        cache: keep per-prompt results in the results store.

    Returns:
        The result file's content (plain JSON types).
    """
    # here, not at the top: the `llmdyn` command imports this module for its options, and
    # only a measurement needs torch and transformers (seconds to import)
    from llmdyn.coupling.depth import depth_coupling
    from llmdyn.coupling.scores import mean_diagonal_share, offdiagonal_mean
    from llmdyn.coupling.summary import summarize_depth
    from llmdyn.models.loading import load_model

    prompts = sample_leaderboard(params.n_per_task, tasks=params.tasks, seed=params.seed)
    loaded = load_model(model, device=device)
    store = ResultStore(loaded.model_id, provenance=loaded.identity) if cache else None
    texts = [p.text if params.max_chars is None else p.text[-params.max_chars:] for p in prompts]
    _check_lengths(loaded, prompts, texts, params.max_chars)
    couplings = depth_coupling(loaded, texts, k=params.k, store=store)
    summary = summarize_depth(couplings)
    per_task = {}
    for task in params.tasks:
        chosen = [c for c, p in zip(couplings, prompts, strict=True) if p.task == task]
        s = summarize_depth(chosen)
        per_task[task] = {"miscoupling": s.miscoupling, "diagonal_share": s.diagonal_share}
    mean_map = np.mean([c.miscoupling for c in couplings], 0)  # [layer, layer]
    return {
        "format": FORMAT,
        "measurement": "depth_coupling_leaderboard",
        "model": canonical_params(loaded.identity, arg="model identity"),
        "params": params.as_dict(),
        "params_hash": params_hash(params.as_dict()),
        "n_layers": loaded.n_layers,
        "d_model": loaded.d_model,
        "device": device,
        "aggregate": {"miscoupling": summary.miscoupling, "diagonal_share": summary.diagonal_share,
                      "coupling_authors": summary.authors, "per_task": per_task,
                      "miscoupling_map": mean_map.tolist()},
        "prompts": [{"id": p.id, "task": p.task,
                     "miscoupling": offdiagonal_mean(c.miscoupling),
                     "diagonal_share": mean_diagonal_share(c.miscoupling)}
                    for p, c in zip(prompts, couplings, strict=True)],
        "versions": versions(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _check_lengths(loaded: Any, prompts: Sequence[Any], texts: Sequence[str],
                   max_chars: int | None) -> None:
    """Refuse prompts beyond the model's context, naming ``--max-chars`` (this job's option).

    Chapters cut prompts with their own parameters; this job has only ``max_chars``, the same
    cut for every model, so the message gives the value at which every prompt fits.
    """
    def n_tokens(text: str) -> int:
        return len(loaded.tokenizer(text).input_ids)

    over = [(prompt.id, n_tokens(text), _fitting_chars(n_tokens, text, loaded.n_ctx))
            for prompt, text in zip(prompts, texts, strict=True)
            if n_tokens(text) > loaded.n_ctx]
    if over:
        first, n_tok, _ = over[0]
        fits = min(f for _, _, f in over)
        if fits < 1:  # not even one character fits beside the tokenizer's own tokens
            raise LlmdynError(f"{loaded.name}'s context of {loaded.n_ctx} tokens holds no "
                              "character of the prompts (its tokenizer's own tokens fill it); "
                              "measure a model with a longer context")
        raise LlmdynError(
            f"{len(over)} of {len(texts)} prompts are longer than {loaded.name}'s context of "
            f"{loaded.n_ctx} tokens (e.g. {first}: {n_tok} tokens with max_chars="
            f"{max_chars}); pass --max-chars {fits} (MeasureParams(max_chars={fits})) to keep "
            "each prompt's last characters, the same cut for every model")


def _fitting_chars(n_tokens: Any, text: str, n_ctx: int) -> int:
    """The most last characters of ``text`` that ``n_tokens`` counts within ``n_ctx`` tokens."""
    low, high = 0, len(text)
    while low < high:  # bisection: the tokens of text[-c:] grow with c
        mid = (low + high + 1) // 2
        low, high = (mid, high) if n_tokens(text[-mid:]) <= n_ctx else (low, mid - 1)
    return low


def check_out(out: str | os.PathLike, arg: str = "out") -> Path:
    """``out`` as a Path if a result file can be written there, else LlmdynError naming ``arg``.

    Checked before measuring, so a bad ``--out`` fails at once, not after the measurement: a
    directory, a device, a FIFO or a socket (which the write would replace), a parent that is a
    file, or a directory where no file can be created (``/proc``, read-only, no permission).
    """
    out = Path(out)
    if out.is_dir():
        raise LlmdynError(f"{arg} {out} is a directory; give a file name, e.g. "
                          f"{out / 'coupling.json'}")
    parent = next((p for p in out.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise LlmdynError(f"{arg} {out}: {parent} is a file, not a directory; choose another "
                          "path")
    if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        raise LlmdynError(f"{arg} {out}: cannot write in {parent} (permission denied); choose "
                          "another path")
    return check_new_file(out, arg)  # a device, FIFO or socket; /proc; a read-only disk


def write_result(result: dict[str, Any], out: str | os.PathLike) -> Path:
    """Write a result atomically as indented JSON (a half-written file never appears)."""
    out = check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1, allow_nan=False)
    atomic_write(out, lambda f: f.write(text.encode()))
    return out


def upgraded_from_format_1(raw: dict) -> dict:
    """A format-1 file's JSON with its score keys renamed (`RENAMED_IN_2`); values untouched."""
    def renamed(scores):
        return {RENAMED_IN_2.get(key, key): value for key, value in scores.items()} \
            if isinstance(scores, dict) else scores

    agg = raw.get("aggregate")
    if isinstance(agg, dict):
        agg = renamed(agg)
        if isinstance(agg.get("per_task"), dict):
            agg["per_task"] = {task: renamed(s) for task, s in agg["per_task"].items()}
    prompts = raw.get("prompts")
    if isinstance(prompts, list):
        prompts = [renamed(p) for p in prompts]
    return {**raw, "format": FORMAT, "aggregate": agg, "prompts": prompts}


def read_result(path: str | os.PathLike) -> CouplingResult:
    """Read one result file written by :func:`write_result`.

    Raises:
        LlmdynError: missing file, not JSON, another format, or a file that disagrees with
            itself (:func:`llmdyn.sweep.consistency.check_consistent`: an aggregate that is
            not the mean of its prompts, a prompt count other than its parameters', "NaN").
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise LlmdynError(f"no result file {path}; run `llmdyn measure coupling --model <model> "
                          f"--out {path}` first") from None
    except json.JSONDecodeError as err:
        raise LlmdynError(f"result file {path} is not JSON ({err}); rerun its measurement") \
            from None
    if isinstance(raw, dict) and raw.get("format") == FORMAT_1:
        raw = upgraded_from_format_1(raw)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        got = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
        raise LlmdynError(f"result file {path} has format {got!r}, expected {FORMAT!r}; rerun "
                          "its measurement with this version of llmdyn")
    try:
        agg = raw["aggregate"]
        check_consistent(path, raw, raw["params"], raw["prompts"])  # against its own prompts
        return CouplingResult(
            path=path, model=raw["model"], params=raw["params"],
            miscoupling=float(agg["miscoupling"]), diagonal_share=float(agg["diagonal_share"]),
            authors=float(agg["coupling_authors"]),
            prompt_ids=tuple(p["id"] for p in raw["prompts"]),
            prompt_miscoupling=np.array([p["miscoupling"] for p in raw["prompts"]],
                                        dtype=np.float64),
            prompt_diagonal_share=np.array([p["diagonal_share"] for p in raw["prompts"]],
                                           dtype=np.float64),
            versions=raw.get("versions", {}))
    except LlmdynError:  # a ValueError too: keep the consistency check's own message
        raise
    except KeyError as err:
        raise LlmdynError(f"result file {path} lacks {err.args[0]!r} (incomplete or edited by "
                          "hand); rerun its measurement: `llmdyn measure coupling --model "
                          f"<model> --out {path}`") from None
    except (TypeError, ValueError) as err:
        raise LlmdynError(f"result file {path} holds a value of the wrong type ({err}); rerun "
                          "its measurement") from None


def read_results(paths: Sequence[str | os.PathLike],
                 expected: MeasureParams) -> list[CouplingResult]:
    """Read several models' result files, checking they were measured the same way.

    Args:
        paths: result files, one per model.
        expected: the parameters every file must have been measured with.

    Returns:
        One :class:`CouplingResult` per file, in the order given.

    Raises:
        LlmdynError: a file measured with other parameters (mismatched provenance), the same
            model twice, or no files at all.
    """
    if isinstance(paths, str | os.PathLike) or not len(paths):
        raise LlmdynError(f"paths must be a non-empty list of result files, got {paths!r}")
    want = expected.as_dict()
    results, seen = [], {}
    for path in paths:
        r = read_result(path)
        if r.params != want:
            diff = {k: (r.params.get(k), want.get(k)) for k in sorted(set(r.params) | set(want))
                    if r.params.get(k) != want.get(k)}
            raise LlmdynError(f"result file {r.path} was measured with other parameters "
                              f"(got, expected): {diff}; rerun `llmdyn measure coupling` for "
                              f"{r.name!r} with the expected parameters, or change them")
        key = r.model.get("key", r.name)
        if key in seen:
            raise LlmdynError(f"model {key!r} appears twice: {seen[key]} and {r.path}")
        seen[key] = r.path
        results.append(r)
    return results

