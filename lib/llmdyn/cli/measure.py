"""``llmdyn measure coupling``: one model's mean depth coupling into one result file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from llmdyn.cli.parsers import add_command, add_options, from_options
from llmdyn.core.checks import torch_device
from llmdyn.sweep import job
from llmdyn.sweep.job import MeasureParams

EXAMPLE = "llmdyn measure coupling --model smollm2-135m --out results/coupling.json"


def add_parser(sub: Any) -> None:
    """Add ``measure coupling`` (its options: `MeasureParams`' fields) to the subparsers."""
    measure = add_command(sub, "measure", help="standalone measurement jobs (one model, one file)",
                          examples=[EXAMPLE])
    kinds = measure.add_subparsers(dest="measurement", required=True)
    p = add_command(kinds, "coupling", help="mean depth coupling over the leaderboard prompts",
                    description=job.__doc__, examples=[EXAMPLE])
    p.add_argument("--model", required=True, help="model name, local path or hub id")
    p.add_argument("--out", required=True, type=Path, help="result file to write (JSON)")
    add_options(p, MeasureParams)  # --k, --n-per-task, --tasks, --seed, --max-chars
    p.add_argument("--device", default="cpu", help="torch device, e.g. cuda")
    p.add_argument("--no-cache", action="store_true", help="do not keep per-prompt results")


def run(args: argparse.Namespace) -> int:
    """Run ``llmdyn measure coupling`` from parsed arguments (inputs checked before any work)."""
    torch_device(args.device, "--device")
    job.check_out(args.out, "--out")
    params = from_options(MeasureParams, args)
    result = job.measure_coupling(args.model, params, device=args.device,
                                  cache=not args.no_cache)
    agg = result["aggregate"]
    print(f"{args.model}: m̃ = {agg['miscoupling']:.4f}, diagonal share = "
          f"{agg['diagonal_share']:.4f} over {len(result['prompts'])} prompts -> {args.out}",
          flush=True)
    # Last, after every print: nothing that fails after it can make the workflow delete a
    # finished result.
    job.write_result(result, args.out)
    return 0
