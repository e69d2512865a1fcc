"""`make gpu-check`: the GPU path in one command, with one report.

On a CUDA machine it runs chapters 05 and 08 with ``-p device cuda`` (08 on a suite small enough
for about ten minutes) and times the Jacobian routes on the GPU in float32 and, where the route
supports it, bfloat16, each checked against the same route in float32 on the CPU. It writes
``gpu_check/report.md`` and ``gpu_check/report.json``. On a machine without CUDA it says so and
exits 0, so the target is safe everywhere.

    python tools/gpu_check.py                       # everything
    python tools/gpu_check.py --skip-chapters       # the Jacobian timings only
    python tools/gpu_check.py --suite tiny --out gpu_check
    python tools/gpu_check.py --compare-models      # chapter 05 without its compare models
    python tools/gpu_check.py --smoke               # and every chapter on tiny models
    python tools/gpu_check.py --smoke --jobs 4      # ... four chapters at a time
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import yaml

from llmdyn.core.escape import markdown_code
from llmdyn.core.tables import markdown_table

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "What is the capital of France? The capital is"
NO_GPU = "no CUDA device: `make gpu-check` ran nothing (it needs a machine with an NVIDIA GPU)"
CHAPTERS = ("05_depth_coupling", "08_training")


def _timed(fn, device: str) -> tuple[object, float]:
    """``fn()`` and its wall seconds, with the GPU's queue drained before and after."""
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative Frobenius distance ‖a − ref‖ / ‖ref‖ (on the CPU, in float64)."""
    a, ref = a.detach().cpu().double(), ref.detach().cpu().double()
    return float(torch.linalg.norm(a - ref) / torch.linalg.norm(ref))


def jacobian_rows(model_name: str) -> list[dict]:
    """Last-token J_nn (every block) and J_tt (three blocks) on CUDA against the CPU route."""
    from llmdyn.jacobians import block_jacobians, last_token_jacobians
    from llmdyn.models import load_model

    routes = {
        "last-token J_nn, every block": lambda m: last_token_jacobians(m, PROMPT),
        "J_tt, every token, 3 blocks": lambda m: block_jacobians(m, PROMPT, [0, 1, 2],
                                                                  progress=False),
    }
    on_cpu = load_model(model_name)
    reference = {}
    for name, route in routes.items():
        reference[name] = _timed(lambda r=route, m=on_cpu: r(m), "cpu")
    on_cpu = None  # free the CPU copy before the GPU ones load
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        model = load_model(model_name, device="cuda", dtype=dtype)
        for name, route in routes.items():
            row = {"model": model_name, "route": name, "dtype": str(dtype).removeprefix("torch."),
                   "cpu_s": reference[name][1]}
            print(f"gpu-check: {model_name} {name} {row['dtype']}", flush=True)
            try:
                route(model)  # warm-up: kernels, cuBLAS handles
                out, seconds = _timed(lambda r=route, m=model: r(m), "cuda")
                row.update(gpu_s=seconds, speedup=reference[name][1] / seconds,
                           rel_error_vs_cpu_fp32=_rel(out, reference[name][0]))
            except Exception as err:  # a route without bf16 support is a finding, not a crash
                row.update(error=f"{type(err).__name__}: {err}"[:300])
            rows.append(row)
        del model
        torch.cuda.empty_cache()
    return rows


def smoke_parameters(chapter: str) -> dict:
    """The smoke book's parameters of ``chapter`` (tests/smoke, tiny models), on cuda."""
    smoke = yaml.safe_load((ROOT / "tests" / "smoke" / f"{chapter}.yaml").read_text())
    return {**smoke, "device": "cuda"}


def chapter_parameters(chapter: str, out: Path, suite: str,
                       compare_models: list[str] | None) -> dict:
    """The papermill parameters of one checked chapter: ``device="cuda"`` and its inputs.

    Chapter 08 on the tiny suite takes the smoke book's parameters (tests/smoke), since the
    chapter's default prompts do not fit the tiny suite's 32-token context.
    """
    params: dict = {}
    if chapter == "05_depth_coupling" and compare_models is not None:
        params["compare_models"] = compare_models
    if chapter == "08_training":
        if suite == "tiny":
            params.update(smoke_parameters(chapter))
        params.update(suite=suite, suite_root=str(out / "suite"))
    return {**params, "device": "cuda"}


def chapter_row(out: Path, chapter: str, params: dict) -> dict:
    """One chapter run with papermill: seconds and whether it finished."""
    from llmdyn.runner.build import run_chapter

    print(f"gpu-check: {chapter} {json.dumps(params)}", flush=True)
    start = time.perf_counter()
    try:
        run_chapter(chapter, out / "executed", params)
        return {"chapter": chapter, "params": params, "ok": True,
                "seconds": time.perf_counter() - start}
    except Exception as err:
        return {"chapter": chapter, "params": params, "ok": False,
                "seconds": time.perf_counter() - start,
                "error": "".join(traceback.format_exception_only(err))[-1500:]}


