r"""Last-token block Jacobians J^b_nn: the library against the authors' route, and the sweep unit.

Two workloads, each run in one process with both routes side by side (so that other jobs on a
shared machine slow both alike and the ratios stay fair):

- ``last_token``: every block's J_nn for one prompt of about 100 tokens.
  ``authors`` is the authors' route: block b's input swapped for a leaf, the whole model run with
  ``output_hidden_states=True``, and ``hidden_states[b+1][-1] - leaf[-1]`` pulled back against
  the d basis cotangents with ``torch.func.vjp`` + ``vmap`` (chunk size tuned). ``library`` is
  ``llmdyn.jacobians.last_token_jacobians`` (chunk size tuned), run on all blocks once after
  each of the authors' blocks; the median run is reported. Its FLOP floor uses the median
  throughput of the products measured just before each of those runs, so that the ratio
  compares the route with the machine as it was in the same minute. The authors' route is
  measured on a few blocks and extrapolated from their mean.
- ``batched``: the measurement of chapters 05 and 09 (all blocks, K = 30, every coupling matrix and
  score, :func:`llmdyn.coupling.coupling_from_jacobians`) for a list of prompts, one prompt at a
  time against several prompts per vmapped batch; prompts per second.

Called by ``bench/jacobians.py`` (``make bench``); not meant to be run alone.
"""

from __future__ import annotations

import statistics
import time

import torch
from common import (
    chunk_candidates,
    gemm_gflops,
    macs_per_vector,
    pull_back_through_model,
    rel_fro,
    tune_chunk,
)

GEMM_SECONDS = 1.0  # the burst of the floor's products before each library run

# About 100 tokens on SmolLM2 and Gemma 3 (a SQuAD-style context, question and answer cue).
LONG_PROMPT = (
    "The Amazon rainforest covers much of the Amazon basin of South America, an area of seven "
    "million square kilometres, of which five and a half million are covered by the rainforest. "
    "The region includes territory belonging to nine nations; the majority of the forest lies "
    "within Brazil, followed by Peru and Colombia. It represents over half of the planet's "
    "remaining rainforests. Question: Which country holds most of the Amazon rainforest? "
    "The answer is:"
)


def authors_last_block(model, ids: torch.Tensor, x: torch.Tensor, b: int,
                       chunk_size: int | None = None) -> torch.Tensor:
    """J^b_nn by the authors' route: d VJPs through the full-prompt model, ``[d_out, d_in]``."""
    n_tok, d = x.shape
    basis = torch.zeros(d, n_tok, d, dtype=x.dtype)
    basis[:, -1, :] = torch.eye(d, dtype=x.dtype)  # e_k at the last position
    return pull_back_through_model(model, ids, x, b, basis, chunk_size)[:, -1, :]


