"""Chapter kernels forked from a process that has already imported torch and transformers.

At test size a chapter kernel spends much of its CPU importing libraries (chapter 04 on
tiny-gemma3: 13 of its 25 CPU-s). A process that runs several chapters
(``llmdyn book``, the tests' smoke book and any-model matrix) pays most of that once: its first
kernel starts a *fork server* (``python -m llmdyn.runner.kernel_fork``), which imports
:data:`PRELOAD` and then forks one child per kernel. The child becomes the kernel as
``python -m ipykernel_launcher -f <connection file>`` would: its own session and process
group, the launcher's environment, working directory, ``sys.path``, argv and standard streams.

- **llmdyn is never preloaded**, so an edited library is read afresh by every kernel.
- **What is preloaded is fixed at import.** The server serves a launch only while the variables
  those libraries read at import (:data:`FINGERPRINT_PREFIXES`) are what it started with, and
  the interpreter and its ``-X`` options are the same; otherwise the kernel starts plainly.
- **matplotlib is not preloaded:** it reads ``MPLBACKEND`` at import, and ipykernel sets that in
  the kernel.
- **One visible difference:** transformers imports ``tqdm.auto``, which picks its bar when
  imported. In the server that is the console bar, which is also what a launched kernel falls
  back to, with a ``TqdmWarning``, when ipywidgets is missing (as here); a forked kernel prints
  no such warning. Progress bars stay off the book's pages either way.
- **Numbers do not change:** a preloaded import is the same code run earlier. The seeds of
  ``random`` and NumPy's global generator are drawn afresh in each child, as in a new process.

The protocol is one request at a time over a ``SOCK_SEQPACKET`` socket pair: ``fork`` (with the
kernel's stdin, stdout and stderr passed as file descriptors) answers the child's pid once the
child leads its own process group; ``poll`` answers its exit code or None. The server exits
when its socket closes, that is when the process that started it exits.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from llmdyn.models.architectures import ARCHITECTURES

# Imported by the server before it forks; what a chapter kernel imports that reads nothing of
# its environment at import but the variables fingerprinted below.
# transformers imports most of itself lazily, so its parts a chapter loads are named; with
# them torch.distributed.tensor and torch._dynamo. ipykernel is not preloaded: its traitlets
# read JPY_PARENT_PID at import, as class defaults. The families' modules are those their
# records mark (``Architecture.preload``: the packaged models' and the smoke runs' families).
PRELOAD = ("numpy", "scipy.stats", "torch", "safetensors.torch", "transformers",
           "transformers.modeling_utils", "transformers.conversion_mapping",
           "transformers.integrations.flash_attention", "transformers.integrations.finegrained_fp8",
           "transformers.models.auto.modeling_auto",
           *(a.module for a in ARCHITECTURES.values() if a.preload))
FINGERPRINT_PREFIXES = ("PYTHON", "LANG", "LC_", "HOME", "XDG_", "TMPDIR", "PATH", "LD_",
                        "HF_", "HUGGINGFACE", "TRANSFORMERS", "TOKENIZERS", "SAFETENSORS",
                        "TORCH", "PYTORCH", "CUDA", "CUBLAS", "NVIDIA", "OMP_", "MKL_", "KMP_",
                        "GOMP_", "OPENBLAS", "NUMEXPR", "NPY_", "SCIPY", "USE_", "JUPYTER",
                        "IPYTHON", "ZMQ")
_MESSAGE_BYTES = 1 << 20


def fingerprint(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` that the preloaded libraries read at import."""
    return {k: v for k, v in env.items() if k.startswith(FINGERPRINT_PREFIXES)}


