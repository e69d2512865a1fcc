"""Model files on disk: which files define a checkpoint, and their content hashes, remembered."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock

from llmdyn import LlmdynError
from llmdyn.core.atomic import check_regular_file
from llmdyn.core.paths import env_dir
from llmdyn.core.store import apply_umask, safe_name

__all__ = ["cache_dir", "check_model_dir", "checkpoint_files", "dir_digest", "file_sha256",
           "files_sha256", "local_key", "looks_like_path", "remember", "sha256_of",
           "weight_files"]

_INDEX = "file-hashes.json"  # {resolved path: {size, mtime_ns, ctime_ns, ino, sha256}}
# Files that change what a checkpoint computes. Training logs (metrics.json) and generation
# settings are left out, so rewriting them never invalidates cached results.
_CONFIG_FILES = ("config.json",)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                    "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json")
_PICKLED = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")
NEEDS = ("a model directory must hold config.json and model.safetensors (what transformers' "
         "save_pretrained writes), or pass a .gguf file")


def cache_dir() -> Path:
    """Where converted float32 safetensors live (``$LLMDYN_CACHE`` or ``~/.cache/llmdyn``)."""
    return env_dir("LLMDYN_CACHE", Path.home() / ".cache" / "llmdyn")


def sha256_of(path: Path) -> str:
    """Hex sha256 of one file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp(path: Path) -> dict[str, int]:
    st = path.stat()
    # ctime cannot be set back by a user (touch sets mtime only), so any rewrite is noticed.
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "ino": st.st_ino}


def _read_index(index: Path) -> dict[str, Any]:
    try:
        data = json.loads(index.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):  # absent or corrupt: start again, nothing is lost but time
        return {}


def file_sha256(path: str | os.PathLike) -> str:
    """Sha256 of a file, hashed once and remembered by size, mtime, ctime and inode.

    The memo is a small JSON index under :func:`cache_dir`; a file whose stat stamp changed
    (rewritten, replaced, touched) is hashed again.
    """
    return files_sha256([path])[0]


def files_sha256(paths: list[str | os.PathLike]) -> list[str]:
    """:func:`file_sha256` of several files, with one read and at most one write of the memo.

    A checkpoint directory's files are hashed together (:func:`dir_digest`); remembering them
    one by one rewrote the whole index once per file.
    """
    index = _read_index(cache_dir() / _INDEX)
    digests, fresh = [], {}
    for path in (Path(p).resolve() for p in paths):
        stamp = _stamp(path)
        entry = index.get(str(path))
        if isinstance(entry, dict) and {k: entry.get(k) for k in stamp} == stamp:
            digests.append(entry["sha256"])
            continue
        digests.append(sha256_of(path))
        if _stamp(path) == stamp:  # changed while we read it: do not remember a torn hash
            fresh[str(path)] = {**stamp, "sha256": digests[-1]}
    if fresh:
        _remember(fresh)
    return digests


def remember(digests: Mapping[str | os.PathLike, str]) -> None:
    """Record each ``{path: sha256}`` for the file as it is now (the caller just hashed them).

    One write of the memo for all of them.
    """
    paths = {Path(p).resolve(): digest for p, digest in digests.items()}
    _remember({str(p): {**_stamp(p), "sha256": digest} for p, digest in paths.items()})


def _remember(entries: dict[str, dict[str, Any]]) -> None:
    index = cache_dir() / _INDEX
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(index) + ".lock"):
            data = _read_index(index)
            data = {k: v for k, v in data.items() if Path(k).exists()}  # forget deleted files
            _write_json(index, {**data, **entries})
    except OSError:  # a read-only cache: the hash is still right, only not remembered
        pass


def _write_json(path: Path, data: Any) -> None:
    check_regular_file(path)  # os.replace would put a file in place of a device or FIFO
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=0)
        apply_umask(tmp)  # mkstemp makes it 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def looks_like_path(spec: str) -> bool:
    """Whether a model spec that names nothing on disk was meant as a local path, not a hub id.

    A hub id is ``owner/name`` (optionally ``@revision``). A spec that starts with ``.``,
    ``/`` or ``~``, starts with ``results/``, holds a backslash or an OS separator other
    than ``/``, has more than one ``/``, ends in ``.gguf`` or ``.safetensors``, or whose
    first part is a local directory is a path: it fails at once, with no hub retries.
    """
    seps = {os.sep, os.altsep, "\\"} - {None, "/"}
    first = spec.split("/")[0]
    return (spec.startswith((".", "/", "~", "results/")) or any(s in spec for s in seps)
            or spec.count("/") > 1 or spec.endswith((".gguf", ".safetensors"))
            or ("/" in spec and Path(first).is_dir()))


