"""Plain papermill on the llmdyn kernel spec encrypts the kernel's sockets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from llmdyn.runner.kernel import PROVISIONER

WARNING = "Kernel is running over TCP without encryption"


def _kernel(root: Path, name: str, provisioner: bool) -> None:
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": name, "language": "python",
            "metadata": {"supported_encryption": ["curve"]}}
    if provisioner:
        spec["metadata"]["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
    (root / "kernels" / name).mkdir(parents=True)
    (root / "kernels" / name / "kernel.json").write_text(json.dumps(spec))


def _entry_point(site: Path) -> None:
    """Register the provisioner's entry point as `pip install -e .` does, in a temp dir."""
    dist = site / "llmdyn_kernel_test-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: llmdyn-kernel-test\n"
                                   "Version: 0.0\n")
    (dist / "entry_points.txt").write_text(
        f"[jupyter_client.kernel_provisioners]\n{PROVISIONER} = "
        "llmdyn.runner.kernel:EncryptedProvisioner\n")


@pytest.mark.slow
def test_plain_papermill_warns_without_the_provisioner_and_not_with_it(tmp_path):
    _kernel(tmp_path / "jupyter", "plain", provisioner=False)
    _kernel(tmp_path / "jupyter", "encrypted", provisioner=True)
    _entry_point(tmp_path / "site")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, tmp_path / "in.ipynb")
    env = {**os.environ, "JUPYTER_PATH": str(tmp_path / "jupyter"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"),
                                          os.environ.get("PYTHONPATH", "")])}
    stderr = {}
    for name in ("plain", "encrypted"):
        done = subprocess.run([sys.executable, "-m", "papermill", "in.ipynb", f"{name}.ipynb",
                               "-k", name], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        stderr[name] = done.stderr
    assert WARNING in stderr["plain"]  # the test can see the warning where it is due
    assert WARNING not in stderr["encrypted"]
