"""A write never replaces what is not a regular file (a device, a FIFO, a
socket, a directory), and an output checked first fails before any work, in one line."""

from __future__ import annotations

import os
import re
import socket
import stat

import pytest

from llmdyn import LlmdynError
from llmdyn.core.atomic import atomic_write, check_new_file, not_regular
from llmdyn.models.files import _write_json

ROOT = os.geteuid() == 0


def special_files(tmp_path):
    """A FIFO, a socket, a directory and (as root) a character device, each with its kind."""
    fifo, sock, folder = tmp_path / "fifo", tmp_path / "sock", tmp_path / "folder"
    os.mkfifo(fifo)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.close()  # the socket file stays
    folder.mkdir()
    made = {fifo: "a FIFO (named pipe)", sock: "a socket", folder: "a directory"}
    if ROOT:
        node = tmp_path / "null"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # mknod c 1 3: /dev/null's
        made[node] = "a character device"
        link = tmp_path / "link"
        link.symlink_to(node)
        made[link] = "a character device"  # a link is followed
    return made


def test_atomic_write_refuses_a_path_that_is_not_a_regular_file(tmp_path):
    # `measure coupling --out NODE` (mknod c 1 3) exited 0 and replaced the device with a file
    for path, what in special_files(tmp_path).items():
        assert not_regular(path) == what
        mode = os.lstat(path).st_mode
        message = f"output {path} is {what}, not a regular file; writing there would replace it"
        with pytest.raises(LlmdynError, match="^" + re.escape(message)):
            atomic_write(path, lambda f: f.write(b"x"))
        with pytest.raises(LlmdynError, match="not a regular file"):
            _write_json(path, {})
        assert os.lstat(path).st_mode == mode  # untouched
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    regular = tmp_path / "r.json"
    for text in (b"one", b"two"):  # a regular file is written, and replaced
        atomic_write(regular, lambda f, t=text: f.write(t))
        assert regular.read_bytes() == text
    assert not_regular(regular) is None and not_regular(tmp_path / "new") is None


def test_an_output_where_no_file_can_be_created_is_refused_before_any_work(tmp_path):
    with pytest.raises(LlmdynError, match=r"^--out /proc/llmdyn.json: cannot use /proc: no such "
                                          r"file or directory .*give another path"):
        check_new_file("/proc/llmdyn.json", "--out")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(LlmdynError, match="^--out .*fifo is a FIFO"):
        check_new_file(fifo, "--out")
    assert check_new_file(tmp_path / "a" / "b.json", "--out") == tmp_path / "a" / "b.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]  # the probe is removed