def split_kernel_command(cmd: list[str]) -> tuple[list[str], str, list[str]] | None:
    """``[python, *-X options, -m, module, *args]`` as (options, module, args); None otherwise.

    Only this interpreter qualifies: the server is this interpreter with those options.
    """
    if len(cmd) < 3 or not _same_file(cmd[0], sys.executable):
        return None
    options = []
    for i, arg in enumerate(cmd[1:], start=1):
        if arg == "-m" and i + 1 < len(cmd):
            return options, cmd[i + 1], cmd[i + 2:]
        if not arg.startswith("-X"):
            return None
        options.append(arg)
    return None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class ForkServer:
    """The client of one fork server: starts it, asks it for kernels, polls their exit codes."""

    def __init__(self, options: list[str], env: dict[str, str], cwd: str,
                 preload: tuple[str, ...] = PRELOAD):
        self.options, self.fingerprint = list(options), fingerprint(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, *options, "-m", __name__, str(theirs.fileno()), *preload],
            pass_fds=[theirs.fileno()], env=env, cwd=cwd, stdin=subprocess.DEVNULL)
        theirs.close()
        self._socket, self._lock = ours, threading.Lock()
        self.kernel_cpu_seconds = 0.0  # of the kernels it has reaped (not in our rusage)
        if self._receive().get("ready") is not True:  # blocks until the imports are done
            raise RuntimeError("the kernel fork server did not start")

    def serves(self, options: list[str], env: dict[str, str]) -> bool:
        """Whether a kernel of these options and environment may be forked from this server."""
        return (self.process.poll() is None and options == self.options
                and fingerprint(env) == self.fingerprint)

    def fork(self, argv: list[str], env: dict[str, str], cwd: str, stdio: list[int]) -> int:
        """Fork a kernel running ``python -m argv[0] *argv[1:]``; its pid (and process group)."""
        return self._ask({"op": "fork", "argv": argv, "env": env, "cwd": cwd}, stdio)["pid"]

    def poll(self, pid: int) -> int | None:
        """The exit code of kernel ``pid`` (negative: killed by that signal), or None if alive."""
        reply = self._ask({"op": "poll", "pid": pid})
        self.kernel_cpu_seconds += reply.get("cpu_s", 0.0)
        return reply["code"]

    def close(self, timeout: float = 60) -> None:
        """Stop the server: it stops the kernels still running and reaps them, then exits.

        Reaping the server here (not leaving it to init) keeps its CPU, and its kernels', in
        this process's ``RUSAGE_CHILDREN``, so that `/usr/bin/time` and Snakemake count them.
        """
        self._socket.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _ask(self, request: dict, fds: list[int] | None = None) -> dict:
        with self._lock:
            if fds:
                socket.send_fds(self._socket, [json.dumps(request).encode()], fds)
            else:
                self._socket.send(json.dumps(request).encode())
            return self._receive()

    def _receive(self) -> dict:
        data = self._socket.recv(_MESSAGE_BYTES)
        if not data:
            raise RuntimeError("the kernel fork server exited")
        return json.loads(data)


class ForkedKernel:
    """The part of ``subprocess.Popen`` that jupyter_client uses, for a forked kernel."""

    stdin = stdout = stderr = None

    def __init__(self, server: ForkServer, pid: int):
        self._server, self.pid, self.returncode = server, pid, None

    def poll(self) -> int | None:
        """The exit code, or None while the kernel runs."""
        if self.returncode is None:
            self.returncode = self._server.poll(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The exit code, once the kernel has exited (TimeoutExpired after ``timeout`` s)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        """Signal the kernel, unless it has been reaped."""
        if self.returncode is None:  # unreaped until polled, so the pid is still this kernel
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)


_server: ForkServer | None = None
_server_lock = threading.Lock()


def kernel_cpu_seconds() -> float:
    """CPU seconds of the kernels this process's fork server has reaped so far."""
    return 0.0 if _server is None else _server.kernel_cpu_seconds


def _close_server() -> None:
    if _server is not None:
        _server.close()


