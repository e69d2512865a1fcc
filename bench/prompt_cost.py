r"""Each chapter's fixed CPU cost and its CPU cost per unit of each n-parameter.

Every model-taking chapter (01–07, 11; 08's unit is a held-out passage at every checkpoint of its
suite) runs on the default models several times, each in a fresh process with an empty results
store (only the converted models come from ~/.cache/llmdyn) and a workflow chapter job's threads:
a **base** run with every n-parameter small; one run per n-parameter at its default (a larger
value where the default is the smallest), the others small, raising a bounding parameter just
enough (``n_compare_prompts`` and ``n_seed_prompts`` draw from ``n_prompts``' sample, chapter
07's from ``n_per_task`` × 6 tasks); and a **default** run, left out of the fit, that checks it.
The fit is ``cpu = fixed + Σ_p slope_p · n_p`` (one run per unknown). CPU is user + sys of the
chapter's kernel and its children (``RUSAGE_CHILDREN``, the kernel launched plainly as a chapter
job launches it); papermill's own is kept beside it (``runner_cpu_s``). ``--device cuda`` still
fits CPU-seconds (wall seconds are kept): a GPU table for the planner needs a fit of wall time.

    PYTHONPATH=lib .venv/bin/python bench/prompt_cost.py --jobs 2 --out data/prompt_cost.json
    PYTHONPATH=lib .venv/bin/python bench/prompt_cost.py --table data/prompt_cost.json

An existing ``--out`` keeps the chapters this run does not measure; runs go to ``<out>.runs.jsonl``
(a rerun of a commit reuses them); ``--only-params``/``--cap``/``--no-check``: a partial table;
``--suite-root``: chapter 08's suite; ``--table A [B]``: the JSON as Markdown.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmdyn.core.escape import Md, markdown_code, markdown_text
from llmdyn.core.tables import markdown_table

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Knob:
    """One n-parameter of a chapter: its small value, the unit it counts, what bounds it.

    ``large`` is the second value measured (None: the parameter's default). ``bound_by``
    names the parameter whose sample this one draws from, ``per_bound`` how many units each
    unit of that one supplies (chapter 07: 6 prompts per ``n_per_task``).
    """

    name: str
    small: int
    unit: str = "prompt"
    large: int | None = None
    bound_by: str | None = None
    per_bound: int = 1


# chapter -> (its parameter class in llmdyn.book.params, its n-parameters)
CHAPTERS: dict[str, tuple[str, tuple[Knob, ...]]] = {
    "01_trajectories": ("TrajectoriesParams", (Knob("n_prompts", 2),)),
    "02_geometry_along_depth": ("GeometryAlongDepthParams", (Knob("n_prompts", 2),)),
    "03_uncertainty": ("UncertaintyParams", (Knob("n_prompts", 2),)),
    "04_jacobian_alignment": ("JacobianAlignmentParams", (
        Knob("n_prompts", 2), Knob("n_compare_prompts", 1, bound_by="n_prompts"),
        Knob("n_lens_prompts", 2), Knob("n_seed_prompts", 1, large=4, bound_by="n_prompts"))),
    "05_depth_coupling": ("DepthCouplingParams", (
        Knob("n_prompts", 2), Knob("n_compare_prompts", 1, bound_by="n_prompts"),
        Knob("n_seed_prompts", 1, bound_by="n_prompts"))),
    "06_token_coupling": ("TokenCouplingParams", (
        Knob("n_prompts", 2), Knob("n_pair_prompts", 1, large=3),
        Knob("n_seed_prompts", 1, large=3))),
    "07_regularity": ("RegularityParams", (
        Knob("n_per_task", 1, unit="prompt per task (6 tasks)"),
        Knob("n_seed_prompts", 1, bound_by="n_per_task", per_bound=6))),
    "08_training": ("TrainingParams", (
        Knob("n_prompts", 2, unit="passage (at every checkpoint of the suite)"),)),
    "11_spectra_and_prompts": ("SpectraPromptsParams", (
        Knob("n_prompts", 2), Knob("n_compare_prompts", 1, bound_by="n_prompts"),
        Knob("n_draws", 1, unit="noise draw per level and prompt"),
        Knob("n_lin_prompts", 1), Knob("n_gsm8k", 3, unit="GSM8K prompt (and its CoT twin)"),
        Knob("n_per_task", 1, large=3, unit="prompt per other leaderboard task (5 tasks)"),
        Knob("n_seed_prompts", 1, large=4, bound_by="n_prompts"))),
}


def defaults(chapter: str) -> dict[str, int]:
    """The chapter's n-parameters at their defaults, read from its parameter class."""
    from llmdyn.book import params

    cls = getattr(params, CHAPTERS[chapter][0])
    fields = {f.name: f.default for f in dataclasses.fields(cls)}
    return {k.name: fields[k.name] for k in CHAPTERS[chapter][1]}


def plan(knobs: tuple[Knob, ...], default: dict[str, int], *, only: list[str] | None = None,
         cap: int | None = None, check: bool = True) -> list[tuple[str, dict[str, int]]]:
    """The runs of one chapter: (label, n-parameters), base first and the default run last.

    Every run but the one labelled "default" enters the fit; there is none where a fitted run
    has every default already (a chapter with one parameter), which then checks nothing. A
    bounded parameter's run raises its bounding parameter to the least value that holds it.
    ``only``: the parameters that get a run (None: all; the others stay small); ``cap``: the
    second n of each is at most this; ``check``: add the default run.
    """
    base = {k.name: k.small for k in knobs}
    runs = [("base", base)]
    for k in knobs:
        if only is not None and k.name not in only:
            continue
        large = k.large or default[k.name]
        values = {**base, k.name: min(large, max(cap, k.small + 1)) if cap else large}
        if k.bound_by:
            need = math.ceil(values[k.name] / k.per_bound)
            values[k.bound_by] = max(values[k.bound_by], need)
        runs.append((k.name, values))
    if check and all(values != default for _, values in runs):  # else that run is the default
        runs.append(("default", dict(default)))
    return runs


def fit(names: list[str], runs: list[tuple[dict[str, int], float]]) -> tuple[float, dict]:
    """Least squares of ``cpu = fixed + Σ slope_p · n_p`` over the runs: (fixed, {p: slope}).

    ``runs`` holds (n-parameters, CPU-s) pairs. Needs at least ``len(names) + 1`` runs whose
    n-vectors span the model; raises ValueError otherwise.
    """
    design = np.array([[1.0, *(float(v[n]) for n in names)] for v, _ in runs])
    cpu = np.array([c for _, c in runs])
    if np.linalg.matrix_rank(design) < len(names) + 1:
        raise ValueError(f"runs {[v for v, _ in runs]} do not separate {names} from the fixed cost")
    coef, *_ = np.linalg.lstsq(design, cpu, rcond=None)
    return float(coef[0]), {n: float(s) for n, s in zip(names, coef[1:], strict=True)}


def predict(fixed: float, slopes: dict[str, float], values: dict[str, int]) -> float:
    """The additive model's CPU-s at ``values``."""
    return fixed + sum(s * values[n] for n, s in slopes.items())


def chapter_table(knobs: tuple[Knob, ...], default: dict[str, int],
                  measured: list[tuple[str, dict[str, int], dict]]) -> dict:
    """One chapter's entry of the JSON from its measured runs (as :func:`plan` ordered them).

    ``measured`` holds (label, n-parameters, record) with the record's ``cpu_s``; the run
    labelled "default" is the check, every other one enters the fit. A parameter without a run
    of its own (``plan``'s ``only``) is listed under "not_measured" at its small n, which
    ``fixed_cpu_s`` then includes; the prediction of the default run needs every parameter.
    """
    labels = {label for label, _, _ in measured}
    names = [k.name for k in knobs if k.name in labels]
    knobs = tuple(k for k in knobs if k.name in labels)
    fitted = [(v, r["cpu_s"]) for label, v, r in measured if label != "default"]
    fixed, slopes = fit(names, fitted)
    by_label = {label: (v, r) for label, v, r in measured}
    base_values, base = by_label["base"]
    parameters = {}
    for k in knobs:
        values, run = by_label[k.name]
        parameters[k.name] = {"default": default[k.name],
                              "n": [base_values[k.name], values[k.name]],
                              "cpu_s": [round(base["cpu_s"], 1), round(run["cpu_s"], 1)],
                              "cpu_s_per_unit": round(slopes[k.name], 2), "unit": k.unit}
        if k.bound_by:  # the planner raises the bounding parameter with it (claims.costs)
            parameters[k.name].update(bound_by=k.bound_by, per_bound=k.per_bound)
            if values[k.bound_by] != base_values[k.bound_by]:
                parameters[k.name]["with"] = {k.bound_by: values[k.bound_by]}
    missing = {n: v for n, v in base_values.items() if n not in names}
    entry = {"fixed_cpu_s": round(fixed, 1),
             "predicted_default_cpu_s": None if missing else
             round(predict(fixed, slopes, default), 1),
             "parameters": parameters,
             "runs": [{"label": label, "n": v, **r} for label, v, r in measured]}
    if missing:
        entry["not_measured"] = missing
    at_default = [r for label, v, r in measured if v == default]
    entry["default_cpu_s"] = round(at_default[-1]["cpu_s"], 1) if at_default else None
    entry["default_run_fitted"] = "default" not in by_label  # then the check is no check
    return entry


def run_one(chapter: str, parameters: dict, work: Path) -> None:
    """In this process: execute the chapter, then print its kernel's CPU as one JSON line."""
    from llmdyn.runner.build import run_chapter

    start = time.perf_counter()
    run_chapter(chapter, work / "executed", parameters, cwd=work, fork=False)
    kids, me = resource.getrusage(resource.RUSAGE_CHILDREN), \
        resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu_s": kids.ru_utime + kids.ru_stime,
                      "runner_cpu_s": me.ru_utime + me.ru_stime,
                      "wall_s": time.perf_counter() - start,
                      "peak_rss_gib": kids.ru_maxrss / 2**20}))


