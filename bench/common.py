"""What the benchmarks share: the authors' pull-back, chunk tuning, FLOP floors, the machine.

Imported by ``jacobians.py`` and ``last_token.py``, so that ``last_token.py`` needs nothing from
``jacobians.py`` (which runs its workloads).
"""

from __future__ import annotations

import platform
import resource
import subprocess
import time
from pathlib import Path

import torch

GIB = 2**30



def leaf_through_model(model, ids: torch.Tensor, b: int):
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
    g, remove = leaf_through_model(model, ids, b)
    try:
        _, pullback = torch.func.vjp(g, x)
        (rows,) = torch.func.vmap(pullback, chunk_size=chunk_size)(basis)
    finally:
        remove()
    return rows


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


def rel_fro(a: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative Frobenius distance ||a - ref|| / ||ref||, in float64."""
    return float(torch.linalg.norm((a.double() - ref.double()).flatten()) /
                 torch.linalg.norm(ref.double().flatten()))


def peak_rss() -> float:
    """Peak resident memory of this process so far, in GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


def profile_ops(fn, rows: int = 12) -> list[dict]:
    """Top operators by self CPU time of one call of ``fn``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events) or 1
    return [{"op": e.key, "self_ms": round(e.self_cpu_time_total / 1e3, 1),
             "share": round(e.self_cpu_time_total / total, 3), "calls": e.count}
            for e in events[:rows]]


def uptime() -> str:
    """``uptime``'s line (load averages over 1, 5 and 15 minutes), or '' without it."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (else what platform reports)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()
