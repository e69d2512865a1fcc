"""Convert a verified GGUF once to float32 safetensors, under a lock, checked on every load."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from filelock import FileLock

from llmdyn import LlmdynError
from llmdyn.core.failures import os_error_message
from llmdyn.core.store import apply_umask, apply_umask_tree
from llmdyn.models.files import cache_dir, file_sha256, files_sha256, remember, sha256_of

__all__ = ["MANIFEST", "cache_error", "conversion_log", "converted", "verify_converted"]

log = logging.getLogger(__name__)
MANIFEST = "llmdyn-converted.json"  # {gguf_sha256, files: {name: sha256}}: written last
_STALE_S = 3600  # a temp directory untouched this long belongs to a dead conversion


def verify_converted(out: Path, gguf_sha256: str) -> str | None:
    """Why the converted directory `out` cannot be trusted, or None if it can.

    Trusted means: a manifest written by a finished conversion of this GGUF, and every file it
    lists has the recorded sha256 (hashed once per file version, see ``file_sha256``).
    """
    try:
        manifest = json.loads((out / MANIFEST).read_text())
        files = manifest["files"]
    except FileNotFoundError:
        return "no conversion manifest (not converted, or by an older llmdyn)"
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"unreadable conversion manifest ({err})"
    if manifest.get("gguf_sha256") != gguf_sha256:
        return "converted from another GGUF"
    if "model.safetensors" not in files:
        return "manifest lists no model.safetensors"
    missing = [name for name in files if not (out / name).is_file()]
    if missing:
        return f"{missing[0]} is missing"
    digests = files_sha256([out / name for name in files])  # one read of the hash memo
    for (name, expected), digest in zip(files.items(), digests, strict=True):
        if digest != expected:
            return f"{name} has changed since conversion (sha256 differs)"
    return None


def converted(label: str, gguf_sha256: str, gguf: Callable[[], Path]) -> tuple[Path, str]:
    """The float32 safetensors directory converted from `gguf`, converting it if needed.

    A missing, partial or altered
    conversion is redone (with a log message); two processes converting at once wait for
    each other on a file lock; the finished directory replaces any leftover atomically, and
    temporary directories are removed on failure.

    Args:
        label: readable name for the directory (e.g. ``"smollm2-135m"``).
        gguf_sha256: the GGUF's sha256; names the directory and is recorded in the manifest.
        gguf: returns the path of the verified GGUF; called only when a conversion is needed.

    Returns:
        The directory and the sha256 of its ``model.safetensors``.
    """
    out = cache_dir() / "models" / f"{label}-{gguf_sha256[:12]}"
    if verify_converted(out, gguf_sha256) is None:
        return out, _weights_sha(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(out) + ".lock"):
            why = verify_converted(out, gguf_sha256)  # another process may have just finished
            if why is not None:
                if out.exists():
                    log.warning("llmdyn: reconverting %s: %s", out, why)
                _sweep(out)
                _convert_into(out, gguf(), gguf_sha256)
    except OSError as err:  # a read-only HOME, a full disk: say where the cache can go
        raise cache_error(err) from None
    return out, _weights_sha(out)


def cache_error(err: OSError) -> LlmdynError:
    """The converted-model cache cannot be written: one sentence naming LLMDYN_CACHE."""
    why = err.strerror or type(err).__name__
    return LlmdynError(f"cannot write the converted-model cache {cache_dir()} ({why}: "
                       f"{err.filename or ''}); set LLMDYN_CACHE to a writable directory, e.g. "
                       "LLMDYN_CACHE=/tmp/llmdyn-cache (a packaged model is converted there once)")


def _weights_sha(out: Path) -> str:
    return json.loads((out / MANIFEST).read_text())["files"]["model.safetensors"]


def _sweep(out: Path) -> None:
    """Remove temp and trash directories of `out` left by killed conversions (lock held)."""
    for old in out.parent.glob(f".{out.name}.*"):
        if old.is_dir() and (old.name.endswith(".trash") or
                             time.time() - old.stat().st_mtime > _STALE_S or
                             not _owner_alive(old)):
            shutil.rmtree(old, ignore_errors=True)


def _owner_alive(tmp: Path) -> bool:
    # Temp names are .<out>.<pid>.<random>.tmp; under the lock no live process of ours is
    # converting, but a process on another machine sharing the cache might be.
    try:
        pid = int(tmp.name.split(".")[-3])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return pid != os.getpid()


def conversion_log(out: Path) -> Path:
    """The file that holds what the conversion into `out` printed (beside `out`)."""
    return out.with_name(f"{out.name}.convert.log")


@contextmanager
def _quiet(log_path: Path) -> Iterator[None]:
    """Send what a conversion prints to `log_path`, so that a chapter shows none of it.

    Covers stdout, stderr (tqdm bars, warnings) and transformers' log records, whose own handler
    holds the original stderr: the logger's handlers are swapped for one on the file meanwhile.
    """
    logger = logging.getLogger("transformers")
    saved = logger.handlers[:], logger.propagate
    with open(log_path, "w", encoding="utf-8") as fh, redirect_stdout(fh), redirect_stderr(fh):
        logger.handlers, logger.propagate = [logging.StreamHandler(fh)], False
        try:
            yield
        finally:
            logger.handlers, logger.propagate = saved


def _convert_into(out: Path, gguf: Path, gguf_sha256: str) -> None:
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.{os.getpid()}.",
                                suffix=".tmp"))
    apply_umask(tmp, directory=True)  # mkdtemp makes it 0700
    try:
        try:
            with _quiet(conversion_log(out)):
                _save_converted(gguf, tmp)
        except (ValueError, EOFError, OSError, IndexError) as err:  # gguf's reader, on a cut file
            if isinstance(err, OSError) and os_error_message(err) is not None:
                raise cache_error(err) from None  # a full or read-only cache, not a bad GGUF
            raise LlmdynError(f"{gguf} cannot be read as a GGUF file ({type(err).__name__}: "
                              f"{err}); it is truncated or not a GGUF file: download or copy it "
                              "again (the conversion's log: "
                              f"{conversion_log(out)})") from None
        log.info("llmdyn: converted %s to float32 safetensors in %s (log: %s)", gguf.name, out,
                 conversion_log(out))
        files = _write_manifest(tmp, gguf_sha256)
        apply_umask_tree(tmp)  # save_pretrained's safetensors are 0600: follow the umask
        _swap(tmp, out)
        remember({out / name: digest for name, digest in files.items()})  # not hashed again
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after a successful swap


def _save_converted(gguf: Path, tmp: Path) -> None:
    """Dequantise `gguf` to float32 and write it with its tokenizer into directory `tmp`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # transformers dequantises GGUF to float32 exactly; drop the quantizer so that
    # save_pretrained writes plain float32 safetensors.
    with one_gguf_parse():
        hf = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                  dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    hf.hf_quantizer = None
    if hasattr(hf.config, "quantization_config"):
        del hf.config.quantization_config
    hf.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)


