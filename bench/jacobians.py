r"""Benchmark four routes to the diagonal block Jacobians J^b_tt, side by side, one model at a time.

Methods (each runs in a fresh subprocess, so ``ru_maxrss`` is that method's peak memory):

- ``naive``: ``torch.func.jacrev`` of the block residual over the whole ``[tok, d_model]`` input,
  then the diagonal blocks of the ``[tok, d_model, tok, d_model]`` result.
- ``hf_hidden_states``: the authors' route. Block b's input is replaced by a leaf through a
  forward pre-hook, the HF model runs with ``output_hidden_states=True`` and
  ``hidden_states[b+1] - leaf`` (the block output for the last block, since HF's last hidden
  state has the final norm applied) is differentiated with
  ``torch.autograd.functional.jacobian(vectorize=True)``.
- ``own_position``: the library's exact method, ``llmdyn.jacobians.block_jacobians`` (default
  for ``pairs="diagonal"``).
- ``topk``: the library's matrix-free ``llmdyn.jacobians.truncated_block_svd`` for K = 30,
  run to a subspace tolerance; ``topk_fixed`` is the same with its fixed default budget
  (``power_iters=2``, no tolerance).

``naive`` and ``hf_hidden_states`` are measured on a few blocks (``--layers``) and extrapolated
to all blocks; the library methods are measured on all blocks. Usage (from the repository root)::

    PYTHONPATH=lib .venv/bin/python bench/jacobians.py --models smollm2-135m gemma3-270m \
        --out bench/results.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

# common, last_token and report sit beside this file: on sys.path when it runs as a script
import common  # noqa: E402
import last_token  # noqa: E402
import torch  # noqa: E402
from report import LABELS, markdown_report, print_table  # noqa: E402

PROMPT = "What is the capital of France? The capital is"
METHODS = ("naive", "hf_hidden_states", "own_position", "topk", "topk_fixed")
WORKLOADS = ("last_token", "batched")  # bench/last_token.py


def naive_block(model, calls, b: int, chunk_size: int | None = None) -> torch.Tensor:
    """(a) jacrev of f_b over the whole sequence: diagonal blocks ``[tok, d_model, d_model]``."""
    from llmdyn.jacobians.blocks import block_residual

    x = calls[b].hidden.detach()
    full = torch.func.jacrev(block_residual(model, b, calls[b]),
                             chunk_size=chunk_size)(x)  # (tok, d, tok, d)
    return torch.stack([full[t, :, t, :] for t in range(x.shape[0])])  # (tok, d_out, d_in)


def hf_block(model, ids: torch.Tensor, x: torch.Tensor, b: int,
             chunk_size: int | None = None) -> torch.Tensor:
    """(b) d hidden_states[b+1] / d hidden_states[b] through the HF model, vmapped VJPs."""
    n_tok, d = x.shape
    basis = torch.eye(n_tok * d, dtype=x.dtype).view(n_tok * d, n_tok, d)  # e_(t, k)
    rows = common.pull_back_through_model(model, ids, x, b, basis, chunk_size)  # (tok·d, tok, d)
    full = rows.view(n_tok, d, n_tok, d)  # (tok_out, d_out, tok_in, d_in)
    return torch.stack([full[t, :, t, :] for t in range(n_tok)])  # (tok, d_out, d_in)


class Timed(NamedTuple):
    """One method's timed run: the blocks it measured, their times and the tensors to save."""

    blocks: list[int]
    per_block: list[float]  # seconds per measured block ([] where only the total is known)
    saved: dict[str, torch.Tensor]
    extra: dict  # method-specific fields of the result (chunk tuning, top-K options)
    wall: float  # seconds, after any chunk tuning
    cpu: float  # process CPU seconds, likewise


def worker(spec: dict) -> dict:
    """Run one method on one model; save its tensors; return timings and memory."""
    from llmdyn.models.loading import load_model
    from llmdyn.trace import encode

    torch.manual_seed(0)
    if spec.get("threads"):
        torch.set_num_threads(spec["threads"])
    model = load_model(spec["model"])
    # The floor takes the best matmul throughput seen, here or in the parent, so that a busy
    # moment during one measurement does not flatter the routes.
    gflops = max(spec["gflops"], common.gemm_gflops(1.0))
    if spec["method"] == "last_token":  # one process, both routes side by side
        return {**last_token.last_token_workload(model, spec, gflops), "gemm_gflops": gflops}
    if spec["method"] == "batched":
        return last_token.batched_workload(model, spec)
    ids = encode(model, spec["prompt"])
    with torch.no_grad():
        model.hf(ids, use_cache=False)  # warm-up: first-call allocations are not timed
    rss_load = common.peak_rss()
    timed = _time_method(model, ids, spec)
    peak = common.peak_rss()
    torch.save(timed.saved, spec["save"])
    result = _result_row(spec, model, ids, timed, (rss_load, peak), gflops)
    if spec["profile"] and spec["method"] in ("own_position", "topk"):
        result.update(_profile_fields(model, spec))
    return result


