"""A content digest of the files a job reads: what decides a rerun, never modification times.

Snakemake reruns a job when an input is *newer* than its output. An edit whose time is older
(clock skew, ``cp -p``, ``rsync -t``) would be missed, so the workflow gives each chapter's job
the digest of everything it reads as a parameter: a changed byte anywhere changes a parameter,
and Snakemake reruns the job whatever the times say.

Each file is hashed once per version in a process: the memo is keyed by size, mtime, ctime and
inode (ctime cannot be set back by a user, so any rewrite is seen). Files larger than
:data:`LARGE` (model weights) use :func:`llmdyn.models.files.file_sha256`, whose memo outlives
the process, so a workflow run does not read a model's gigabytes again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from llmdyn.models.files import file_sha256, sha256_of

__all__ = ["LARGE", "MISSING", "file_digest", "files_digest"]

LARGE = 8 << 20  # bytes; above this a file's hash is remembered on disk too
MISSING = "missing"  # the digest of a file that does not exist (yet)
_MEMO: dict[str, tuple[tuple[int, int, int, int], str]] = {}


def file_digest(path: str | os.PathLike) -> str:
    """Hex sha256 of one file's bytes (:data:`MISSING` if it does not exist)."""
    key = os.path.abspath(path)
    try:
        st = os.stat(key)
    except FileNotFoundError:
        return MISSING
    stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    digest = file_sha256(key) if st.st_size > LARGE else sha256_of(Path(key))
    _MEMO[key] = (stamp, digest)
    return digest


def files_digest(paths: Iterable[str | os.PathLike], root: str | os.PathLike) -> str:
    """One hex sha256 over ``(name, content digest)`` of every file in ``paths``.

    Names under ``root`` (the repository) are taken relative to it, so a moved checkout keeps
    its digests; the order of ``paths`` and repeats do not matter.
    """
    root = os.path.abspath(root)
    names = {}
    for path in paths:
        full = os.path.abspath(path)
        names[os.path.relpath(full, root) if full.startswith(root + os.sep) else str(path)] = full
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(f"{name}\0{file_digest(names[name])}\n".encode())
    return digest.hexdigest()
