"""Edit the chapters interactively: JupyterLab on ``notebooks/`` with the ``llmdyn`` kernel.

``make lab`` (or ``llmdyn lab``) starts it bound to 127.0.0.1, adds ``--allow-root`` only when
running as root, and prints how to reach it over SSH; the server itself prints the URL with its
token. Outputs never reach git: ``make setup`` installs nbstripout as a git filter.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from llmdyn import LlmdynError
from llmdyn.book import lab_settings

REPO = Path(__file__).resolve().parents[3]  # lib/llmdyn/book/lab.py -> repository root
KERNEL = "llmdyn"
EXAMPLE = """\
examples:
  llmdyn lab                      # http://127.0.0.1:8888/lab?token=... (printed below)
  llmdyn lab --port 9999          # another port
  llmdyn lab --ip 0.0.0.0         # reachable from other machines (mind the token)
over SSH: ssh -L 8888:127.0.0.1:8888 you@host, then open the printed URL on your machine.
"""


def lab_command(*, root: Path = REPO / "notebooks", ip: str = "127.0.0.1", port: int = 8888,
                port_retries: int = 50, as_root: bool | None = None) -> list[str]:
    """The command line that starts JupyterLab on ``root`` with the project's kernel.

    Args:
        root: directory the file browser opens on (the chapters).
        ip: address to bind; the default, 127.0.0.1, is reachable only from this machine (use
            an SSH tunnel from elsewhere).
        port: first port to try.
        port_retries: how many following ports to try when ``port`` is taken (0: fail instead).
        as_root: add ``--allow-root`` (Jupyter refuses to run as root without it); None
            decides from the effective user id.

    Returns:
        The argv list, starting with this interpreter (the project's venv).
    """
    if not Path(root).is_dir():
        raise LlmdynError(f"root (--root) {root} is not a directory; pass the notebooks/ "
                          "folder")
    if not 0 <= port < 65536:
        raise LlmdynError(f"port (--port) must be in 0..65535, got {port}")
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    cmd = [sys.executable, "-m", "jupyterlab",
           f"--ServerApp.root_dir={Path(root).resolve()}",
           f"--ServerApp.ip={ip}", f"--ServerApp.port={port}",
           f"--ServerApp.port_retries={port_retries}",
           "--ServerApp.open_browser=False",
           f"--MappingKernelManager.default_kernel_name={KERNEL}"]
    import zmq

    if zmq.has("curve"):
        # Encrypt the server-kernel sockets (CurveZMQ) when the kernel supports it, which
        # also ends ipykernel's "running over TCP without encryption" warning.
        cmd.append("--KernelManager.transport_encryption=auto")
    if as_root:
        cmd.append("--allow-root")
    return cmd


def add_parser(sub: Any) -> None:
    """Add ``lab`` to the ``llmdyn`` command's subparsers."""
    p = sub.add_parser("lab", help="open the chapters in JupyterLab with the llmdyn kernel",
                       description="Start JupyterLab on notebooks/ with the llmdyn kernel. "
                                   "It prints the URL with its token; stop it with Ctrl-C.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ip", default="127.0.0.1", help="address to bind (default: %(default)s)")
    p.add_argument("--port", type=int, default=8888, help="first port to try (default: 8888)")
    p.add_argument("--root", type=Path, default=REPO / "notebooks",
                   help="directory to open (default: the repository's notebooks/)")


def run_cli(args: argparse.Namespace) -> int:
    """Replace this process by the JupyterLab server (`llmdyn.cli.main` prints refusals)."""
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        raise LlmdynError("JupyterLab is not installed; run `make setup` (or pip install "
                          "-r requirements.txt)") from None
    lab_settings.install()  # no news prompt, no update check: the lab stays offline
    cmd = lab_command(root=args.root, ip=args.ip, port=args.port)
    print(f"JupyterLab on {args.root} with the {KERNEL!r} kernel; open the URL with ?token= "
          f"printed below.\nOver SSH, first run on your machine: ssh -L {args.port}:127.0.0.1:"
          f"{args.port} <user>@<host>", flush=True)
    os.execv(cmd[0], cmd)  # the server takes this process: Ctrl-C and signals reach it
    return 0  # not reached
