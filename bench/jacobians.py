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
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

import torch  # noqa: E402

PROMPT = "What is the capital of France? The capital is"
METHODS = ("naive", "hf_hidden_states", "own_position", "topk", "topk_fixed")
WORKLOADS = ("last_token", "batched")  # bench/last_token.py
LABELS = {"naive": "(a) naive jacrev", "hf_hidden_states": "(b) HF hidden states",
          "own_position": "(c) own-position exact", "topk": "(d) top-K, tol",
          "topk_fixed": "(d') top-K, fixed"}
GIB = 2**30


def _peak_rss() -> float:
    """Peak resident memory of this process so far, in GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


# ----------------------------------------------------------------------------- the routes


def naive_block(model, calls, b: int, chunk_size: int | None = None) -> torch.Tensor:
    """(a) jacrev of f_b over the whole sequence: diagonal blocks ``[tok, d_model, d_model]``."""
    from llmdyn.jacobians.full import block_residual

    x = calls[b].hidden.detach()
    full = torch.func.jacrev(block_residual(model, b, calls[b]),
                             chunk_size=chunk_size)(x)  # (tok, d, tok, d)
    return torch.stack([full[t, :, t, :] for t in range(x.shape[0])])  # (tok, d_out, d_in)


def _leaf_through_model(model, ids: torch.Tensor, b: int):
    """g(leaf) = (block b's output) − leaf, with ``leaf`` swapped in as block b's input.

    The whole HF model runs with ``output_hidden_states=True`` (the authors' route); for the
    last block the block's own output is read, since HF's last hidden state is normed.
    Returns ``(g, remove_hooks)``.
    """
    block, last = model.blocks[b], b == model.n_layers - 1
    state: dict[str, torch.Tensor] = {}

    def swap_input(_module, args, kwargs):
        return (state["leaf"][None], *args[1:]), kwargs

    def keep_output(_module, _args, out):
        state["out"] = out[0] if isinstance(out, tuple) else out

    hooks = [block.register_forward_pre_hook(swap_input, with_kwargs=True),
             block.register_forward_hook(keep_output)]

    def g(leaf: torch.Tensor) -> torch.Tensor:
        state["leaf"] = leaf
        hidden = model.hf(ids, output_hidden_states=True, use_cache=False).hidden_states
        after = state["out"] if last else hidden[b + 1]  # (1, tok, d_model)
        return after[0] - leaf

    def remove() -> None:
        for hook in hooks:
            hook.remove()

    return g, remove


def pull_back_through_model(model, ids: torch.Tensor, x: torch.Tensor, b: int,
                            basis: torch.Tensor, chunk_size: int | None = None) -> torch.Tensor:
    """Rows ``basis_i^T d f^b / d x`` through the HF model (block b's input swapped for a leaf).

    ``basis`` is ``[n_vectors, tok, d]`` (output cotangents); returns ``[n_vectors, tok, d]``.
    """
    g, remove = _leaf_through_model(model, ids, b)
    try:
        _, pullback = torch.func.vjp(g, x)
        (rows,) = torch.func.vmap(pullback, chunk_size=chunk_size)(basis)
    finally:
        remove()
    return rows


def hf_block(model, ids: torch.Tensor, x: torch.Tensor, b: int,
             chunk_size: int | None = None) -> torch.Tensor:
    """(b) d hidden_states[b+1] / d hidden_states[b] through the HF model, vmapped VJPs."""
    n_tok, d = x.shape
    basis = torch.eye(n_tok * d, dtype=x.dtype).view(n_tok * d, n_tok, d)  # e_(t, k)
    rows = pull_back_through_model(model, ids, x, b, basis, chunk_size)  # (tok*d, tok, d)
    full = rows.view(n_tok, d, n_tok, d)  # (tok_out, d_out, tok_in, d_in)
    return torch.stack([full[t, :, t, :] for t in range(n_tok)])  # (tok, d_out, d_in)


def chunk_candidates(d: int, n_vectors: int) -> list[int | None]:
    """Chunk sizes tried for a route with ``n_vectors`` products: d/4 … up to all (None)."""
    sizes = [c for c in (d // 4, d // 2, d, 2 * d, 4 * d) if c < n_vectors]
    return [*sizes, None]


def tune_chunk(run, candidates: list[int | None]) -> tuple[int | None, dict[str, float]]:
    """Time ``run(chunk_size)`` once per candidate; the fastest and every timing (s)."""
    timings = {}
    for c in candidates:
        start = time.perf_counter()
        run(c)
        timings[str(c)] = time.perf_counter() - start
    best = min(timings, key=timings.get)
    return (None if best == "None" else int(best)), timings


def macs_per_vector(model, n_tok: int) -> int:
    """Multiply-adds one product (J v or J^T u) needs per token: the block's matmuls, no waste."""
    cfg = model.hf.config.get_text_config()
    d, inter, heads = cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    hd = getattr(cfg, "head_dim", None) or d // heads
    return 3 * d * inter + 2 * d * heads * hd + 2 * d * kv * hd + heads * hd * n_tok


def gemm_gflops(seconds: float = 2.0) -> float:
    """Measured float32 matmul throughput at the sizes the products run at (GFLOP/s)."""
    a, b = torch.randn(5760, 576), torch.randn(576, 1536)
    a @ b
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        n += 1
    return 2 * a.shape[0] * a.shape[1] * b.shape[1] * n / (time.perf_counter() - start) / 1e9


def _profile(fn, rows: int = 12) -> list[dict]:
    """Top operators by self CPU time of one call of ``fn``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events) or 1
    return [{"op": e.key, "self_ms": round(e.self_cpu_time_total / 1e3, 1),
             "share": round(e.self_cpu_time_total / total, 3), "calls": e.count}
            for e in events[:rows]]


def worker(spec: dict) -> dict:
    """Run one method on one model; save its tensors; return timings and memory."""
    from llmdyn.jacobians.full import block_jacobians, capture_block_calls
    from llmdyn.jacobians.truncated import truncated_block_svd
    from llmdyn.models.loading import load_model
    from llmdyn.trace import encode

    torch.manual_seed(0)
    if spec.get("threads"):
        torch.set_num_threads(spec["threads"])
    model = load_model(spec["model"])
    # The floor takes the best matmul throughput seen, here or in the parent, so that a busy
    # moment during one measurement does not flatter the routes.
    gflops = max(spec["gflops"], gemm_gflops(1.0))
    if spec["method"] in WORKLOADS:  # one process, both routes side by side
        import last_token

        if spec["method"] == "last_token":
            return {**last_token.last_token_workload(model, spec, gflops), "gemm_gflops": gflops}
        return last_token.batched_workload(model, spec)
    ids = encode(model, spec["prompt"])
    with torch.no_grad():
        model.hf(ids, use_cache=False)  # warm-up: first-call allocations are not timed
    method, n_layers, k = spec["method"], model.n_layers, spec["k"]
    rss_load = _peak_rss()
    per_block: list[float] = []
    extra: dict = {}
    wall, cpu = time.perf_counter(), time.process_time()
    if method in ("naive", "hf_hidden_states", "own_position"):
        # Each route runs at its best chunk size, tuned on one block before the clock starts.
        calls = capture_block_calls(model, ids)
        mid, n_tok, d = n_layers // 2, ids.shape[1], model.d_model

        def one_block(b, chunk):
            if method == "naive":
                return naive_block(model, calls, b, chunk)
            if method == "hf_hidden_states":
                return hf_block(model, ids, calls[b].hidden.detach(), b, chunk)
            return block_jacobians(model, spec["prompt"], [b], chunk_size=chunk,
                                   progress=False)

        n_vectors = d if method == "own_position" else n_tok * d
        chunk, tuning = tune_chunk(lambda c: one_block(mid, c), chunk_candidates(d, n_vectors))
        extra = {"chunk_size": chunk, "chunk_tuning_s": tuning}
        wall, cpu = time.perf_counter(), time.process_time()
    if method in ("naive", "hf_hidden_states"):
        blocks, setup, out = spec["layers"], 0.0, []
        for b in blocks:
            start = time.perf_counter()
            out.append(one_block(b, chunk))
            per_block.append(time.perf_counter() - start)
        saved = {"jac": torch.stack(out)}  # [layer, tok, d_model, d_model]
    elif method == "own_position":
        blocks, setup = list(range(n_layers)), 0.0
        saved = {"jac": block_jacobians(model, spec["prompt"], chunk_size=chunk,
                                        progress=False)}
    else:
        blocks, setup = list(range(n_layers)), 0.0
        options = spec["topk"] if method == "topk" else {}
        res = truncated_block_svd(model, spec["prompt"], k=k, **options)
        saved = {"U": res.U, "S": res.S, "V": res.V}
        width = options.get("block_size") or k + options.get("oversample", 10)
        extra = {"options": options, "extensions": list(res.iterations),
                 "products": sum(2 * min(width * (e + 1), model.d_model)
                                 for e in res.iterations)}
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = _peak_rss()
    torch.save(saved, spec["save"])
    measured_all = len(blocks) == n_layers
    mean_block = (wall - setup) / len(blocks)
    result = {
        "method": method, "model": spec["model"], "n_layers": n_layers, "tok": ids.shape[1],
        "d_model": model.d_model, "blocks_measured": blocks, "wall_s": wall, "cpu_s": cpu,
        "setup_s": setup, "per_block_s": per_block or [mean_block] * len(blocks),
        "all_blocks_s": wall if measured_all else setup + mean_block * n_layers,
        "extrapolated": not measured_all,
        "rss_after_load_gib": rss_load, "peak_rss_gib": peak,
        "macs_per_vector": macs_per_vector(model, ids.shape[1]), "gemm_gflops": gflops,
        **extra,
    }
    if method == "own_position":
        result["products"] = model.d_model * n_layers
    elif method in ("naive", "hf_hidden_states"):  # T·d products per block, all blocks
        result["products"] = ids.shape[1] * model.d_model * n_layers
    if spec["profile"] and method in ("own_position", "topk"):
        mid = n_layers // 2
        if method == "own_position":
            result["profile"] = _profile(lambda: block_jacobians(model, spec["prompt"], [mid]))
        else:
            result["profile"] = _profile(
                lambda: truncated_block_svd(model, spec["prompt"], [mid], k, **spec["topk"]))
        result["profile_block"] = mid
    return result


# ----------------------------------------------------------------------------- agreement


def _rel_fro(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float(torch.linalg.norm((a.double() - ref.double()).flatten()) /
                 torch.linalg.norm(ref.double().flatten()))


def agreement(results: dict, files: dict, k: int) -> dict:
    """Each method against (a); top-K subspaces against the exact SVDs of (a) and (c)."""
    from llmdyn.jacobians.truncated import principal_angles

    ref_blocks = results["naive"]["blocks_measured"]
    ref = torch.load(files["naive"])["jac"].double()  # [layer_ab, tok, d_model, d_model]
    U_ref, S_ref, Vh_ref = torch.linalg.svd(ref)
    out = {"naive": {"rel_fro_vs_a": 0.0}}
    if "hf_hidden_states" in files:
        hf = torch.load(files["hf_hidden_states"])["jac"]
        out["hf_hidden_states"] = {"rel_fro_vs_a": _rel_fro(hf, ref)}
    exact = None
    if "own_position" in files:
        exact = torch.load(files["own_position"])["jac"].double()  # [layer, tok, d, d]
        out["own_position"] = {"rel_fro_vs_a": _rel_fro(exact[ref_blocks], ref)}
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
        _print_table(name, results, layers)
    return results, workloads


def _print_table(name: str, results: dict, layers: list[int]) -> None:
    n_layers = next(iter(results.values()))["n_layers"]
    print(f"\n{name}: all {n_layers} blocks; (a) and (b) measured on blocks {layers} and "
          "extrapolated (setup + mean per block x blocks)")
    head = (f"{'method':26s} {'per block s':>11s} {'all blocks s':>13s} {'x (a)':>7s} "
            f"{'peak RSS GiB':>12s}  agreement")
    print(head + "\n" + "-" * len(head))
    for method, row in results.items():
        per = sum(row["per_block_s"]) / len(row["per_block_s"])
        total = f"{row['all_blocks_s']:.1f}" + ("*" if row["extrapolated"] else "")
        ratio = f"{row['speedup_vs_a']:.1f}" if row["speedup_vs_a"] else "-"
        agree = row.get("agreement", {})
        if "rel_fro_vs_a" in agree:
            text = f"rel. Frobenius {agree['rel_fro_vs_a']:.1e}"
        elif "angle_vs_a_max" in agree:
            text = (f"top-K angle max {agree['angle_vs_a_max']:.1e} (vs a), "
                    f"{agree.get('angle_vs_c_max', float('nan')):.1e} (vs c, all blocks)")
        else:
            text = "-"
        print(f"{LABELS[method]:26s} {per:11.2f} {total:>13s} {ratio:>7s} "
              f"{row['peak_rss_gib']:12.2f}  {text}")
    print("* extrapolated to all blocks")
    for method, row in results.items():
        if "flop_floor_s" in row:
            print(f"{LABELS[method]}: {row['products']} products; at the measured matmul "
                  f"throughput alone they would take {row['flop_floor_s']:.1f} s "
                  f"(measured: {row['all_blocks_s'] / row['flop_floor_s']:.1f}x that)")


def _ratio(results: dict, fast: str, slow: str) -> float | None:
    """How many times faster ``fast`` ran than ``slow`` over all blocks (None if one is missing)."""
    if fast in results and slow in results:
        return results[slow]["all_blocks_s"] / results[fast]["all_blocks_s"]
    return None


def target_checks(results: dict) -> list[tuple[str, float | None, bool | None]]:
    """The issue's targets for one model: (what, measured figure, met?)."""
    def check(name, value, ok):
        return name, value, None if value is None else bool(ok(value))

    agree = [row.get("agreement", {}).get("rel_fro_vs_a") for m, row in results.items()
             if m in ("hf_hidden_states", "own_position")]
    angle = results.get("topk", {}).get("agreement", {}).get("angle_vs_c_max")
    tok = next(iter(results.values()))["tok"]
    return [
        check(f"(c) faster than tuned (a), target >= 0.7·T = {0.7 * tok:.1f}x",
              _ratio(results, "own_position", "naive"), lambda v: v >= 0.7 * tok),
        check("(c) faster than (b), target >= 3x",
              _ratio(results, "own_position", "hf_hidden_states"), lambda v: v >= 3),
        check("(d) faster than (c), target >= 3x", _ratio(results, "topk", "own_position"),
              lambda v: v >= 3),
        check("(d) largest principal angle vs exact SVD, target <= 1e-3 rad", angle,
              lambda v: v <= 1e-3),
        check("peak RSS of any method, target <= 4 GiB",
              max(row["peak_rss_gib"] for row in results.values()), lambda v: v <= 4),
        check("(b), (c) relative Frobenius error vs (a), target <= 1e-4",
              max(agree) if agree and None not in agree else None, lambda v: v <= 1e-4),
    ]


def _profile_table(results: dict, rows: int = 6) -> list[str]:
    """Top operators of one block of (c) and (d), as Markdown lines (empty without a profile)."""
    profiled = [m for m in ("own_position", "topk") if results.get(m, {}).get("profile")]
    if not profiled:
        return []
    block = results[profiled[0]]["profile_block"]
    lines = [f"Where the time of one block (block {block}) goes, by torch.profiler self CPU time:",
             "", "| " + " | ".join(f"{LABELS[m]}: operator | share" for m in profiled) + " |",
             "| " + " | ".join("--- | ---:" for _ in profiled) + " |"]
    for i in range(rows):
        cells = []
        for m in profiled:
            prof = results[m]["profile"]
            cells.append(f"`{prof[i]['op']}` | {prof[i]['share']:.0%}" if i < len(prof)
                         else " | ")
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _last_token_lines(name: str, row: dict) -> list[str]:
    """The last-token table of one model: library vs authors' route, each against its floor."""
    lib, auth = row["library"], row["authors"]

    def chunk(r):
        return "all" if r["chunk_size"] is None else str(r["chunk_size"])

    cpu = row.get("speedup_cpu")
    return [
        f"### {name}: last-token J_nn, all {row['n_layers']} blocks, {row['tok']} tokens", "",
        "| route | chunk size | s, all blocks | CPU s | × FLOP floor | × faster than authors' |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| authors' route (`output_hidden_states` + vmapped VJP) | {chunk(auth)} | "
        f"{auth['all_blocks_s']:.1f} * | {auth.get('all_blocks_cpu_s', float('nan')):.1f} * | "
        f"{auth['all_blocks_s'] / auth['flop_floor_s']:.1f} | 1.0 |",
        f"| library (`last_token_jacobians`) | {chunk(lib)} | {lib['all_blocks_s']:.1f} | "
        f"{lib.get('all_blocks_cpu_s', float('nan')):.1f} | "
        f"{lib['all_blocks_s'] / lib['flop_floor_s']:.1f} | {row['speedup']:.1f}"
        + (f" (CPU time: {cpu:.1f})" if cpu else "") + " |", "",
        rf"\* authors' route measured on blocks {row['blocks_measured']} and extrapolated. "
        f"FLOP floors: {lib['products']} products of one token ({lib['flop_floor_s']:.2f} s) "
        f"for the library, of all {row['tok']} tokens ({auth['flop_floor_s']:.1f} s) for the "
        f"authors' route. Relative Frobenius difference between the two: "
        f"{row['rel_fro_library_vs_authors']:.1e}.", "",
        "| target | measured | met |", "| --- | ---: | --- |",
        f"| library within 1.5× its FLOP floor | {lib['all_blocks_s'] / lib['flop_floor_s']:.2f}"
        f" | {'yes' if lib['all_blocks_s'] <= 1.5 * lib['flop_floor_s'] else 'no'} |",
        f"| library ≥ 25× the authors' route | {row['speedup']:.1f} | "
        f"{'yes' if row['speedup'] >= 25 else 'no'} |", ""]


def _batched_lines(name: str, row: dict) -> list[str]:
    """Prompts per second of chapter 05/09's unit, one by one against batches."""
    lines = [f"### {name}: the sweep unit (all blocks, K = {row['k']}, coupling scores), "
             f"{row['n_prompts']} prompts", "",
             "| prompts per batch | s | prompts/s | × the loop | Jacobians alone, × the loop "
             "(CPU time) |", "| --- | ---: | ---: | ---: | ---: |"]
    for key, r in row["rows"].items():
        lines.append(f"| {key} | {r['s']:.1f} | {r['prompts_per_s']:.2f} | "
                     f"{r['speedup_vs_loop']:.2f} | {r['jacobians_speedup_vs_loop_cpu']:.2f} |")
    return [*lines, "", f"Largest relative difference of the singular values, batched against "
            f"the loop: {row['max_rel_diff_singular_values_vs_loop']:.1e}.", ""]


def markdown_report(out: dict) -> str:
    """The benchmark as Markdown tables, included by the book's Performance page."""
    info = out["machine"]
    lines = [f"Measured {info['date']} on {info['cores']} cores ({info['cpu']}), torch "
             f"{info['torch']}, {info['torch_threads']} threads; load average "
             f"{info['load_average_start'][0]:.1f} at the start and "
             f"{info.get('load_average_end', [float('nan')])[0]:.1f} at the end; measured "
             f"float32 matmul throughput {info['gemm_gflops']:.0f} GFLOP/s. Prompt: "
             f"\"{info['prompt']}\", K = {info['k']}.", "",
             f"`uptime` at the start: `{info.get('uptime', '?')}`; at the end: "
             f"`{info.get('uptime_end', '?')}`.", ""]
    for name, results in out["models"].items():
        first = next(iter(results.values()))
        lines += [f"### {name} ({first['n_layers']} blocks, d_model = {first['d_model']}, "
                  f"{first['tok']} tokens)", "",
                  "| method | chunk size | s per block | s, all blocks | × faster than (a) "
                  "| × FLOP floor | peak RSS GiB | agreement with (a) |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for method, row in results.items():
            per = sum(row["per_block_s"]) / len(row["per_block_s"])
            total = f"{row['all_blocks_s']:.1f}" + (" *" if row["extrapolated"] else "")
            ratio = f"{row['speedup_vs_a']:.1f}" if row.get("speedup_vs_a") else "–"
            agree = row.get("agreement", {})
            if "rel_fro_vs_a" in agree:
                text = f"relative Frobenius {agree['rel_fro_vs_a']:.1e}"
            elif "angle_vs_a_max" in agree:
                text = (f"largest principal angle {agree['angle_vs_a_max']:.1e} rad (blocks of "
                        f"(a)), {agree.get('angle_vs_c_max', float('nan')):.1e} rad (all "
                        "blocks, vs (c))")
            else:
                text = "–"
            chunk = row.get("chunk_size", "–") if "chunk_tuning_s" in row else "–"
            floor = (f"{row['all_blocks_s'] / row['flop_floor_s']:.1f}"
                     if row.get("flop_floor_s") else "–")
            lines.append(f"| {LABELS[method]} | {'all' if chunk is None else chunk} | {per:.2f} "
                         f"| {total} | {ratio} | {floor} | {row['peak_rss_gib']:.2f} | {text} |")
        lines += ["", "\\* measured on blocks "
                  f"{first['blocks_measured']} and extrapolated to all blocks.", "",
                  "Targets of the issue (set for SmolLM2-135M; shown for every model):", "",
                  "| target | measured | met |", "| --- | ---: | --- |"]
        for what, value, ok in target_checks(results):
            shown = "–" if value is None else f"{value:.3g}"
            lines.append(f"| {what} | {shown} | {'–' if ok is None else 'yes' if ok else 'no'} |")
        lines.append("")
        for method, row in results.items():
            if "flop_floor_s" in row:
                lines.append(f"- {LABELS[method]}: {row['products']} products; at the measured "
                             f"matmul throughput their matmuls alone take "
                             f"{row['flop_floor_s']:.1f} s, measured "
                             f"{row['all_blocks_s'] / row['flop_floor_s']:.1f}× that.")
        lines.append("")
        lines += _profile_table(results)
    for name, row in out.get("last_token", {}).items():
        lines += _last_token_lines(name, row)
    for name, row in out.get("batched", {}).items():
        lines += _batched_lines(name, row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Command line entry point (see the module docstring)."""
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
    args = parser.parse_args(argv)
    if args.report_only:
        Path(args.markdown).write_text(markdown_report(json.loads(Path(args.out).read_text())))
        return
    if args.worker:
        print("BENCH-RESULT " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return
    started = time.perf_counter()
    info = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cores": os.cpu_count(), "torch_threads": args.threads or torch.get_num_threads(),
        "torch": torch.__version__, "python": platform.python_version(),
        "cpu": _cpu_name(), "platform": platform.platform(), "prompt": args.prompt,
        "k": args.k, "load_average_start": os.getloadavg(), "uptime": _uptime(),
    }
    if args.threads:  # the floor at the thread count the routes run with
        torch.set_num_threads(args.threads)
    args.gflops = info["gemm_gflops"] = gemm_gflops()
    out = {"machine": info, "models": {}, "last_token": {}, "batched": {}}
    with tempfile.TemporaryDirectory(prefix="llmdyn-bench-") as tmp:
        for name in args.models:
            results, workloads = bench_model(name, args, Path(tmp))
            if results:
                out["models"][name] = results
            for key, value in workloads.items():
                out[key][name] = value
    info["load_average_end"] = os.getloadavg()
    info["uptime_end"] = _uptime()
    info["bench_wall_s"] = time.perf_counter() - started
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    Path(args.markdown).write_text(markdown_report(out))
    print(f"\nwrote {args.out} in {info['bench_wall_s']:.0f} s "
          f"(load average {info['load_average_start'][0]:.1f} -> "
          f"{info['load_average_end'][0]:.1f} on {info['cores']} cores)")


def _uptime() -> str:
    """``uptime``'s line (load averages over 1, 5 and 15 minutes), or '' without it."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
