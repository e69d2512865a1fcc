"""Training throughput of the suite's sizes as model FLOPs utilisation (`make bench`).

For each size of a suite, time optimizer updates of the real training step (GPT-NeoX forward,
backward, gradient clipping, AdamW) on the suite's batch shape, and divide the model FLOPs by
the float32 matmul throughput measured in the same process. Both run on one thread, as the
book's training jobs do (workflow/Snakefile), and in alternating rounds (a burst of 1024 × 1024
products, then a few updates), so that a machine that slows down or speeds up during the run
moves both alike; each is the median over the rounds. So MFU rises only through the updates:

- 6·N per token, N the parameters used in matrix products (all but the input embedding), the
  usual estimate (Kaplan et al., 2020);
- plus attention, 12·L·d·T per token (PaLM's MFU, Chowdhery et al., 2022, App. B).

Example:
    .venv/bin/python bench/training.py --suite default --out bench/training.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import GPTNeoXForCausalLM

from llmdyn.core.tables import markdown_table
from llmdyn.training.suite import get_suite, gpt_neox_config, matmul_params
from llmdyn.vision.grids import get_grid
from llmdyn.vision.vit import ViT, ViTShape

ROUNDS = 5  # alternating rounds of GEMM bursts and updates per size
GEMM_SECONDS = 0.5  # length of each GEMM burst


def gemm_gflops(n: int = 1024, seconds: float = 2.0) -> float:
    """Peak float32 matmul throughput of this machine at a square size (GFLOP/s)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        count += 1
    return 2 * n**3 * count / (time.perf_counter() - start) / 1e9


def seconds_per_call(update, steps: int) -> float:
    """Mean wall seconds of ``update()`` over ``steps`` calls."""
    start = time.perf_counter()
    for _ in range(steps):
        update()
    return (time.perf_counter() - start) / steps


def rounds(update, steps: int, n_rounds: int = ROUNDS) -> tuple[float, float]:
    """``(seconds per update, GFLOP/s)``: medians over rounds of a GEMM burst, then updates.

    ``steps`` updates are timed in all, split over ``n_rounds`` rounds (at least one update
    each) after one untimed warm-up update.
    """
    update()
    per_round = max(1, steps // n_rounds)
    peaks, seconds = [], []
    for _ in range(n_rounds):
        peaks.append(gemm_gflops(seconds=GEMM_SECONDS))
        seconds.append(seconds_per_call(update, per_round))
    return statistics.median(seconds), statistics.median(peaks)


def time_updates(size, suite, steps: int) -> dict:
    """Seconds per optimizer update of one size, after one warm-up update."""
    torch.manual_seed(0)
    model = GPTNeoXForCausalLM(gpt_neox_config(size, suite))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.01)
    batch = torch.randint(0, suite.vocab_size, (suite.batch_size, suite.seq_len + 1))

    def update():
        logits = model(input_ids=batch[:, :-1]).logits  # (batch, seq_len, vocab)
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    seconds, gflops = rounds(update, steps)
    n = matmul_params(model)
    attention = 12 * size.n_layers * size.d_model * suite.seq_len
    return {"size": size.name, "layers": size.n_layers, "d_model": size.d_model,
            "matmul_params": n, "s_per_update": seconds, "gemm_gflops": gflops,
            "tokens_per_s": suite.tokens_per_step / seconds,
            "flops_per_token_6n": 6 * n, "flops_per_token_palm": 6 * n + attention}


def time_vit_updates(grid, steps: int) -> dict:
    """Seconds per update of the grid's ViT (SD 0.1, Fashion-MNIST's 28×28 shape), after one.

    Model FLOPs per image: 6·N·T for the N matmul parameters applied to each of T tokens
    (patch embedding included), plus attention 12·L·d·T² (PaLM's count, per image).
    """
    torch.manual_seed(0)
    shape: ViTShape = grid.shape
    model = ViT(shape, 0.1).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    x = torch.randn(grid.batch_size, shape.channels, shape.image_size, shape.image_size)
    y = torch.randint(0, shape.n_classes, (grid.batch_size,))

    def update():
        F.cross_entropy(model(x), y, label_smoothing=0.1).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    seconds, gflops = rounds(update, steps)
    t = shape.n_tokens
    n = sum(m.weight.numel() for m in model.modules()
            if isinstance(m, torch.nn.Linear | torch.nn.Conv2d))  # matmul weights
    return {"grid": grid.name, "depth": shape.depth, "d_model": shape.d_model, "tokens": t,
            "batch_size": grid.batch_size, "s_per_update": seconds, "gemm_gflops": gflops,
            "flops_per_image": 6 * n * t + 12 * shape.depth * shape.d_model * t * t}


def vit_report(row: dict, grid) -> dict:
    """MFU of the ViT update (against the peak of its own rounds) and the grid's update time."""
    images_per_s = row["batch_size"] / row["s_per_update"]
    return {**row, "images_per_s": images_per_s,
            "mfu": row["flops_per_image"] * images_per_s / (row["gemm_gflops"] * 1e9),
            "predicted_grid_s": len(grid.runs) * grid.steps * row["s_per_update"]}