def server_for(cmd: list[str], env: dict[str, str],
               cwd: str) -> tuple[ForkServer | None, list[str]]:
    """This process's fork server for kernel command ``cmd``, and the argv to fork.

    (None, []) where the command or environment does not match it, or off Linux: that kernel
    starts plainly. The server starts with the first kernel, in that kernel's environment.
    """
    global _server
    split = split_kernel_command(cmd)
    if split is None or not sys.platform.startswith("linux"):
        return None, []  # elsewhere: forking after torch's import is not safe on macOS
    options, module, args = split
    with _server_lock:
        if _server is None or _server.process.poll() is not None:
            try:
                started = ForkServer(options, env, cwd)
            except (OSError, RuntimeError) as err:  # the kernel can still start plainly
                import warnings

                warnings.warn(f"the kernel fork server did not start ({err}); this kernel "
                              "starts plainly", RuntimeWarning, stacklevel=2)
                return None, []
            if _server is None:
                import atexit

                atexit.register(_close_server)
            _server = started
        if not _server.serves(options, env):
            return None, []
        return _server, [module, *args]


# --- the server side: runs in `python -m llmdyn.runner.kernel_fork FD` ---------------------


def serve(fd: int, preload: Sequence[str]) -> None:
    """Import ``preload``, then answer requests on socket ``fd`` until it closes."""
    import importlib

    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 (the kernel imports it itself, and reports the error)
            pass
    sock = socket.socket(fileno=fd)
    kernels: dict[int, int | None] = {}  # pid -> exit code once reaped
    sock.send(json.dumps({"ready": True}).encode())
    while True:
        data, fds, _, _ = socket.recv_fds(sock, _MESSAGE_BYTES, 3)
        if not data:
            break
        request = json.loads(data)
        if request["op"] == "fork":
            reply = {"pid": _fork(request, fds, sock)}
            kernels[reply["pid"]] = None
        else:
            reply = _reap(request["pid"], kernels)
        for descriptor in fds:
            os.close(descriptor)
        sock.send(json.dumps(reply).encode())
    _stop(kernels)


def _reap(pid: int, kernels: dict[int, int | None], block: bool = False) -> dict:
    """``{"code": exit code or None}``, and the kernel's CPU seconds when it is reaped now."""
    if kernels.get(pid) is not None or pid not in kernels:
        return {"code": kernels.get(pid, -1)}
    done, status, usage = os.wait4(pid, 0 if block else os.WNOHANG)
    if done == 0:
        return {"code": None}
    kernels[pid] = os.waitstatus_to_exitcode(status)
    return {"code": kernels[pid], "cpu_s": usage.ru_utime + usage.ru_stime}


def _stop(kernels: dict[int, int | None]) -> None:
    """The launching process has gone: stop its kernels, as plain launches die with it."""
    for signum in (signal.SIGTERM, signal.SIGKILL):  # a kernel has 5 s to go after SIGTERM
        alive = [p for p, code in kernels.items() if code is None]
        for pid in alive:
            try:
                os.killpg(pid, signum)
            except OSError:
                pass
        deadline = time.monotonic() + 5
        while any(_reap(p, kernels)["code"] is None for p in alive) and \
                time.monotonic() < deadline:
            time.sleep(0.05)


def _fork(request: dict, stdio: list[int], sock: socket.socket) -> int:
    """Fork the kernel; return once it leads its own session (so its pgid is its pid)."""
    ready_r, ready_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the kernel
        code = 1
        try:
            os.close(ready_r)
            sock.close()
            os.setsid()
            os.close(ready_w)
            code = _become_kernel(request, stdio)
        except BaseException:  # noqa: BLE001 (a child must never return into the server)
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(ready_w)
    os.read(ready_r, 1)  # EOF once the child has called setsid (or died)
    os.close(ready_r)
    return pid


def _become_kernel(request: dict, stdio: list[int]) -> int:
    """In the child: take the launcher's streams, directory, environment and argv; run it."""
    import atexit
    import random
    import runpy

    for target, descriptor in enumerate(stdio):
        os.dup2(descriptor, target)
        os.close(descriptor)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]  # `python -m` puts the working directory first
    module, *args = request["argv"]
    sys.argv = [module, *args]
    for name in [n for n in sys.modules if n == "llmdyn" or n.startswith("llmdyn.")]:
        del sys.modules[name]  # read afresh: the server imported the package to run
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    return code


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2:])
