"""The llmdyn kernel encrypts its sockets however it is started, plain papermill included.

ipykernel warns "Kernel is running over TCP without encryption" unless the kernel manager
provisions CurveZMQ keys, which jupyter_client does only when asked (``transport_encryption``,
off by default). ``llmdyn book`` asks (:func:`llmdyn.runner.build.kernel_config`); papermill run
by hand builds its manager with defaults and reads nothing but the kernel spec. So the spec
names a provisioner, :class:`EncryptedProvisioner`, registered as the entry point
``llmdyn-encrypted`` of ``jupyter_client.kernel_provisioners``, which asks for encryption on
every start. :func:`use_encrypted_provisioner` writes that into the installed kernel.json
(the Makefile runs it after ``ipykernel install``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from llmdyn import LlmdynError

PROVISIONER = "llmdyn-encrypted"  # the entry point's name in pyproject.toml


class EncryptedProvisioner(LocalProvisioner):
    """A local kernel whose sockets get CurveZMQ keys unless the manager says otherwise."""

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """Ask for encryption ("auto": where the spec declares curve) before the launch."""
        import zmq

        if zmq.has("curve") and getattr(self.parent, "transport_encryption", None) == "disabled":
            kwargs.setdefault("transport_encryption", "auto")  # the manager's default: override
        return await super().pre_launch(**kwargs)


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
