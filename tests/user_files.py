"""The tests' own results and cache roots, and a check that the user's are left as they were.

`make test` runs on a checkout someone uses: its ``results/`` and the llmdyn cache
(``$LLMDYN_CACHE`` or ``~/.cache/llmdyn``) hold their book's runs and converted models. The test
session points ``LLMDYN_RESULTS`` and ``LLMDYN_CACHE`` at directories of its own before any
fixture runs (tests/conftest.py, ``pytest_configure``), and compares the user's two directories
before and after the session.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# What the session's cache may take from the user's, as links (read, never written): files that
# come from the network or take minutes to make. The cache's index, locks and logs are the
# session's own.
LINKED = {"corpus": "*.tgz", "gguf": "*.gguf", "models": "*-*[0-9a-f]"}
SESSION_ENV = "LLMDYN_TEST_USER_CACHE"  # set by the session: the user's cache, as found before


def user_cache() -> Path:
    """The user's llmdyn cache as the library would find it (the session's value says it)."""
    value = os.environ.get(SESSION_ENV) or os.environ.get("LLMDYN_CACHE")
    return Path(value) if value and value.strip() else Path.home() / ".cache" / "llmdyn"


def session_cache(user: Path) -> Path:
    """A fresh cache for the session, with links to ``user``'s downloads and conversions.

    A converted model linked here is verified on load like any other; were it found altered,
    the conversion is redone in the session's cache (the link is replaced, its target is not
    written: see ``llmdyn.models.convert``).
    """
    cache = Path(tempfile.mkdtemp(prefix="llmdyn-test-cache-"))
    for folder, pattern in LINKED.items():
        (cache / folder).mkdir()
        for source in sorted((user / folder).glob(pattern)) if (user / folder).is_dir() else []:
            if not source.name.startswith(".") and not source.name.endswith((".lock", ".log")):
                (cache / folder / source.name).symlink_to(source)
    return cache


def remove(path: Path) -> None:
    """Remove a session directory (its links only, never what they point to)."""
    shutil.rmtree(path, ignore_errors=True)


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and link under ``root`` (not followed): relative path -> (size, mtime_ns)."""
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*files, *dirs]:
            path = Path(folder) / name
            try:
                st = path.lstat()
            except FileNotFoundError:  # removed while walking
                continue
            if not path.is_dir() or path.is_symlink():
                found[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return found


def changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """What differs between two snapshots: ``added x``, ``changed y``, ``removed z``."""
    out = [f"added {p}" for p in sorted(set(after) - set(before))]
    out += [f"changed {p}" for p in sorted(set(after) & set(before)) if after[p] != before[p]]
    return out + [f"removed {p}" for p in sorted(set(before) - set(after))]


def other_llmdyn_processes(inside: Path | None = None) -> list[int]:
    """Live llmdyn or Snakemake processes that this session did not start (Linux; [] elsewhere).

    ``inside``: only those whose working directory lies under it. Such a process (a book build
    beside the tests) may write the user's files itself, so a change is then not the tests'.
    """
    ours = os.getpid()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            if b"llmdyn" not in command and b"snakemake" not in command:
                continue
            if inside is not None and not Path(os.readlink(entry / "cwd")).is_relative_to(inside):
                continue
            if not _descends_from(int(entry.name), ours):
                found.append(int(entry.name))
        except OSError:  # gone, or another user's
            continue
    return found


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the command's ')'
    return False