def chapter_rows(out: Path, runs: list[tuple[str, dict]], jobs: int = 1) -> list[dict]:
    """Each (chapter, parameters) run, ``jobs`` at a time (each in its own kernel), in order."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda run: chapter_row(out, *run), runs))


def planned_runs(args: argparse.Namespace) -> list[tuple[str, dict]]:
    """Chapters 05 and 08 as asked, then (``--smoke``) every chapter at the smoke book's size."""
    runs = [] if args.skip_chapters else [
        (c, chapter_parameters(c, args.out, args.suite, args.compare_models))
        for c in args.chapters]
    if args.smoke:  # every chapter's device path, on tiny models: minutes, not hours
        runs += [(path.stem, smoke_parameters(path.stem))
                 for path in sorted((ROOT / "tests" / "smoke").glob("*.yaml"))]
    return runs


def _chapter_table(chapters: list[dict]) -> str:
    """Each chapter run: its parameters, whether it finished, its seconds."""
    if not chapters:
        return "No chapter ran."
    return markdown_table([{"chapter": r["chapter"],
                            "parameters": markdown_code(json.dumps(r["params"])),
                            "finished": "yes" if r["ok"] else "NO",
                            "seconds": f"{r['seconds']:.0f}"} for r in chapters],
                          align={"seconds": "right"})


def _jacobian_table(jacobians: list[dict]) -> str:
    """Each route and dtype on the GPU against the CPU's fp32, or why the GPU could not run it."""
    if not jacobians:
        return "No Jacobian route was timed."
    rows = []
    for r in jacobians:
        row = {"model": r["model"], "route": r["route"], "dtype": r["dtype"],
               "CPU s (fp32)": f"{r['cpu_s']:.2f}"}
        if "error" in r:
            row |= {"GPU s": f"not supported: {r['error'][:80]}", "speed-up": "",
                    "rel. error vs CPU fp32": ""}
        else:
            row |= {"GPU s": f"{r['gpu_s']:.3f}", "speed-up": f"{r['speedup']:.1f}×",
                    "rel. error vs CPU fp32": f"{r['rel_error_vs_cpu_fp32']:.1e}"}
        rows.append(row)
    numbers = ("CPU s (fp32)", "GPU s", "speed-up", "rel. error vs CPU fp32")
    return markdown_table(rows, align=dict.fromkeys(numbers, "right"))


def render(report: dict) -> str:
    """The report as Markdown."""
    versions = ", ".join(f"{k} {report[k]}" for k in ("torch", "transformers", "nnsight")
                         if k in report)
    lines = [f"# GPU check on {report['gpu']}", "",
             f"{versions}, CUDA {report['cuda']}, {report['host']}; the CPU reference ran on "
             f"{report.get('cpu_threads', '?')} threads", "",
             _chapter_table(report["chapters"]), "", _jacobian_table(report["jacobians"])]
    errors = [r for r in report["chapters"] if not r["ok"]]
    lines += ["", *(f"**{r['chapter']} failed:**\n\n```\n{r['error']}\n```\n" for r in errors)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the check, or say that there is no GPU and exit 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "gpu_check")
    parser.add_argument("--suite", default="tiny", help="chapter 08's suite (default: tiny)")
    parser.add_argument("--models", nargs="+", default=["smollm2-135m"])
    parser.add_argument("--skip-chapters", action="store_true")
    parser.add_argument("--skip-jacobians", action="store_true")
    parser.add_argument("--chapters", nargs="+", choices=CHAPTERS, default=list(CHAPTERS))
    parser.add_argument("--compare-models", nargs="*", default=None,
                        help="chapter 05's compare_models (default: the chapter's own; give "
                             "none to run without them, e.g. where Gemma 3 is not installed)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="chapters run at once, each in its own kernel (default: 1; the "
                             "seconds of chapters run together include their contention)")
    parser.add_argument("--smoke", action="store_true",
                        help="also every chapter at the smoke book's parameters (tiny models)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(NO_GPU)
        return 0
    import nnsight
    import transformers

    args.out.mkdir(parents=True, exist_ok=True)
    report = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "transformers": transformers.__version__, "nnsight": nnsight.__version__,
              "cuda": torch.version.cuda, "host": platform.node(),
              "cpu_threads": torch.get_num_threads(),
              "bf16_supported": torch.cuda.is_bf16_supported()}
    report["jacobians"] = [] if args.skip_jacobians else [
        row for name in args.models for row in jacobian_rows(name)]
    report["chapters"] = chapter_rows(args.out, planned_runs(args), args.jobs)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    (args.out / "report.md").write_text(render(report))
    print(render(report))
    return 0 if all(r["ok"] for r in report["chapters"]) else 1


if __name__ == "__main__":
    sys.exit(main())