def thread_settings(threads: int) -> dict[str, str]:
    """The BLAS/OpenMP thread variables of a run: as the workflow's chapter jobs set them.

    A chapter job is one thread (``threads: 1`` in the Snakefile, which exports
    ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS``); a run with more threads than the build gives
    its chapters measures another program (an idle BLAS thread spins). 0: leave them as they are.
    """
    return {} if threads == 0 else {"OMP_NUM_THREADS": str(threads),
                                    "MKL_NUM_THREADS": str(threads)}


def measure(chapter: str, values: dict[str, int], *, device: str, suite_root: Path | None,
            keep: Path | None, threads: int = 1) -> dict:
    """One run in a fresh process with an empty results store; its record (CPU-s, load)."""
    params = {**values, "device": device}
    if chapter == "08_training":
        params["suite_root"] = str(suite_root)
    with tempfile.TemporaryDirectory(prefix=f"prompt_cost_{chapter[:2]}_") as tmp:
        work = Path(tmp)
        env = {**os.environ, "LLMDYN_RESULTS": str(work / "results"),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "lib"),
                                                           os.environ.get("PYTHONPATH")])),
               **thread_settings(threads)}
        load = os.getloadavg()
        done = subprocess.run([sys.executable, __file__, "--one", chapter, "--one-params",
                               json.dumps(params), "--work", str(work)], env=env,
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{chapter} {values} failed:\n{done.stderr[-3000:]}")
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
            label = "_".join(f"{k}{v}" for k, v in values.items())
            (work / "executed" / f"{chapter}.ipynb").replace(keep / f"{chapter}_{label}.ipynb")
        record = json.loads(done.stdout.strip().splitlines()[-1])
    return {**{k: round(v, 2) for k, v in record.items()},
            "load_before": [round(x, 2) for x in load],
            "load_after": [round(x, 2) for x in os.getloadavg()]}


def machine(note: str) -> dict:
    """Cores, CPU model, the load note."""
    cpu = platform.processor()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in
                   Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "load_note": note}