def _tuned_block_route(model, ids: torch.Tensor, spec: dict):
    """(a), (b) or (c) as ``one_block(b, chunk)``, with the chunk size that ran fastest.

    Each route runs at its best chunk size, tuned on the middle block before the clock starts.
    Returns ``(one_block, chunk, {"chunk_size": ..., "chunk_tuning_s": ...})``.
    """
    from llmdyn.jacobians.blocks import capture_block_calls
    from llmdyn.jacobians.full import block_jacobians

    method = spec["method"]
    calls = capture_block_calls(model, ids)
    mid, n_tok, d = model.n_layers // 2, ids.shape[1], model.d_model

    def one_block(b, chunk):
        if method == "naive":
            return naive_block(model, calls, b, chunk)
        if method == "hf_hidden_states":
            return hf_block(model, ids, calls[b].hidden.detach(), b, chunk)
        return block_jacobians(model, spec["prompt"], [b], chunk_size=chunk, progress=False)

    n_vectors = d if method == "own_position" else n_tok * d
    candidates = common.chunk_candidates(d, n_vectors)
    chunk, tuning = common.tune_chunk(lambda c: one_block(mid, c), candidates)
    return one_block, chunk, {"chunk_size": chunk, "chunk_tuning_s": tuning}


def _time_method(model, ids: torch.Tensor, spec: dict) -> Timed:
    """Run ``spec["method"]`` on its blocks: (a), (b) on ``spec["layers"]``, the rest on all."""
    from llmdyn.jacobians.full import block_jacobians

    method, n_layers = spec["method"], model.n_layers
    per_block: list[float] = []
    extra: dict = {}
    wall, cpu = time.perf_counter(), time.process_time()
    if method in ("naive", "hf_hidden_states", "own_position"):
        one_block, chunk, extra = _tuned_block_route(model, ids, spec)
        wall, cpu = time.perf_counter(), time.process_time()
    if method in ("naive", "hf_hidden_states"):
        blocks, out = spec["layers"], []
        for b in blocks:
            start = time.perf_counter()
            out.append(one_block(b, chunk))
            per_block.append(time.perf_counter() - start)
        saved = {"jac": torch.stack(out)}  # [layer, tok, d_model, d_model]
    elif method == "own_position":
        blocks = list(range(n_layers))
        saved = {"jac": block_jacobians(model, spec["prompt"], chunk_size=chunk,
                                        progress=False)}
    else:
        blocks = list(range(n_layers))
        saved, extra = _top_k(model, spec)
    return Timed(blocks, per_block, saved, extra, time.perf_counter() - wall,
                 time.process_time() - cpu)


def _top_k(model, spec: dict) -> tuple[dict[str, torch.Tensor], dict]:
    """(d) or (d') on every block: the tensors to save and the options and products used."""
    from llmdyn.jacobians.truncated import truncated_block_svd

    k = spec["k"]
    options = spec["topk"] if spec["method"] == "topk" else {}
    res = truncated_block_svd(model, spec["prompt"], k=k, **options)
    width = options.get("block_size") or k + options.get("oversample", 10)
    extra = {"options": options, "extensions": list(res.iterations),
             "products": sum(2 * min(width * (e + 1), model.d_model) for e in res.iterations)}
    return {"U": res.U, "S": res.S, "V": res.V}, extra


def _result_row(spec: dict, model, ids: torch.Tensor, timed: Timed, rss: tuple[float, float],
                gflops: float) -> dict:
    """The method's result: timings (extrapolated to all blocks where fewer ran), memory."""
    method, n_layers, setup = spec["method"], model.n_layers, 0.0
    blocks, wall = timed.blocks, timed.wall
    measured_all = len(blocks) == n_layers
    mean_block = (wall - setup) / len(blocks)
    result = {
        "method": method, "model": spec["model"], "n_layers": n_layers, "tok": ids.shape[1],
        "d_model": model.d_model, "blocks_measured": blocks, "wall_s": wall, "cpu_s": timed.cpu,
        "setup_s": setup, "per_block_s": timed.per_block or [mean_block] * len(blocks),
        "all_blocks_s": wall if measured_all else setup + mean_block * n_layers,
        "extrapolated": not measured_all,
        "rss_after_load_gib": rss[0], "peak_rss_gib": rss[1],
        "macs_per_vector": common.macs_per_vector(model, ids.shape[1]), "gemm_gflops": gflops,
        **timed.extra,
    }
    if method == "own_position":
        result["products"] = model.d_model * n_layers
    elif method in ("naive", "hf_hidden_states"):  # T·d products per block, all blocks
        result["products"] = ids.shape[1] * model.d_model * n_layers
    return result


