"""The ``llmdyn`` command: run the book, its chapters, measurements, training and JupyterLab.

Every subcommand's options live with the module that does the work (``add_parser``); this
module only assembles them and dispatches.
"""

# llmdyn: outside the code hash (no stored array depends on this module; see core/store.py)

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmdyn import LlmdynError
from llmdyn.core.failures import os_error_message
from llmdyn.core.streams import safe_streams
from llmdyn.runner import build

# The modules that add (``add_parser``) and run (``run_cli``) their own subcommands, in the
# order of ``llmdyn --help``. The training and ViT modules import torch, seconds of CPU, so
# `main` imports only the module of the command it runs: `llmdyn workflow`, `llmdyn book` (whose
# kernels import torch themselves) and a refused option start in under a second.
COMMAND_MODULES = {
    "measure": "llmdyn.sweep.job",
    "workflow": "llmdyn.runner.workflow_cli",
    "train": "llmdyn.training.suite_cli",
    "fetch-corpus": "llmdyn.training.suite_cli",
    "train-vit": "llmdyn.vision.grids",
    "lab": "llmdyn.runner.lab",
}

EXAMPLES = {  # subcommand -> example shown in its --help (unless its parser already has one)
    "models": "llmdyn models",
    "chapters": "llmdyn chapters",
    "book": "llmdyn book --model gemma3-270m --out _build/gemma3-270m\n"
            "  llmdyn book --model ./my-checkpoint --out _build/my-checkpoint\n"
            "  llmdyn book --only 05_depth_coupling      # rerun one chapter of the in-place book",
    "measure": "llmdyn measure coupling --model smollm2-135m --out results/coupling.json",
    "measure coupling": "llmdyn measure coupling --model smollm2-135m --out results/coupling.json",
    "workflow": "llmdyn workflow --model gemma3-270m\n  llmdyn workflow --profile slurm -n",
}
TOP_EXAMPLES = """\
examples:
  llmdyn models                                   # models that load offline
  llmdyn chapters                                 # chapters and the paper sections they cover
  llmdyn book                                     # every chapter on smollm2-135m, then the HTML
  llmdyn book --model ./my-checkpoint --out _build/mine   # a local transformers checkpoint
  llmdyn lab                                      # edit the chapters in JupyterLab
  llmdyn <command> --help                         # each command's options and an example
"""


def _add_examples(sub: Any, prefix: str = "") -> None:
    """Give every subcommand's --help an example (kept where its module wrote its own)."""
    for name, p in sub.choices.items():
        key = f"{prefix}{name}"
        if key in EXAMPLES and "example" not in f"{p.description} {p.epilog}".lower():
            sep = "\n\n" if p.epilog else ""
            p.epilog = f"{p.epilog or ''}{sep}example:\n  {EXAMPLES[key]}"
            p.formatter_class = argparse.RawDescriptionHelpFormatter
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                _add_examples(action, prefix=f"{key} ")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``llmdyn`` command's parser, every subcommand with its options and an example.

    ``command``: a subcommand about to run; the parser then holds the built-in subcommands
    and that one's module only (None, or a name no module has: every subcommand).
    """
    parser = argparse.ArgumentParser(prog="llmdyn", description=__doc__, epilog=TOP_EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("models", help="list the models that load offline")
    sub.add_parser("chapters", help="list the chapters and the paper sections they cover")
    book = sub.add_parser("book", help="run the chapters for a model and build the HTML book")
    book.add_argument("--model", default="smollm2-135m")
    book.add_argument("--out", type=Path, default=None,
                      help="build a separate copy of the book here (default: in place)")
    book.add_argument("--only", nargs="+", default=None,
                      help="chapters to run, e.g. 05_depth_coupling")
    book.add_argument("--force", action="store_true",
                      help="let --out overwrite a non-empty directory that is not an llmdyn build")
    book.add_argument("--no-strict", action="store_true", help="do not treat warnings as errors")
    if command in COMMAND_MODULES:
        modules = [COMMAND_MODULES[command]]
    elif command in sub.choices:  # a built-in one: models, chapters, book
        modules = []
    else:
        modules = list(dict.fromkeys(COMMAND_MODULES.values()))  # in order, each once
    for name in modules:
        importlib.import_module(name).add_parser(sub)
    _add_examples(sub)
    return parser


def _list_models() -> int:
    # here, not at the top: only this command needs transformers, which takes seconds to import
    from llmdyn.models.loading import PACKAGED, TINY_CONFIGS

    for name, entry in PACKAGED.items():
        print(f"{name:16s} {entry.description}")
    for name in TINY_CONFIGS:
        print(f"{name:16s} tiny random model for tests (no download)")
    return 0


def _list_chapters() -> int:
    for ch in build.chapter_list():
        print(f"{ch.name:24s} {ch.title}\n{'':24s} {ch.covers}")
    return 0


def _build_book(args: argparse.Namespace) -> int:
    html = build.build_book(args.model, out=args.out, only=args.only,
                            strict=not args.no_strict, force=args.force)
    print(f"book built: {html / 'index.html'}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``llmdyn`` command: ``models``, ``book``, ``measure coupling``, ``workflow``, ….

    A refused input (`LlmdynError`) of any subcommand prints one line,
    ``llmdyn <command>: error: <message>``, on stderr and returns 2, as argparse does for a
    bad option. A refusal of the operating system (a full disk, a read-only store, a symlink
    loop) prints one line saying what to change and returns 1; other exceptions are bugs and
    keep their traceback. stdout and stderr write any character under any locale.
    """
    safe_streams()  # a print after a finished result must never fail the job (issue 31, 2)
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    commands = {"chapters": _list_chapters, "models": _list_models,
                "book": lambda: _build_book(args)}
    name = " ".join(filter(None, (args.command, getattr(args, "measurement", None))))
    try:
        if args.command in COMMAND_MODULES:
            return importlib.import_module(COMMAND_MODULES[args.command]).run_cli(args)
        return commands[args.command]()
    except LlmdynError as err:  # a refused input: one message, no traceback
        print(f"llmdyn {name}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        message = os_error_message(err)
        if message is None:
            raise
        print(f"llmdyn {name}: error: {message}", file=sys.stderr)
        return 1
