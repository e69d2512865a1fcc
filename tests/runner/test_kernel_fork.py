"""Kernels forked from a preloaded process behave as launched ones, and give the same numbers."""

from __future__ import annotations

import json
import os
import signal
import sys

import nbformat
import pytest

from llmdyn.runner import kernel_fork
from llmdyn.runner.build import run_chapter

PROBE = '''\
import json, os, sys
json.dump({"cwd": os.getcwd(), "marker": os.environ.get("PROBE_MARKER"),
           "leads_its_group": os.getpgid(0) == os.getpid(), "path0": sys.path[0],
           "argv": sys.argv[1:], "numpy_preloaded": "numpy" in sys.modules,
           "llmdyn_preloaded": "llmdyn" in sys.modules}, open("probe.json", "w"))
print("to stdout")
sys.exit(3)
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server of this interpreter (not the process's own), closed after the module.

    It preloads NumPy only: what it preloads does not change how it forks, and torch would
    cost the test seconds of CPU.
    """
    cwd = tmp_path_factory.mktemp("server")
    started = kernel_fork.ForkServer([], dict(os.environ), str(cwd), preload=("numpy",))
    yield started
    started.close()


def _wait(server, pid: int, timeout: float = 60) -> int:
    return kernel_fork.ForkedKernel(server, pid).wait(timeout)


def test_only_this_interpreter_running_a_module_is_forked():
    python = sys.executable
    assert kernel_fork.split_kernel_command(
        [python, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "c.json"]) == (
        ["-Xfrozen_modules=off"], "ipykernel_launcher", ["-f", "c.json"])
    assert kernel_fork.split_kernel_command([python, "-c", "print(1)"]) is None
    assert kernel_fork.split_kernel_command(["/bin/sh", "-m", "x"]) is None
    assert kernel_fork.split_kernel_command([python, "-m"]) is None


def test_the_fingerprint_is_what_preloaded_libraries_read_at_import():
    env = {"OMP_NUM_THREADS": "1", "HF_HOME": "/h", "PYTHONPATH": "lib", "LLMDYN_RESULTS": "r",
           "JPY_PARENT_PID": "7", "MPLBACKEND": "agg"}
    assert kernel_fork.fingerprint(env) == {"OMP_NUM_THREADS": "1", "HF_HOME": "/h",
                                            "PYTHONPATH": "lib"}


def test_a_forked_child_runs_as_python_dash_m_would(server, tmp_path):
    (tmp_path / "probe_module.py").write_text(PROBE)
    env = {**os.environ, "PROBE_MARKER": "here"}
    with open(tmp_path / "out.txt", "w") as out, open(os.devnull) as stdin:
        pid = server.fork(["probe_module", "-f", "x"], env, str(tmp_path),
                          [stdin.fileno(), out.fileno(), out.fileno()])
    cpu_before = server.kernel_cpu_seconds
    assert _wait(server, pid) == 3
    assert server.kernel_cpu_seconds > cpu_before  # its CPU is counted when it is reaped
    seen = json.loads((tmp_path / "probe.json").read_text())
    assert seen == {"cwd": str(tmp_path), "marker": "here", "leads_its_group": True,
                    "path0": str(tmp_path), "argv": ["-f", "x"], "numpy_preloaded": True,
                    "llmdyn_preloaded": False}
    assert (tmp_path / "out.txt").read_text() == "to stdout\n"


def test_a_killed_kernel_reports_the_signal_and_close_stops_the_rest(tmp_path):
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(600)\n")
    server = kernel_fork.ForkServer([], dict(os.environ), str(tmp_path), preload=())
    with open(os.devnull) as null:
        stdio = [null.fileno()] * 3
        killed, left = (server.fork(["sleeper"], dict(os.environ), str(tmp_path), stdio)
                        for _ in range(2))
    kernel = kernel_fork.ForkedKernel(server, killed)
    kernel.kill()
    assert kernel.wait(30) == -signal.SIGKILL
    assert kernel_fork.ForkedKernel(server, left).poll() is None
    server.close()  # the launching process is done: its kernels go with the server
    assert server.process.returncode == 0
    with pytest.raises(ProcessLookupError):
        os.kill(left, 0)


def test_a_server_that_cannot_start_leaves_the_kernel_to_start_plainly(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the kernel fork server exited")

    monkeypatch.setattr(kernel_fork, "_server", None)
    monkeypatch.setattr(kernel_fork, "ForkServer", broken)
    cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "c.json"]
    with pytest.warns(RuntimeWarning, match="starts plainly"):
        assert kernel_fork.server_for(cmd, dict(os.environ), os.getcwd()) == (None, [])


def test_kernels_start_plainly_off_linux(monkeypatch):
    monkeypatch.setattr(kernel_fork.sys, "platform", "darwin")
    cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "c.json"]
    assert kernel_fork.server_for(cmd, dict(os.environ), os.getcwd()) == (None, [])


def test_another_environment_is_not_served(server):
    env = dict(os.environ)
    assert server.serves([], env)
    assert not server.serves([], {**env, "OMP_NUM_THREADS": "7"})
    assert not server.serves(["-Xfrozen_modules=off"], env)
    assert server.serves([], {**env, "LLMDYN_RESULTS": "elsewhere"})  # read by llmdyn, afresh


def test_a_forked_kernel_gives_the_numbers_of_a_launched_one(tmp_path):
    # Seeded draws from torch and NumPy, a tiny model's forward pass, and an unseeded draw
    # (which must differ between kernels, as in two new processes).
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "llmdyn", "language": "python",
                                                           "display_name": "Python (llmdyn)"}})
    nb.cells = [nbformat.v4.new_code_cell('model = "tiny-llama"',
                                          metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(
                    "import random, sys, numpy as np, torch\n"
                    "from llmdyn.models import load_model\n"
                    "m = load_model(model, seed=0)\n"
                    "ids = m.tokenizer('The capital of France is', return_tensors='pt').input_ids\n"
                    "with torch.no_grad():\n"
                    "    logits = m.hf(ids).logits\n"
                    "torch.manual_seed(0)\n"
                    "print(torch.randn(3).tolist(), np.random.default_rng(0).normal(size=2)"
                    ".tolist(), logits.double().sum().item(), torch.get_num_threads())\n"
                    "print(random.random())")]
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "notebooks" / "99_fork.ipynb")
    printed = {}
    for fork in (True, False, True):
        out = run_chapter("99_fork", tmp_path / f"out{len(printed)}", {}, root=tmp_path,
                          cwd=tmp_path, fork=fork)
        outputs = nbformat.read(out, as_version=4).cells[-1].outputs
        printed[len(printed)] = "".join(o.text for o in outputs if o.get("name") == "stdout")
    numbers = {k: v.splitlines()[0] for k, v in printed.items()}
    assert numbers[0] == numbers[1] == numbers[2], printed
    unseeded = {v.splitlines()[1] for v in printed.values()}
    assert len(unseeded) == 3, printed