def _profile_fields(model, spec: dict) -> dict:
    """``torch.profiler``'s top operators of the middle block, for (c) or (d)."""
    from llmdyn.jacobians.full import block_jacobians
    from llmdyn.jacobians.truncated import truncated_block_svd

    mid = model.n_layers // 2
    if spec["method"] == "own_position":
        profile = common.profile_ops(lambda: block_jacobians(model, spec["prompt"], [mid]))
    else:
        profile = common.profile_ops(
            lambda: truncated_block_svd(model, spec["prompt"], [mid], spec["k"], **spec["topk"]))
    return {"profile": profile, "profile_block": mid}


# ----------------------------------------------------------------------------- agreement


def agreement(results: dict, files: dict, k: int) -> dict:
    """Each method against (a); top-K subspaces against the exact SVDs of (a) and (c)."""
    from llmdyn.jacobians.truncated import principal_angles

    ref_blocks = results["naive"]["blocks_measured"]
    ref = torch.load(files["naive"])["jac"].double()  # [layer_ab, tok, d_model, d_model]
    U_ref, S_ref, Vh_ref = torch.linalg.svd(ref)
    out = {"naive": {"rel_fro_vs_a": 0.0}}
    if "hf_hidden_states" in files:
        hf = torch.load(files["hf_hidden_states"])["jac"]
        out["hf_hidden_states"] = {"rel_fro_vs_a": common.rel_fro(hf, ref)}
    exact = None
    if "own_position" in files:
        exact = torch.load(files["own_position"])["jac"].double()  # [layer, tok, d, d]
        out["own_position"] = {"rel_fro_vs_a": common.rel_fro(exact[ref_blocks], ref)}
        U_c, S_c, Vh_c = torch.linalg.svd(exact)
        gap = (S_c[..., k - 1] - S_c[..., k]) / S_c[..., k - 1]  # [layer, tok]
        floor = torch.maximum(principal_angles(U_c[ref_blocks, ..., :k], U_ref[..., :k]),
                              principal_angles(Vh_c[ref_blocks, ..., :k, :].mT,
                                               Vh_ref[..., :k, :].mT))
        out["own_position"].update({
            "relative_gap_k_min": float(gap.min()), "relative_gap_k_median": float(gap.median()),
            "top_k_angle_vs_a": float(floor.max()),
        })
    for name in ("topk", "topk_fixed"):
        if name not in files:
            continue
        got = torch.load(files[name])
        U, S, V = (got[key].double() for key in ("U", "S", "V"))
        ang = torch.maximum(principal_angles(U[ref_blocks], U_ref[..., :k]),
                            principal_angles(V[ref_blocks], Vh_ref[..., :k, :].mT))
        row = {"angle_vs_a_max": float(ang.max()), "angle_vs_a_median": float(ang.median()),
               "sv_rel_err_vs_a": float(((S[ref_blocks] - S_ref[..., :k]).abs() /
                                         S_ref[..., :1]).max())}
        if exact is not None:
            ang_c = torch.maximum(principal_angles(U, U_c[..., :k]),
                                  principal_angles(V, Vh_c[..., :k, :].mT))  # [layer, tok]
            row.update({"angle_vs_c_max": float(ang_c.max()),
                        "angle_vs_c_median": float(ang_c.median()),
                        "share_within_1e-3": float((ang_c <= 1e-3).double().mean())})
        out[name] = row
    return out


# ----------------------------------------------------------------------------- driver