@contextmanager
def one_gguf_parse() -> Iterator[None]:
    """Within the block, a GGUF is parsed once and its tensor-name map built once.

    transformers opens a GGUF three times for one model (its config, weights and tokenizer),
    and each ``gguf.GGUFReader`` parses every metadata field entry by entry: about 13 CPU-s a
    time for Gemma-3's 262k-entry vocabulary. It then builds the same
    ``gguf.get_tensor_name_map(arch, n_blocks)`` once per submodule of the model, several
    hundred times (~5 CPU-s). Both are read-only once made (the reader maps the file read-only),
    so one of each serves every call; the converted files are the same bytes.
    """
    import gguf

    saved = {"GGUFReader": gguf.GGUFReader, "get_tensor_name_map": gguf.get_tensor_name_map}
    made: dict[tuple, Any] = {}

    def once(name: str) -> Callable[..., Any]:
        def shared(*args: Any, **kwargs: Any) -> Any:
            paths = (os.fspath(a) if isinstance(a, os.PathLike) else a for a in args)
            key = (name, *paths, *sorted(kwargs.items()))
            if key not in made:
                made[key] = saved[name](*args, **kwargs)
            return made[key]
        return shared

    for name in saved:  # transformers imports both from gguf inside each call
        setattr(gguf, name, once(name))
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(gguf, name, original)


def _write_manifest(tmp: Path, gguf_sha256: str) -> dict[str, str]:
    files = {p.name: sha256_of(p) for p in sorted(tmp.iterdir()) if p.is_file()}
    manifest: dict[str, Any] = {"gguf_sha256": gguf_sha256, "files": files}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return files


def _swap(tmp: Path, out: Path) -> None:
    """Put directory `tmp` at `out`, replacing a leftover `out` (rename is atomic)."""
    if out.exists():
        trash = out.with_name(f".{out.name}.{os.getpid()}.trash")
        os.replace(out, trash)  # a reader sees either the old or the new directory's files
        os.replace(tmp, out)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, out)


def checked_gguf(path: Path, expected: str | None, fix: str) -> str:
    """Sha256 of the GGUF at `path`, checked against `expected` when one is pinned."""
    if not path.is_file():
        raise LlmdynError(f"GGUF file {path} is missing; {fix}.")
    digest = file_sha256(path)
    if expected is not None and digest != expected:
        raise LlmdynError(f"GGUF at {path} has sha256 {digest}, expected {expected}: not the "
                          f"pinned release; {fix}.")
    return digest