def commit() -> str:
    """The repository's HEAD (with "+dirty" when tracked files changed)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                              text=True).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if git("status", "--porcelain",
                                                                    "-uno") else "")


def markdown(report: dict) -> str:
    """The performance page's table: one row per chapter and n-parameter."""
    rows = []
    for chapter, entry in report["chapters"].items():
        for i, (name, p) in enumerate(entry["parameters"].items()):
            first, default = i == 0, markdown_text(p["default"])
            rows.append({
                "chapter": chapter[:2] if first else "",
                "fixed CPU-s": f"{entry['fixed_cpu_s']:,.0f}" if first else "",
                "parameter (default)": Md(f"{markdown_code(name)} ({default})"),
                "CPU-s per unit": f"{p['cpu_s_per_unit']:.2f}", "unit": p["unit"],
                "per-unit × default": f"{p['cpu_s_per_unit'] * p['default']:,.0f}",
                "default run CPU-s (predicted)": _checked(entry) if first else ""})
    numbers = [k for k in rows[0] if k not in ("chapter", "parameter (default)", "unit")]
    return markdown_table(rows, align=dict.fromkeys(numbers, "right"))


def _checked(entry: dict) -> str:
    """"measured (predicted)" of the default run, "–" where there was none."""
    shown = [f"{v:,.0f}" if v is not None else "–"
             for v in (entry["default_cpu_s"], entry["predicted_default_cpu_s"])]
    return f"{shown[0]} ({shown[1]})"


