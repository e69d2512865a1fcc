"""``llmdyn models``, ``chapters`` and ``book``: what the book runs on, and building it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from llmdyn.cli.parsers import add_command
from llmdyn.runner import build


def add_parser(sub: Any) -> None:
    """Add ``models``, ``chapters`` and ``book`` to the ``llmdyn`` command's subparsers."""
    add_command(sub, "models", help="list the models that load offline",
                examples=["llmdyn models"])
    add_command(sub, "chapters", help="list the chapters and the paper sections they cover",
                examples=["llmdyn chapters"])
    book = add_command(
        sub, "book", help="run the chapters for a model and build the HTML book",
        examples=["llmdyn book --model gemma3-270m --out _build/gemma3-270m",
                  "llmdyn book --model ./my-checkpoint --out _build/my-checkpoint",
                  "llmdyn book --only 05_depth_coupling      # rerun one chapter of the "
                  "in-place book"])
    book.add_argument("--model", default="smollm2-135m")
    book.add_argument("--out", type=Path, default=None,
                      help="build a separate copy of the book here (default: in place)")
    book.add_argument("--only", nargs="+", default=None,
                      help="chapters to run, e.g. 05_depth_coupling")
    book.add_argument("--force", action="store_true",
                      help="let --out overwrite a non-empty directory that is not an llmdyn build")
    book.add_argument("--no-strict", action="store_true", help="do not treat warnings as errors")


def list_models() -> int:
    """Print each model that loads offline, with its description."""
    # here, not at the top: only this command needs transformers, which takes seconds to import
    from llmdyn.models.loading import PACKAGED, TINY_CONFIGS

    for name, entry in PACKAGED.items():
        print(f"{name:16s} {entry.description}")
    for name in TINY_CONFIGS:
        print(f"{name:16s} tiny random model for tests (no download)")
    return 0


def list_chapters() -> int:
    """Print each chapter's name, title and the paper sections it covers."""
    for ch in build.chapter_list():
        print(f"{ch.name:24s} {ch.title}\n{'':24s} {ch.covers}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``llmdyn models``, ``chapters`` or ``book`` from parsed arguments."""
    if args.command == "models":
        return list_models()
    if args.command == "chapters":
        return list_chapters()
    html = build.build_book(args.model, out=args.out, only=args.only,
                            strict=not args.no_strict, force=args.force)
    print(f"book built: {html / 'index.html'}")
    return 0