def last_token_workload(model, spec: dict, gflops: float) -> dict:
    """Every block's J_nn for LONG_PROMPT: library (all blocks) and authors' route (a few)."""
    from llmdyn.jacobians.blocks import capture_block_calls
    from llmdyn.jacobians.last_token import last_token_jacobians
    from llmdyn.trace import encode

    prompt, layers = spec.get("long_prompt") or LONG_PROMPT, spec["layers"]
    ids = encode(model, prompt)
    n_tok, d, n_layers = ids.shape[1], model.d_model, model.n_layers
    calls = capture_block_calls(model, ids)
    mid = n_layers // 2

    def authors(b, chunk):
        return authors_last_block(model, ids, calls[b].hidden.detach(), b, chunk)

    def library(blocks, chunk):  # the quantity the authors' hooks read: the last block's own
        # output, without the final norm (common.leaf_through_model); their agreement says so
        return last_token_jacobians(model, prompt, blocks, chunk_size=chunk,
                                    last_point="block_output")

    candidates = chunk_candidates(d, d)  # d products per block for both routes
    a_chunk, a_tuning = tune_chunk(lambda c: authors(mid, c), candidates)
    l_chunk, l_tuning = tune_chunk(lambda c: library(layers, c), candidates)
    # Side by side: one all-block run of the library after each of the authors' blocks, each
    # just after a burst of the products the floor counts. The medians of both are reported:
    # on this shared machine one run of SmolLM2 took 2.3 s in one bench and 3.4 s in the next,
    # idle both times, and the throughput of one process ranged 53-83 GFLOP/s over a day.
    a_times, a_cpu, a_out, lib_runs, beside = [], [], [], [], []
    for b in layers:
        start, cpu = time.perf_counter(), time.process_time()
        a_out.append(authors(b, a_chunk))
        a_times.append(time.perf_counter() - start)
        a_cpu.append(time.process_time() - cpu)
        beside.append(gemm_gflops(spec.get("gemm_seconds", GEMM_SECONDS)))
        start, cpu = time.perf_counter(), time.process_time()
        lib = library(None, l_chunk)
        lib_runs.append((time.perf_counter() - start, time.process_time() - cpu))
    lib_s, lib_cpu = sorted(lib_runs)[len(lib_runs) // 2]  # the median run (wall and its CPU)
    peak, best = statistics.median(beside), max(gflops, *beside)
    macs = macs_per_vector(model, n_tok)
    a_all = sum(a_times) / len(a_times) * n_layers
    lib_flops = 2 * d * n_layers * 1 * macs  # one token per product
    floor_a = 2 * d * n_layers * n_tok * macs / (best * 1e9)  # every token
    return {
        "tok": n_tok, "d_model": d, "n_layers": n_layers, "blocks_measured": layers,
        "library": {"chunk_size": l_chunk, "chunk_tuning_s": l_tuning, "all_blocks_s": lib_s,
                    "all_blocks_cpu_s": lib_cpu, "runs_s": [wall for wall, _ in lib_runs],
                    "gflops_beside_runs": beside, "flop_floor_s": lib_flops / (peak * 1e9),
                    "flop_floor_best_peak_s": lib_flops / (best * 1e9),
                    "products": d * n_layers},
        "authors": {"chunk_size": a_chunk, "chunk_tuning_s": a_tuning, "per_block_s": a_times,
                    "all_blocks_s": a_all, "extrapolated": True, "flop_floor_s": floor_a,
                    "per_block_cpu_s": a_cpu,
                    "all_blocks_cpu_s": sum(a_cpu) / len(a_cpu) * n_layers,
                    "products": d * n_layers},
        "speedup": a_all / lib_s,
        "speedup_cpu": sum(a_cpu) / len(a_cpu) * n_layers / lib_cpu,
        "rel_fro_library_vs_authors": rel_fro(lib[layers], torch.stack(a_out)),
    }


def batched_workload(model, spec: dict) -> dict:
    """Chapter 05/09's unit (all blocks, K, coupling scores) per prompt: a loop vs batches."""
    from llmdyn.coupling.depth import coupling_from_jacobians
    from llmdyn.data.named import NAMED_PROMPTS
    from llmdyn.jacobians.last_token import last_token_jacobians, last_token_jacobians_batched

    named = [q.text for q in NAMED_PROMPTS.values()]
    prompts = (named * spec["n_prompts"])[: spec["n_prompts"]]  # repeated if too few
    k = spec["k"]
    rows = {}

    start, cpu = time.perf_counter(), time.process_time()
    loop, jac_cpu = [], 0.0
    for p in prompts:
        c = time.process_time()
        J = last_token_jacobians(model, p)
        jac_cpu += time.process_time() - c
        loop.append(coupling_from_jacobians(J, k))
    rows["1 (loop)"] = {"prompts_per_batch": 1, "s": time.perf_counter() - start,
                        "cpu_s": time.process_time() - cpu, "jacobians_cpu_s": jac_cpu}
    worst = 0.0
    for per in spec["prompts_per_batch"]:
        start, cpu = time.perf_counter(), time.process_time()
        got, jac_cpu = [], 0.0
        for i in range(0, len(prompts), per):
            c = time.process_time()
            J = last_token_jacobians_batched(model, prompts[i:i + per],
                                             prompts_per_batch=per)  # (prompt, layer, d, d)
            jac_cpu += time.process_time() - c
            got += [coupling_from_jacobians(j, k) for j in J]
        rows[str(per)] = {"prompts_per_batch": per, "s": time.perf_counter() - start,
                          "cpu_s": time.process_time() - cpu, "jacobians_cpu_s": jac_cpu}
        worst = max([worst, *(float(abs(a.S - b.S).max() / abs(b.S).max())
                              for a, b in zip(got, loop, strict=True))])
    for row in rows.values():
        row["prompts_per_s"] = len(prompts) / row["s"]
        row["speedup_vs_loop"] = rows["1 (loop)"]["s"] / row["s"]
        row["jacobians_speedup_vs_loop_cpu"] = (rows["1 (loop)"]["jacobians_cpu_s"]
                                                / row["jacobians_cpu_s"])
    return {"n_prompts": len(prompts), "k": k, "rows": rows,
            "max_rel_diff_singular_values_vs_loop": worst}
