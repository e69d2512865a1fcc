"""`make lab`: the server starts, lists the llmdyn kernel, runs a chapter cell, and stops."""

import asyncio
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import nbformat
import pytest

from llmdyn import LlmdynError
from llmdyn.runner.lab import KERNEL, lab_command

REPO_NOTEBOOKS = lab_command.__kwdefaults__["root"]


def test_lab_command_binds_localhost_and_allows_root_only_as_root(tmp_path):
    cmd = lab_command(root=tmp_path, port=9000, as_root=False)
    assert "--ServerApp.ip=127.0.0.1" in cmd and "--ServerApp.port=9000" in cmd
    assert f"--MappingKernelManager.default_kernel_name={KERNEL}" in cmd
    assert "--allow-root" not in cmd
    assert "--allow-root" in lab_command(root=tmp_path, as_root=True)
    assert cmd[1:3] == ["-m", "jupyterlab"]


def test_lab_command_refuses_a_missing_root(tmp_path):
    with pytest.raises(LlmdynError, match="not a directory"):
        lab_command(root=tmp_path / "nope")


@pytest.mark.skipif(not (shutil.which("git") and shutil.which("make")), reason="needs git, make")
def test_make_git_filter_strips_outputs_on_add(tmp_path):
    repo = REPO_NOTEBOOKS.parent
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(repo / ".gitattributes", tmp_path / ".gitattributes")
    bin_dir = os.path.dirname(sys.executable)
    subprocess.run(["make", "-s", "-f", str(repo / "Makefile"), "git-filter", f"BIN={bin_dir}"],
                   cwd=tmp_path, check=True, capture_output=True)
    nb = nbformat.read(REPO_NOTEBOOKS / "05_depth_coupling.ipynb", as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    code.execution_count = 1
    nbformat.write(nb, tmp_path / "ch.ipynb")
    subprocess.run(["git", "add", "ch.ipynb"], cwd=tmp_path, check=True)
    staged = subprocess.run(["git", "show", ":ch.ipynb"], cwd=tmp_path, check=True,
                            capture_output=True, text=True).stdout
    kept = nbformat.reads(staged, as_version=4)
    assert [c.get("outputs") for c in kept.cells if c.cell_type == "code"][0] == []
    assert [c.id for c in kept.cells] == [c.id for c in nb.cells]  # ids survive (--keep-id)
    assert "hi" in (tmp_path / "ch.ipynb").read_text()  # the working copy keeps its outputs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(base: str, token: str, path: str, method: str = "GET", body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{base}{path}", data=data, method=method,
                                 headers={"Authorization": f"token {token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    return json.loads(text) if text else None


async def _execute(ws_url: str, token: str, code: str, timeout: float) -> str:
    """Run ``code`` through the server's kernel websocket; return its stdout (legacy protocol)."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    conn = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization":
                                                                f"token {token}"}))
    msg_id = uuid.uuid4().hex
    conn.write_message(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                   "session": uuid.uuid4().hex, "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
    out, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        raw = await asyncio.wait_for(conn.read_message(), deadline - time.monotonic())
        assert raw is not None, "kernel websocket closed"
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["header"]["msg_type"]
        if kind == "stream":
            out.append(msg["content"]["text"])
        elif kind == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            conn.close()
            return "".join(out)
    raise AssertionError(f"no reply within {timeout} s")


@pytest.fixture
def lab_server(tmp_path):
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (make setup adds it)")
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws")}
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(lab_command(port=port, port_retries=0), env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _api(base, token, "/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"server did not start:\n{(tmp_path / 'server.log').read_text()}")
                time.sleep(0.3)
        yield base, token, tmp_path / "server.log"
    finally:
        try:
            _api(base, token, "/api/shutdown", method="POST")
            proc.wait(timeout=15)
        except Exception:
            proc.terminate()
            proc.wait(timeout=10)
        log.close()


def test_lab_serves_the_kernel_and_runs_a_chapter_cell(lab_server):
    base, token, log = lab_server
    with pytest.raises(urllib.error.HTTPError, match="403"):  # token auth is on
        urllib.request.urlopen(f"{base}/api/kernelspecs", timeout=10)
    specs = _api(base, token, "/api/kernelspecs")
    assert KERNEL in specs["kernelspecs"] and specs["default"] == KERNEL

    nb = nbformat.read(REPO_NOTEBOOKS / "05_depth_coupling.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    kernel = _api(base, token, "/api/kernels", method="POST", body={"name": KERNEL})
    ws = f"ws://127.0.0.1:{base.rsplit(':', 1)[1]}/api/kernels/{kernel['id']}/channels"
    out = asyncio.run(_execute(ws, token, cell.source + "\nprint(model, k)", timeout=40))
    assert out.split() == ["smollm2-135m", "None"]  # k is resolved from the model later
    assert "without encryption" not in log.read_text()


def test_parameters_cell_is_the_first_code_cell_of_every_chapter():
    """Opened in the lab, a chapter's first code cell holds the parameters a reader edits."""
    for path in sorted(REPO_NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert "parameters" in first.metadata.get("tags", []), path.name
        if path.stem != "10_vit":  # the ViT chapter trains its own models: no `model`
            assert "model = " in first.source, path.name
        assert nb.metadata.kernelspec.name == KERNEL, path.name


def test_a_read_only_environment_starts_the_lab_with_a_note(tmp_path, capsys, monkeypatch):
    # A read-only venv stopped `llmdyn lab` with advice about --out.
    import errno

    from llmdyn.runner import lab_settings

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(lab_settings.Path, "write_text", read_only)
    path = lab_settings.install(tmp_path)
    assert not path.exists()
    assert "JupyterLab may ask whether to fetch news; answer no" in capsys.readouterr().err
    monkeypatch.undo()
    lab_settings.install(tmp_path)  # written once, a read-only environment needs no write
    monkeypatch.setattr(lab_settings.Path, "write_text", read_only)
    assert lab_settings.install(tmp_path) == path and capsys.readouterr().err == ""