def run_method(spec: dict) -> dict:
    """Run ``worker(spec)`` in a fresh interpreter and parse its result line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib"), "TQDM_DISABLE": "1",
           "TRANSFORMERS_VERBOSITY": "error"}
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], env=env,
                          capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH-RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{spec['method']} on {spec['model']} failed "
                           f"(exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1].removeprefix("BENCH-RESULT "))


def _default_layers(n_layers: int, n: int = 3) -> list[int]:
    return sorted({round(i * (n_layers - 1) / (n - 1)) for i in range(n)})


def bench_model(name: str, args, tmp: Path) -> dict:
    """All methods on one model, then their agreement; prints one table."""
    from llmdyn.models.loading import load_model

    n_layers = load_model(name).n_layers
    layers = [b % n_layers for b in args.layers] if args.layers else _default_layers(n_layers)
    topk = {"oversample": args.oversample, "block_size": args.block_size, "tol": args.tol}
    results, files, workloads = {}, {}, {}
    for method in args.methods:
        files[method] = str(tmp / f"{name}-{method}.pt")
        spec = {"method": method, "model": name, "prompt": args.prompt, "layers": layers,
                "k": args.k, "topk": topk, "save": files[method], "profile": args.profile,
                "threads": args.threads, "gflops": args.gflops, "n_prompts": args.n_prompts,
                "prompts_per_batch": args.prompts_per_batch}
        print(f"[{name}] {LABELS.get(method, method)} ...", flush=True)
        if method in WORKLOADS:
            workloads[method] = run_method(spec)
            print(json.dumps(workloads[method], indent=1), flush=True)
        else:
            results[method] = run_method(spec)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batched float64 SVDs: no gain from threads, large loss on busy cores
    agree = agreement(results, files, args.k) if "naive" in results else {}
    torch.set_num_threads(threads)
    for method, row in agree.items():
        results[method]["agreement"] = row
    base = results.get("naive", {}).get("all_blocks_s")
    for row in results.values():
        row["speedup_vs_a"] = base / row["all_blocks_s"] if base else None
        if "products" in row:  # time at the measured matmul throughput, nothing else counted
            flops = 2 * row["products"] * row["tok"] * row["macs_per_vector"]
            row["flop_floor_s"] = flops / (max(args.gflops, row.get("gemm_gflops", 0)) * 1e9)
    if results:
        print_table(name, results, layers)
    return results, workloads


def main(argv: list[str] | None = None) -> None:
    """Command line entry point (see the module docstring)."""
    args = _parser().parse_args(argv)
    if args.report_only:
        Path(args.markdown).write_text(markdown_report(json.loads(Path(args.out).read_text())))
        return
    if args.worker:
        print("BENCH-RESULT " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return
    started = time.perf_counter()
    info = _machine_info(args)
    if args.threads:  # the floor at the thread count the routes run with
        torch.set_num_threads(args.threads)
    args.gflops = info["gemm_gflops"] = common.gemm_gflops()
    out = {"machine": info, "models": {}, "last_token": {}, "batched": {}}
    with tempfile.TemporaryDirectory(prefix="llmdyn-bench-") as tmp:
        for name in args.models:
            results, workloads = bench_model(name, args, Path(tmp))
            if results:
                out["models"][name] = results
            for key, value in workloads.items():
                out[key][name] = value
    info["load_average_end"] = os.getloadavg()
    info["uptime_end"] = common.uptime()
    info["bench_wall_s"] = time.perf_counter() - started
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    Path(args.markdown).write_text(markdown_report(out))
    print(f"\nwrote {args.out} in {info['bench_wall_s']:.0f} s "
          f"(load average {info['load_average_start'][0]:.1f} -> "
          f"{info['load_average_end'][0]:.1f} on {info['cores']} cores)")


def _parser() -> argparse.ArgumentParser:
    """The command line: models, methods, workloads and the top-K options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    parser.add_argument("--markdown", default=str(ROOT / "book" / "performance_results.md"),
                        help="Markdown tables for the book's Performance page")
    parser.add_argument("--methods", nargs="+", default=[*METHODS, *WORKLOADS],
                        choices=[*METHODS, *WORKLOADS])
    parser.add_argument("--n-prompts", type=int, default=8,
                        help="batched: prompts of the chapter 05/09 unit (named prompts)")
    parser.add_argument("--prompts-per-batch", nargs="+", type=int, default=[4, 8],
                        help="batched: prompts per vmapped batch, each compared to a loop")
    parser.add_argument("--layers", nargs="+", type=int, default=None,
                        help="blocks measured for (a) and (b) (default: first, middle, last)")
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--k", type=int, default=30)
    parser.add_argument("--oversample", type=int, default=10, help="(d): start block k + this")
    parser.add_argument("--block-size", type=int, default=24, help="(d): Krylov block width")
    parser.add_argument("--tol", type=float, default=1e-3, help="(d): subspace tolerance, rad")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads per method (default: torch's, one per core)")
    parser.add_argument("--no-profile", dest="profile", action="store_false",
                        help="skip the torch.profiler run of one block for (c) and (d)")
    parser.add_argument("--report-only", action="store_true",
                        help="only rewrite --markdown from an existing --out JSON")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser


def _machine_info(args) -> dict:
    """Date, cores, threads, torch, CPU and load at the start: what the timings depend on."""
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cores": os.cpu_count(), "torch_threads": args.threads or torch.get_num_threads(),
        "torch": torch.__version__, "python": platform.python_version(),
        "cpu": common.cpu_name(), "platform": platform.platform(), "prompt": args.prompt,
        "k": args.k, "load_average_start": os.getloadavg(), "uptime": common.uptime(),
    }


if __name__ == "__main__":
    main()