def compare_markdown(before: dict, after: dict) -> str:
    """Before against after, for the chapters both measured: fixed and per-unit CPU-s."""
    rows = []
    for chapter, new in after["chapters"].items():
        old = before["chapters"].get(chapter)
        if old is None:
            continue
        for i, (name, p) in enumerate(new["parameters"].items()):
            q = old["parameters"].get(name)
            if q is None:
                continue
            runs = " → ".join(f"{e['default_cpu_s']:,.0f}" if e["default_cpu_s"] is not None
                              else "–" for e in (old, new))
            rows.append({
                "chapter": chapter[:2] if i == 0 else "", "parameter": markdown_code(name),
                "fixed CPU-s before → after":
                    f"{old['fixed_cpu_s']:,.0f} → {new['fixed_cpu_s']:,.0f}" if i == 0 else "",
                "CPU-s per unit before → after":
                    f"{q['cpu_s_per_unit']:.2f} → {p['cpu_s_per_unit']:.2f}",
                "default run CPU-s before → after": runs if i == 0 else ""})
    numbers = ("fixed CPU-s before → after", "CPU-s per unit before → after",
               "default run CPU-s before → after")
    return markdown_table(rows, align=dict.fromkeys(numbers, "right"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="+", default=list(CHAPTERS), choices=list(CHAPTERS))
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "prompt_cost.json",
                        help="the table (default: data/prompt_cost.json, which the scorecard "
                             "reads; on a GPU: data/prompt_cost_cuda.json)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (default 1)")
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP/MKL threads of each run (default 1, as the workflow's chapter "
                             "jobs; 0: the environment's)")
    parser.add_argument("--suite-root", type=Path, default=REPO / "results" / "suite",
                        help="chapter 08's trained suite (read only)")
    parser.add_argument("--keep", type=Path, help="keep each run's executed notebook here")
    parser.add_argument("--load-note", default="", help="what else ran on the machine")
    parser.add_argument("--commit", help="the code measured (default: this checkout's HEAD)")
    parser.add_argument("--only-params", nargs="+", metavar="NAME",
                        help="only these n-parameters get a run of their own (others stay small)")
    parser.add_argument("--cap", type=int, help="the second n of each parameter is at most this")
    parser.add_argument("--no-check", action="store_true", help="no run at every default")
    parser.add_argument("--table", type=Path, nargs="+", metavar="JSON",
                        help="print this JSON as Markdown (two: before against after) and stop")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--one-params", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    return parser


def measure_all(args: argparse.Namespace) -> dict:
    """Every planned run of the chapters asked for; the report, written after each chapter."""
    started = {"uptime_start": os.getloadavg(), "start": datetime.datetime.now().isoformat()}
    work = [(c, label, values) for c in args.chapters
            for label, values in plan(CHAPTERS[c][1], defaults(c), only=args.only_params,
                                      cap=args.cap, check=not args.no_check)]
    report = {"commit": args.commit or commit(), "machine": machine(args.load_note),
              "device": args.device, "threads": args.threads, **started, "chapters": {}}
    if args.out.exists():  # a resumed or partial measurement: keep the chapters not redone
        old = json.loads(args.out.read_text())
        report["chapters"] = {c: {"commit": old["commit"], "measured": old["start"][:10], **e}
                              for c, e in old["chapters"].items() if c not in args.chapters}
    measured: dict[str, list] = {c: [] for c in args.chapters}
    runs = {c: sum(1 for w in work if w[0] == c) for c in args.chapters}
    # every run measured, one JSON line each: a rerun of the same code reuses them (resume)
    done_runs = args.out.with_suffix(".runs.jsonl")
    known = [json.loads(line) for line in done_runs.read_text().splitlines()] \
        if done_runs.exists() else []

    def go(item):
        chapter, label, values = item
        key = {"chapter": chapter, "n": values, "device": args.device, "commit": report["commit"],
               "threads": args.threads}
        record = next((r["record"] for r in known if all(r[k] == v for k, v in key.items())),
                      None)
        if record is None:
            record = measure(chapter, values, device=args.device, suite_root=args.suite_root,
                             keep=args.keep, threads=args.threads)
            with done_runs.open("a") as f:
                f.write(json.dumps({**key, "record": record}) + "\n")
        print(f"{chapter} {label} {values}: {record}", flush=True)
        return chapter, label, values, record

    with ThreadPoolExecutor(args.jobs) as pool:
        for chapter, label, values, record in pool.map(go, work):
            measured[chapter].append((label, values, record))
            if len(measured[chapter]) == runs[chapter]:
                report["chapters"][chapter] = {"commit": report["commit"], **chapter_table(
                    CHAPTERS[chapter][1], defaults(chapter), measured[chapter])}
                report["uptime_end"] = os.getloadavg()
                args.out.write_text(json.dumps(report, indent=1) + "\n")
    return report


def main(argv: list[str] | None = None) -> None:
    """Measure the chapters asked for (or, with ``--one``, run one chapter in this process)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.one:
        return run_one(args.one, json.loads(args.one_params), args.work)
    if args.table:
        tables = [json.loads(path.read_text()) for path in args.table]
        return print(markdown(tables[0]) if len(tables) == 1 else compare_markdown(*tables[:2]))
    if "08_training" in args.chapters and not (args.suite_root / "_data").is_dir():
        parser.error(f"chapter 08 needs its trained suite; {args.suite_root} has none: give "
                     "--suite-root (where `make book` trained it), or leave 08 out")
    print(markdown(measure_all(args)))


if __name__ == "__main__":
    main()
