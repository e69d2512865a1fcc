"""The llmdyn kernel encrypts its sockets however it is started, plain papermill included.

ipykernel warns "Kernel is running over TCP without encryption" unless the kernel manager
provisions CurveZMQ keys, which jupyter_client does only when asked (``transport_encryption``,
off by default). ``llmdyn book`` asks (:func:`llmdyn.runner.build.kernel_config`); papermill run
by hand builds its manager with defaults and reads nothing but the kernel spec. So the spec
names a provisioner, :class:`EncryptedProvisioner`, registered as the entry point
``llmdyn-encrypted`` of ``jupyter_client.kernel_provisioners``, which asks for encryption on
every start. :func:`use_encrypted_provisioner` writes that into the installed kernel.json
(the Makefile runs it after ``ipykernel install``).

The same provisioner forks the kernel from a preloaded process
(:mod:`llmdyn.runner.kernel_fork`) when its manager's config sets
``EncryptedProvisioner.fork_from_preloaded``, as :func:`llmdyn.runner.build.kernel_config`
does for a process that runs several chapters. Plain papermill launches plainly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Bool

from llmdyn import LlmdynError

PROVISIONER = "llmdyn-encrypted"  # the entry point's name in pyproject.toml


class EncryptedProvisioner(LocalProvisioner):
    """A local kernel whose sockets get CurveZMQ keys unless the manager says otherwise."""

    fork_from_preloaded = Bool(False, config=True, help=(
        "fork the kernel from a process that has imported torch and transformers "
        "(llmdyn.runner.kernel_fork) where its command and environment allow"))

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """Ask for encryption ("auto": where the spec declares curve) before the launch."""
        import zmq

        if zmq.has("curve") and getattr(self.parent, "transport_encryption", None) == "disabled":
            kwargs.setdefault("transport_encryption", "auto")  # the manager's default: override
        return await super().pre_launch(**kwargs)

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        """Fork the kernel from the preloaded server if asked and possible, else launch it."""
        from llmdyn.runner import kernel_fork

        env = dict(kwargs.get("env") or os.environ)
        cwd = str(kwargs.get("cwd") or Path.cwd())
        inherits = kwargs.get("stdout") is None and kwargs.get("stderr") is None
        server, argv = (kernel_fork.server_for(cmd, env, cwd)
                        if self.fork_from_preloaded and inherits else (None, []))
        if server is None:
            return await super().launch_kernel(cmd, **kwargs)
        env["JPY_PARENT_PID"] = str(server.process.pid)  # the kernel's parent: exit with it
        with open(os.devnull, "rb") as stdin:  # launch_kernel gives a pipe nobody writes
            pid = server.fork(argv, env, cwd, [stdin.fileno(), 1, 2])  # this process's streams
        self.process = kernel_fork.ForkedKernel(server, pid)
        self.pid = self.pgid = pid  # the child called setsid before fork() returned
        self.cwd = cwd
        return self.connection_info


def use_encrypted_provisioner(name: str = "llmdyn") -> Path:
    """Point the installed kernel spec ``name`` at :class:`EncryptedProvisioner`.

    Returns:
        The kernel.json that was rewritten.

    Raises:
        LlmdynError: no kernel spec of that name (run ``python -m ipykernel install --sys-prefix
            --name llmdyn`` first).
    """
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        directory = Path(KernelSpecManager().get_kernel_spec(name).resource_dir)
    except NoSuchKernel:
        raise LlmdynError(f"no Jupyter kernel named {name!r}; install it first with "
                          f"`python -m ipykernel install --sys-prefix --name {name}`") from None
    path = directory / "kernel.json"
    spec = json.loads(path.read_text())
    spec.setdefault("metadata", {})["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
    path.write_text(json.dumps(spec, indent=1) + "\n")
    return path


if __name__ == "__main__":
    print(f"kernel spec {use_encrypted_provisioner()} now encrypts its sockets")
