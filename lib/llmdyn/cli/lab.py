"""``llmdyn lab``: the chapters in JupyterLab with the llmdyn kernel (`llmdyn.runner.lab`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from llmdyn.cli.parsers import add_command
from llmdyn.core.paths import REPO
from llmdyn.runner.lab import start_lab

EXAMPLES = [
    "llmdyn lab                      # http://127.0.0.1:8888/lab?token=... (printed below)",
    "llmdyn lab --port 9999          # another port",
    "llmdyn lab --ip 0.0.0.0         # reachable from other machines (mind the token)",
]
OVER_SSH = "over SSH: ssh -L 8888:127.0.0.1:8888 you@host, then open the printed URL on your " \
           "machine.\n"


def add_parser(sub: Any) -> None:
    """Add ``lab`` to the ``llmdyn`` command's subparsers."""
    p = add_command(sub, "lab", help="open the chapters in JupyterLab with the llmdyn kernel",
                    description="Start JupyterLab on notebooks/ with the llmdyn kernel. "
                                "It prints the URL with its token; stop it with Ctrl-C.",
                    examples=EXAMPLES, note=OVER_SSH)
    p.add_argument("--ip", default="127.0.0.1", help="address to bind (default: %(default)s)")
    p.add_argument("--port", type=int, default=8888,
                   help="first port to try; the next free one is used and printed "
                        "(default: 8888)")
    p.add_argument("--root", type=Path, default=REPO / "notebooks",
                   help="directory to open (default: the repository's notebooks/)")


def run(args: argparse.Namespace) -> int:
    """Replace this process by the JupyterLab server (`llmdyn.cli.main` prints refusals)."""
    start_lab(args.root, ip=args.ip, port=args.port)
    return 0  # reached only where os.execv is replaced (tests)
