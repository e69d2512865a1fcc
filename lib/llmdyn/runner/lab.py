"""Edit the chapters interactively: JupyterLab on ``notebooks/`` with the ``llmdyn`` kernel.

``make lab`` (or ``llmdyn lab``) starts it bound to 127.0.0.1, adds ``--allow-root`` only when
running as root, and prints how to reach it over SSH; the server itself prints the URL with its
token. Outputs never reach git: ``make setup`` installs nbstripout as a git filter.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.core.paths import REPO
from llmdyn.runner import lab_settings

KERNEL = "llmdyn"


def free_port(ip: str = "127.0.0.1", port: int = 8888, tries: int = 50) -> int:
    """The first port from ``port`` on that nothing listens on at ``ip`` (0: any free one).

    Jupyter is then started on exactly this port with ``port_retries=0``, so the port printed
    (and the SSH tunnel it suggests) is the one the server has: were Jupyter to move on by
    itself, the tunnel would reach whatever holds the printed port.
    """
    if not 0 <= port < 65536:
        raise LlmdynError(f"port (--port) must be in 0..65535, got {port}")
    for candidate in ([0] if port == 0 else range(port, min(port + tries, 65536))):
        with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET) as sock:
            try:
                sock.bind((ip, candidate))
            except OSError as err:
                if err.errno == errno.EADDRINUSE:
                    continue
                raise LlmdynError(f"cannot bind {ip}:{candidate} ({err.strerror}); give "
                                  "another --ip, e.g. 127.0.0.1") from None
            return sock.getsockname()[1]
    raise LlmdynError(f"ports {port}-{port + tries - 1} on {ip} are all in use; give another "
                      "--port")


def lab_command(*, root: Path = REPO / "notebooks", ip: str = "127.0.0.1", port: int = 8888,
                port_retries: int = 0, as_root: bool | None = None) -> list[str]:
    """The command line that starts JupyterLab on ``root`` with the project's kernel.

    Args:
        root: directory the file browser opens on (the chapters).
        ip: address to bind; the default, 127.0.0.1, is reachable only from this machine (use
            an SSH tunnel from elsewhere).
        port: the port (pick it with :func:`free_port`).
        port_retries: how many following ports Jupyter may try when ``port`` is taken; 0
            (the default) makes it fail instead, so it never serves on a port not printed.
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


def start_lab(root: Path = REPO / "notebooks", ip: str = "127.0.0.1", port: int = 8888) -> None:
    """Replace this process by JupyterLab on ``root``, at the first free port from ``port``.

    It prints the port it chose and the SSH tunnel to reach it; the server prints the URL
    with its token. Returns only where ``os.execv`` is replaced (tests).

    Raises:
        LlmdynError: JupyterLab not installed, ``root`` not a directory, no free port.
    """
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        raise LlmdynError("JupyterLab is not installed; run `make setup` (or pip install "
                          "-r requirements.txt)") from None
    lab_settings.install()  # no news prompt, no update check: the lab stays offline
    chosen = free_port(ip, port)
    cmd = lab_command(root=root, ip=ip, port=chosen)
    moved = "" if chosen == port else f" (port {port} is in use)"
    print(f"JupyterLab on {root} with the {KERNEL!r} kernel at port {chosen}{moved}; open the "
          f"URL with ?token= printed below.\nOver SSH, first run on your machine: ssh -L "
          f"{chosen}:127.0.0.1:{chosen} <user>@<host>", flush=True)
    os.execv(cmd[0], cmd)  # the server takes this process: Ctrl-C and signals reach it