def check_model_dir(directory: Path, spec: str) -> None:
    """Raise LlmdynError saying what is missing if `directory` is not a loadable checkpoint."""
    if directory.is_file():
        raise LlmdynError(f"model {spec!r}: {directory.resolve()} is a file, not a model "
                          f"directory; {NEEDS}.")
    if not directory.is_dir():
        raise LlmdynError(f"model {spec!r}: directory {directory} does not exist; {NEEDS}.")
    present = [directory / n for n in _CONFIG_FILES + TOKENIZER_FILES
               if os.path.lexists(directory / n)]
    _check_regular(present, spec, "file")  # before the loaders read them
    if not (directory / "config.json").is_file():
        raise LlmdynError(f"model {spec!r}: {directory.resolve()} has no config.json, so it is "
                          f"not a model directory; {NEEDS}.")
    if any(directory.glob("*.safetensors")) or any(directory.glob("*.safetensors.index.json")):
        weight_files(directory, spec)  # before any is opened: a FIFO would hang the reader
        return
    pickled = sorted(p.name for pattern in _PICKLED for p in directory.glob(pattern))
    if pickled:
        raise LlmdynError(
            f"model {spec!r}: {directory.resolve()} holds only pickled weights "
            f"({', '.join(pickled)}). llmdyn never unpickles weights, because loading a pickle "
            "can run arbitrary code. Where you trust the file, convert it once to safetensors: "
            "python -c \"from transformers import AutoModelForCausalLM as M; "
            f"M.from_pretrained('{directory}').save_pretrained('{directory}')\"")
    raise LlmdynError(f"model {spec!r}: {directory.resolve()} has config.json but no "
                      f"model.safetensors; {NEEDS}.")


def _index_files(directory: Path, spec: str) -> list[Path]:
    """The weight files the directory's ``*.safetensors.index.json`` name, each inside it.

    Raises:
        LlmdynError: an index that is not JSON with a ``weight_map``, or names a file outside
            the directory (transformers would read it, and the directory's hash would miss it).
    """
    named: set[Path] = set()
    root = directory.resolve()
    for index in sorted(directory.glob("*.safetensors.index.json")):
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
            names = {str(v) for v in weight_map.values()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise LlmdynError(f"model {spec!r}: {index} is not a safetensors index (JSON with a "
                              f"weight_map: {type(err).__name__}); write it again with "
                              "save_pretrained, or delete it") from None
        for name in sorted(names):
            path = (directory / name).resolve()
            if path.parent != root:
                raise LlmdynError(f"model {spec!r}: {index} names {name!r}, which is not a file "
                                  f"of {root}; a checkpoint's weights must lie in its directory "
                                  "(copy the file there and name it without a directory)")
            named.add(directory / name)
    return sorted(named)


def weight_files(directory: Path, spec: str) -> list[Path]:
    """The safetensors files loading reads: the directory's own and those its index names.

    Raises:
        LlmdynError: an index naming a file outside the directory, or a weight file that is not
            a regular file (a FIFO would hang the reader, a device never ends).
    """
    files = sorted(set(directory.glob("*.safetensors")) | set(_index_files(directory, spec)))
    _check_regular(files, spec, "weight file")
    return files


def _check_regular(paths: list[Path], spec: str, what: str) -> None:
    """Refuse a path that is not a regular file (reading a FIFO waits, a device never ends)."""
    for path in paths:
        try:
            regular = stat.S_ISREG(path.stat().st_mode)
        except OSError as err:
            raise LlmdynError(f"model {spec!r}: cannot read the {what} {path} ({err.strerror}); "
                              "restore it, or remove it and any index naming it") from None
        if not regular:
            raise LlmdynError(f"model {spec!r}: the {what} {path} is not a regular file (a FIFO, "
                              "a device or a directory); put the file save_pretrained wrote there")


def checkpoint_files(directory: Path, spec: str, *, weights: bool = True) -> list[Path]:
    """Every file loading a checkpoint reads: config, tokenizer files and (by default) weights.

    The model's identity (:func:`dir_digest`) and the workflow's inputs are made of these.
    """
    names = [directory / n for n in _CONFIG_FILES + TOKENIZER_FILES if (directory / n).is_file()]
    if weights:
        names += weight_files(directory, spec)
        names += list(directory.glob("*.safetensors.index.json"))
    return sorted(set(names))


def dir_digest(directory: Path, *, weights: bool = True) -> str:
    """Sha256 over the files that define a checkpoint: config, tokenizer and (by default) weights.

    Args:
        directory: a checkpoint directory (``config.json``, ``*.safetensors``, tokenizer files).
        weights: include the safetensors files (False for an untrained twin, which only
            depends on the config and tokenizer).

    Returns:
        Hex digest of the sorted ``name: file sha256`` pairs.
    """
    names = [p.name for p in checkpoint_files(directory, str(directory), weights=weights)]
    files = dict(zip(names, files_sha256([directory / name for name in names]), strict=True))
    text = json.dumps(files, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def local_key(directory: Path, digest: str) -> str:
    """Short readable key ``<parent>--<dir>-<digest8>``, e.g. ``run1--step100-1a2b3c4d``."""
    parts = [p for p in directory.resolve().parts[-2:] if p not in ("/", "")]
    label = safe_name("--".join(safe_name(p) for p in parts)) or "local"
    return f"{label}-{digest[:8]}"
