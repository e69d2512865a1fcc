"""The benchmark's report: the console table, the issue's targets and the book's Markdown.

Imported by ``jacobians.py``; it reads the result dictionaries only (no model, no torch).
"""

from __future__ import annotations

from llmdyn.core.escape import markdown_code
from llmdyn.core.tables import markdown_grid, markdown_table

LABELS = {"naive": "(a) naive jacrev", "hf_hidden_states": "(b) HF hidden states",
          "own_position": "(c) own-position exact", "topk": "(d) top-K, tol",
          "topk_fixed": "(d') top-K, fixed"}


def print_table(name: str, results: dict, layers: list[int]) -> None:
    """One model's methods as a console table: time, ratio to (a), memory, agreement."""
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
    header = [name for m in profiled for name in (f"{LABELS[m]}: operator", "share")]
    grid = []
    for i in range(rows):
        cells = []
        for m in profiled:
            prof = results[m]["profile"]
            cells += [markdown_code(prof[i]['op']), f"{prof[i]['share']:.0%}"] if i < len(prof) \
                else ["", ""]
        grid.append(cells)
    return [f"Where the time of one block (block {block}) goes, by torch.profiler self CPU time:",
            "", markdown_grid(header, grid, align={"share": "right"}), ""]


def _last_token_lines(name: str, row: dict) -> list[str]:
    """The last-token table of one model: library vs authors' route, each against its floor."""
    lib, auth = row["library"], row["authors"]

    def chunk(r):
        return "all" if r["chunk_size"] is None else str(r["chunk_size"])

    cpu = row.get("speedup_cpu")
    nan = float("nan")
    routes = [
        {"route": "authors' route (`output_hidden_states` + vmapped VJP)",
         "chunk size": chunk(auth),
         "s, all blocks": f"{auth['all_blocks_s']:.1f} *",
         "CPU s": f"{auth.get('all_blocks_cpu_s', nan):.1f} *",
         "× FLOP floor": f"{auth['all_blocks_s'] / auth['flop_floor_s']:.1f}",
         "× faster than authors'": "1.0"},
        {"route": "library (`last_token_jacobians`)", "chunk size": chunk(lib),
         "s, all blocks": f"{lib['all_blocks_s']:.1f}",
         "CPU s": f"{lib.get('all_blocks_cpu_s', nan):.1f}",
         "× FLOP floor": f"{lib['all_blocks_s'] / lib['flop_floor_s']:.1f}",
         "× faster than authors'": f"{row['speedup']:.1f}"
                                   + (f" (CPU time: {cpu:.1f})" if cpu else "")}]
    floor = lib["all_blocks_s"] / lib["flop_floor_s"]
    targets = [
        {"target": "library within 1.5× its FLOP floor", "measured": f"{floor:.2f}",
         "met": "yes" if lib["all_blocks_s"] <= 1.5 * lib["flop_floor_s"] else "no"},
        {"target": "library ≥ 25× the authors' route", "measured": f"{row['speedup']:.1f}",
         "met": "yes" if row["speedup"] >= 25 else "no"}]
    return [
        f"### {name}: last-token J_nn, all {row['n_layers']} blocks, {row['tok']} tokens", "",
        markdown_table(routes, align=_right(routes, "route")), "",
        rf"\* authors' route measured on blocks {row['blocks_measured']} and extrapolated. "
        + (f"Library: the median of {len(lib['runs_s'])} all-block runs "
           f"({', '.join(f'{s:.2f}' for s in lib['runs_s'])} s), one after each of those "
           "blocks. " if "runs_s" in lib else "") +
        f"FLOP floors: {lib['products']} products of one token ({lib['flop_floor_s']:.2f} s) "
        f"for the library, of all {row['tok']} tokens ({auth['flop_floor_s']:.1f} s) for the "
        "authors' route. " + _beside(lib) + "Relative Frobenius difference between the two: "
        f"{row['rel_fro_library_vs_authors']:.1e}.", "",
        markdown_table(targets, align={"measured": "right"}), ""]


def _right(rows: list[dict], *left: str) -> dict[str, str]:
    """``align`` for a table of numbers: every column right-aligned but those named ``left``."""
    return {column: "right" for column in rows[0] if column not in left}


def _beside(lib: dict) -> str:
    """How the library's floor was measured, and its ratio against the best throughput seen."""
    if "gflops_beside_runs" not in lib:
        return ""
    runs = ", ".join(f"{g:.0f}" for g in lib["gflops_beside_runs"])
    best = lib["all_blocks_s"] / lib["flop_floor_best_peak_s"]
    return (f"The library's floor is at the median throughput of the products measured just "
            f"before each of its runs ({runs} GFLOP/s); against the best throughput this "
            f"process saw, it ran at {best:.2f}× its floor. ")


def _batched_lines(name: str, row: dict) -> list[str]:
    """Prompts per second of chapter 05/09's unit, one by one against batches."""
    sizes = [{"prompts per batch": key, "s": f"{r['s']:.1f}",
              "prompts/s": f"{r['prompts_per_s']:.2f}", "× the loop": f"{r['speedup_vs_loop']:.2f}",
              "Jacobians alone, × the loop (CPU time)":
                  f"{r['jacobians_speedup_vs_loop_cpu']:.2f}"} for key, r in row["rows"].items()]
    return [f"### {name}: the sweep unit (all blocks, K = {row['k']}, coupling scores), "
            f"{row['n_prompts']} prompts", "",
            markdown_table(sizes, align=_right(sizes, "prompts per batch")), "",
            "Largest relative difference of the singular values, batched against "
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
        methods = []
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
            methods.append({"method": LABELS[method],
                            "chunk size": "all" if chunk is None else chunk,
                            "s per block": f"{per:.2f}", "s, all blocks": total,
                            "× faster than (a)": ratio, "× FLOP floor": floor,
                            "peak RSS GiB": f"{row['peak_rss_gib']:.2f}",
                            "agreement with (a)": text})
        targets = [{"target": what, "measured": "–" if value is None else f"{value:.3g}",
                    "met": "–" if ok is None else "yes" if ok else "no"}
                   for what, value, ok in target_checks(results)]
        lines += [f"### {name} ({first['n_layers']} blocks, d_model = {first['d_model']}, "
                  f"{first['tok']} tokens)", "",
                  markdown_table(methods, align=_right(methods, "method", "agreement with (a)")),
                  "", "\\* measured on blocks "
                  f"{first['blocks_measured']} and extrapolated to all blocks.", "",
                  "Targets of the issue (set for SmolLM2-135M; shown for every model):", "",
                  markdown_table(targets, align={"measured": "right"}), ""]
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
