"""The ``llmdyn`` command, the package's top layer: every argparse of llmdyn lives here.

One module per command group, each with ``add_parser(sub)`` and ``run(args)``, which turns the
parsed options into typed calls of the library: ``book`` (models, chapters, book), ``measure``
(measure coupling), ``workflow``, ``training`` (train, fetch-corpus, train-vit) and ``lab``;
``job`` is the workflow's own jobs (``python -m llmdyn.cli.job``). ``parsers`` builds a
subcommand with its examples and the options of a parameter dataclass from its fields;
``report`` turns a refusal into one line.

May import: everything; nothing imports it (``llmdyn.__main__`` and the console script call
``main``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from llmdyn.cli.report import one_line
from llmdyn.core.streams import safe_streams

DESCRIPTION = "The ``llmdyn`` command: run the book, its chapters, measurements, training and " \
              "JupyterLab."
# The module of each subcommand, in the order of ``llmdyn --help``. The training and ViT modules
# import torch, seconds of CPU, so `main` imports only the module of the command it runs (and
# ``book``'s, which is light): `llmdyn workflow`, `llmdyn book` (whose kernels import torch
# themselves) and a refused option start in under a second.
COMMAND_MODULES = {
    "models": "llmdyn.cli.book",
    "chapters": "llmdyn.cli.book",
    "book": "llmdyn.cli.book",
    "measure": "llmdyn.cli.measure",
    "workflow": "llmdyn.cli.workflow",
    "train": "llmdyn.cli.training",
    "fetch-corpus": "llmdyn.cli.training",
    "train-vit": "llmdyn.cli.training",
    "lab": "llmdyn.cli.lab",
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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``llmdyn`` command's parser, every subcommand with its options and an example.

    ``command``: a subcommand about to run; the parser then holds the book's subcommands and
    that one's module only (None, or a name no module has: every subcommand).
    """
    parser = argparse.ArgumentParser(prog="llmdyn", description=DESCRIPTION,
                                     epilog=TOP_EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    every = dict.fromkeys(COMMAND_MODULES.values())  # in order, each once
    modules = (dict.fromkeys([COMMAND_MODULES["book"], COMMAND_MODULES[command]])
               if command in COMMAND_MODULES else every)
    for name in modules:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``llmdyn`` command: ``models``, ``book``, ``measure coupling``, ``workflow``, ….

    A refused input (`LlmdynError`) of any subcommand prints one line,
    ``llmdyn <command>: error: <message>``, on stderr and returns 2, as argparse does for a
    bad option. A refusal of the operating system (a full disk, a read-only store, a symlink
    loop) prints one line saying what to change and returns 1; other exceptions are bugs and
    keep their traceback. stdout and stderr write any character under any locale.
    """
    safe_streams()  # a print after a finished result must never fail the job
    argv = sys.argv[1:] if argv is None else list(argv)
    empty = empty_argument(argv)
    if empty:
        print(f"llmdyn: error: {empty}", file=sys.stderr)
        return 2
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    name = " ".join(filter(None, (args.command, getattr(args, "measurement", None))))
    module = importlib.import_module(COMMAND_MODULES[args.command])
    return one_line(name, lambda: module.run(args))


def empty_argument(argv: Sequence[str]) -> str | None:
    """Why an empty argument is refused, naming its option (None if every argument has a value).

    ``--model "$MODEL"`` with ``MODEL`` unset passes ``''``: read as a path it is the working
    directory, read as a name it falls back to a default, and either way the run is not the one
    asked for.
    """
    for i, arg in enumerate(argv):
        option, eq, value = arg.partition("=")
        if arg.startswith("--") and eq and not value.strip():
            name = option
        elif not arg.strip():
            name = next((a.partition("=")[0] for a in reversed(argv[:i]) if a.startswith("-")),
                        f"argument {i + 1}")
        else:
            continue
        return (f"{name} is given an empty value; an empty string never means the default or the "
                f"working directory: leave {name} out for its default, or give it a value (is "
                "the shell variable that should hold it unset?)")
    return None