def report(rows: list[dict], suite) -> list[dict]:
    """Add the two MFUs to each row (against the peak of its own rounds), and a suite row.

    The suite's MFU is its model FLOPs over the FLOPs its update time could do at each size's
    peak.
    """
    for row in rows:
        peak = row["gemm_gflops"] * 1e9
        row["mfu_6n"] = row["flops_per_token_6n"] * row["tokens_per_s"] / peak
        row["mfu_palm"] = row["flops_per_token_palm"] * row["tokens_per_s"] / peak
    by_size = {r["size"]: r for r in rows}
    runs = [by_size[run.size.name] for run in suite.runs]
    seconds = sum(suite.steps * r["s_per_update"] for r in runs)
    capacity = sum(suite.steps * r["s_per_update"] * r["gemm_gflops"] * 1e9 for r in runs)
    flops = sum(suite.steps * suite.tokens_per_step * r["flops_per_token_6n"] for r in runs)
    return rows + [{"size": "suite", "predicted_train_s": seconds, "mfu_6n": flops / capacity}]


def _size_row(r: dict) -> dict[str, str]:
    """One row of the Performance page's table: a size, or the whole suite's prediction."""
    if r["size"] == "suite":
        return {"size": f"whole suite (predicted {r['predicted_train_s']:.0f} s of updates)",
                "blocks × d_model": "", "s per update": "", "tokens/s": "", "peak GFLOP/s": "",
                "MFU (6N)": f"{100 * r['mfu_6n']:.0f} %", "MFU (6N + attention)": ""}
    return {"size": r["size"], "blocks × d_model": f"{r['layers']} × {r['d_model']}",
            "s per update": f"{r['s_per_update']:.3f}", "tokens/s": f"{r['tokens_per_s']:.0f}",
            "peak GFLOP/s": f"{r['gemm_gflops']:.0f}", "MFU (6N)": f"{100 * r['mfu_6n']:.0f} %",
            "MFU (6N + attention)": f"{100 * r['mfu_palm']:.0f} %"}


def markdown(out: dict) -> str:
    """The Performance page's table."""
    threads = f"{out['threads']} thread" + ("s" if out["threads"] > 1 else "")
    lines = [f"Measured on {out['machine']} with {threads}, {out['when']}; load average "
             f"{out['load'][0]:.1f} at the start and {out['load'][1]:.1f} at the end. Each row: "
             f"medians of {out['rounds']} rounds, each a {GEMM_SECONDS} s burst of float32 "
             f"1024×1024 products (the peak) and then updates. Suite `{out['suite']}`: batch "
             f"{out['batch_size']} × {out['seq_len']} tokens.", "",
             markdown_table([_size_row(r) for r in out["rows"]]) if out["rows"]
             else "No size of the suite was timed."]
    vit = out.get("vit")
    if vit:
        lines += ["", f"ViT grid `{vit['grid']}` (chapter 10): depth {vit['depth']} × width "
                  f"{vit['d_model']}, {vit['tokens']} tokens, batch {vit['batch_size']}: "
                  f"{vit['s_per_update']:.3f} s per update, {vit['images_per_s']:.0f} images/s, "
                  f"peak {vit['gemm_gflops']:.0f} GFLOP/s, MFU {100 * vit['mfu']:.0f} % "
                  "(6N·T + attention); the whole grid predicted "
                  f"{vit['predicted_grid_s']:.0f} s of updates on these threads."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Time each size of the suite and write JSON and the Performance page's table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="default")
    parser.add_argument("--steps", type=int, default=10, help="timed updates per size")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1, as the book's training jobs run)")
    parser.add_argument("--vit-grid", default="default", help="ViT grid to time ('' to skip)")
    parser.add_argument("--out", type=Path, default=Path("bench/training.json"))
    parser.add_argument("--markdown", type=Path,
                        default=Path("book/performance_training_results.md"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    suite = get_suite(args.suite)
    start_load = os.getloadavg()[0]
    sizes = list(dict.fromkeys(run.size for run in suite.runs))
    timed = [time_updates(size, suite, args.steps) for size in sizes]
    vit = time_vit_updates(get_grid(args.vit_grid), args.steps) if args.vit_grid else None
    out = {"machine": platform.processor() or platform.machine(),
           "threads": torch.get_num_threads(), "rounds": ROUNDS, "suite": suite.name,
           "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "load": [start_load, os.getloadavg()[0]], "torch": torch.__version__,
           "batch_size": suite.batch_size, "seq_len": suite.seq_len,
           "rows": report(timed, suite),
           "vit": vit_report(vit, get_grid(args.vit_grid)) if vit else None}
    args.out.write_text(json.dumps(out, indent=1))
    args.markdown.write_text(markdown(out))
    print(markdown(out))


if __name__ == "__main__":
    main()
