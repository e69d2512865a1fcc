"""Results cache: arrays per model, measurement, parameters and item, with provenance sidecars."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from llmdyn import LlmdynError
from llmdyn.core.atomic import (  # re-exported: callers import them from here
    apply_umask,
    apply_umask_tree,
    atomic_write,
    safe_name,
    temp_prefix,
    umask,
    writer_alive,
    writer_state,
)
from llmdyn.core.checks import all_finite
from llmdyn.core.failures import os_error_message
from llmdyn.core.paths import results_root
from llmdyn.core.result_code import code_hash, computing_module, source_hash

__all__ = ["ResultStore", "apply_umask", "apply_umask_tree", "atomic_write", "canonical_params",
           "code_hash", "content_hash", "params_hash", "safe_name", "source_hash", "temp_prefix",
           "umask", "writer_alive", "writer_state"]

Arrays = dict[str, np.ndarray]
_MEASUREMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_VERSIONED = ("numpy", "torch", "transformers", "nnsight", "llmdyn")
_FORMAT = 2  # bump when the on-disk layout or sidecar schema changes
# A temp file of a writer on another machine (or of unknown naming) is judged by age alone;
# hours, not minutes, so that clock skew between that machine and the disk cannot make a live
# writer's file look dead. A writer on this machine is judged by its pid alone.
_STALE_TMP_S = 6 * 3600
def content_hash(arrays: Mapping[str, np.ndarray]) -> str:
    """Sha256 over the names, dtypes, shapes and bytes of `arrays` (sorted by name)."""
    digest = hashlib.sha256()
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        digest.update(f"{key}\0{a.dtype.str}\0{a.shape}\0".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def _jsonable(value: Any, arg: str, where: str) -> Any:
    """Convert `value` to plain JSON types (tuples to lists, numpy scalars to Python), or raise."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not np.isfinite(value):
            raise LlmdynError(f"{arg}{where} is {value}; JSON cannot hold it, use a finite number")
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, arg, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise LlmdynError(f"{arg}{where} has key {key!r} of type {type(key).__name__}; "
                                  "use string keys")
            out[key] = _jsonable(v, arg, f"{where}[{key!r}]")
        return out
    raise LlmdynError(f"{arg}{where} is a {type(value).__name__} ({value!r:.60}), which is not "
                      "JSON-serialisable; use str, int, float, bool, None, or lists/dicts of these")


def canonical_params(params: Mapping[str, Any], arg: str = "params") -> dict[str, Any]:
    """Return `params` as plain JSON types; raise LlmdynError naming the first bad key."""
    if not isinstance(params, Mapping):
        raise LlmdynError(f"{arg} must be a dict, got {type(params).__name__}")
    return _jsonable(params, arg, "")


def params_hash(params: Mapping[str, Any]) -> str:
    """First 12 hex digits of sha256 of the canonical JSON (sorted keys, no spaces) of `params`."""
    text = json.dumps(canonical_params(params), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def versions() -> dict[str, str | None]:
    """Python and key package versions; None for packages that are not installed."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _to_numpy(key: str, value: Any) -> np.ndarray:
    """Check one computed value (numpy array or torch tensor) and return it as a numpy array."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # torch.Tensor, without importing it
        value = value.detach().cpu()
        value = (value.float() if str(value.dtype) == "torch.bfloat16" else value).numpy()
    if not isinstance(value, (np.ndarray, np.generic)):
        raise LlmdynError(f"result {key!r} is a {type(value).__name__}; compute must return "
                          "numpy arrays or torch tensors, not cached")
    arr = np.asarray(value)
    if arr.dtype.hasobject:
        raise LlmdynError(f"result {key!r} has dtype {arr.dtype}, which would need pickle; "
                          "return a numeric array, not cached")
    if not all_finite(arr):
        bad = int(arr.size - np.isfinite(arr).sum())
        raise LlmdynError(f"non-finite values in {key!r} ({bad} of {arr.size} entries are NaN or "
                          "inf), not cached; fix the computation or mask those entries")
    return arr


class ResultStore:
    """Cache of measurement results under ``<root>/<model_id>/<measurement>-<hash>/<item>.npz``.

    Each ``.npz`` has a ``.json`` sidecar (written after it, so a sidecar implies a complete
    ``.npz``) holding measurement, params, item, model provenance, array dtypes/shapes, package
    versions, the UTC creation time, the computing module and its code hash. A changed
    parameter gives a new hash directory.

    The code hash covers exactly the library source the result depends on: the import closure
    of the module that defines the computation (``compute``'s ``__module__``; see
    :mod:`llmdyn.core.result_code`). A result is read back only while that hash is unchanged,
    so editing a module the computation imports (directly, inside a function or through a lazy
    table) computes it again, and editing any other (a plot, a claim, the book) keeps it. A
    computation defined outside the library (a notebook cell, a test) depends on all of it.
    The sidecar names the computing module, so ``load`` and ``missing`` need not be told it.

    Args:
        model_id: Model identifier, e.g. ``"google/gemma-3-270m"``; made filesystem-safe.
        root: Cache root; defaults to ``$LLMDYN_RESULTS`` or ``results`` (relative to the cwd).
        provenance: JSON-serialisable model identity (name, source, sha256, ...) for sidecars.
    """

    def __init__(self, model_id: str, *, root: str | os.PathLike | None = None,
                 provenance: Mapping[str, Any] | None = None) -> None:
        if not isinstance(model_id, str) or not safe_name(model_id):
            raise LlmdynError(f"model_id must be a non-empty name like 'google/gemma-3-270m', "
                              f"got {model_id!r}")
        self.root = Path(root) if root is not None else results_root()
        _check_root(self.root, "root" if root is not None else "LLMDYN_RESULTS")
        self.model_id = safe_name(model_id)
        self.provenance = canonical_params(provenance or {}, arg="provenance")
        self.versions: dict[str, str | None] | None = None
        self._sweep_stale_temp_files()

    def _sweep_stale_temp_files(self) -> None:
        """Remove ``.*.tmp`` files a killed writer left under this model.

        A temp file of this machine is stale when its writer (the pid in its name) no longer
        runs, and never for its age: a live writer's file stays whatever the clocks say. One of
        another machine on a shared disk (or of unknown naming) is stale when untouched for
        six hours.
        """
        base = self.root / self.model_id
        if not base.is_dir():
            return
        now = time.time()
        for tmp in base.glob("*/.*.tmp"):
            try:
                state = writer_state(tmp.name)
                if state == "dead" or (state == "unknown"
                                       and now - tmp.stat().st_mtime > _STALE_TMP_S):
                    tmp.unlink()
            except OSError:  # another process swept it first
                pass

    def __repr__(self) -> str:
        return f"ResultStore(model_id={self.model_id!r}, root={str(self.root)!r})"

    def directory(self, measurement: str, params: Mapping[str, Any]) -> Path:
        """Directory ``<root>/<model_id>/<measurement>-<params_hash>`` for one parameter set."""
        if not isinstance(measurement, str) or not _MEASUREMENT.fullmatch(measurement):
            raise LlmdynError(f"measurement must be letters, digits, '_', '.', '-' (not starting "
                              f"with a symbol), got {measurement!r}")
        return self.root / self.model_id / f"{measurement}-{params_hash(params)}"

    def path(self, measurement: str, params: Mapping[str, Any], item: str) -> Path:
        """Path of the ``.npz`` for one item; its sidecar is the same path with ``.json``."""
        return self.directory(measurement, params) / f"{_item_key(item)}.npz"

    def load(self, measurement: str, params: Mapping[str, Any], item: str) -> Arrays | None:
        """Stored arrays for `item`, or None if it must be (re)computed.

        None when absent, partial or corrupt (any error reading it), when its arrays no longer
        match the content hash in the sidecar (a rewritten ``.npz``), or when it was computed
        for other parameters, another model identity or by other library code: the code hash
        of the module its sidecar names as computing it differs today.
        """
        npz = self.path(measurement, params, item)
        params = canonical_params(params)  # bad params raise; only reading is guarded below
        try:
            meta = json.loads(npz.with_suffix(".json").read_text())
            if (meta.get("format") != _FORMAT or meta.get("item") != item_record(item)
                    or meta.get("params") != params
                    or _what(meta.get("model")) != _what(self.provenance)
                    or meta.get("code") != code_hash(meta.get("computed_by"))):
                return None
            with np.load(npz, allow_pickle=False) as f:
                arrays = {k: f[k] for k in f.files}
            if content_hash(arrays) != meta["content_sha256"]:
                return None
        except Exception:  # noqa: BLE001 -- any corruption means recompute, never crash
            return None
        return arrays

    def save(self, measurement: str, params: Mapping[str, Any], item: str,
             arrays: Mapping[str, Any], computed_by: str | None = None) -> Arrays:
        """Check `arrays` (finite, numeric) and write them atomically; return them as numpy.

        ``computed_by`` is the library module that computed them (None: code outside the
        library); the sidecar records it and its code hash.
        """
        if not isinstance(arrays, Mapping) or not all(isinstance(k, str) and k for k in arrays):
            raise LlmdynError(f"compute must return a dict of non-empty str -> array, got "
                              f"{type(arrays).__name__} for item {item!r}")
        checked = {k: _to_numpy(k, v) for k, v in arrays.items()}
        npz = self.path(measurement, params, item)
        if self.versions is None:
            self.versions = versions()
        meta = {
            "format": _FORMAT,
            "measurement": measurement,
            "params": canonical_params(params),
            "params_hash": params_hash(params),
            "item": item_record(item),
            "model_id": self.model_id,
            "model": self.provenance,
            "arrays": {k: {"dtype": str(a.dtype), "shape": list(a.shape)}
                       for k, a in checked.items()},
            "content_sha256": content_hash(checked),
            "computed_by": computed_by,
            "code": code_hash(computed_by),
            "versions": self.versions,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        try:
            _check_directories(npz.parent, self.root)
            npz.parent.mkdir(parents=True, exist_ok=True)
            sidecar = npz.with_suffix(".json")
            sidecar.unlink(missing_ok=True)  # a stale sidecar must never vouch for the new npz
            atomic_write(npz, lambda f: np.savez(f, **checked))
            atomic_write(sidecar, lambda f: f.write(json.dumps(meta, indent=1).encode()))
        except OSError as err:  # a full disk or a read-only store: one sentence, not a trace
            message = os_error_message(err)
            if message is None:
                raise
            raise LlmdynError(f"results cache {self.root}: {message}") from None
        return checked

    def cached(self, measurement: str, params: Mapping[str, Any], item: str,
               compute: Callable[[], Mapping[str, Any]]) -> Arrays:
        """Stored arrays for `item` if present, else ``compute()``, checked, saved and returned."""
        found = self.load(measurement, params, item)
        return (found if found is not None else
                self.save(measurement, params, item, compute(), computing_module(compute)))

    def missing(self, measurement: str, params: Mapping[str, Any],
                items: Sequence[str]) -> list[str]:
        """Items (in the given order) with no valid stored result for this parameter set."""
        return [it for it in _check_items(items) if self.load(measurement, params, it) is None]

    def map(self, measurement: str, params: Mapping[str, Any], items: Sequence[str],
            compute_item: Callable[[str], Mapping[str, Any]],
            progress: bool = True) -> list[Arrays]:
        """Per-item `cached` over `items`, with a progress bar; an interrupted run resumes.

        Items already on disk are loaded; the rest are computed and saved one by one, so results
        computed before an interruption are kept. The bar counts loaded items as done, so its
        time estimate reflects only the items still to compute.

        Returns:
            One dict of arrays per item, in the order of `items`.
        """
        items = _check_items(items)
        found = [self.load(measurement, params, it) for it in items]
        done = sum(r is not None for r in found)
        with tqdm(total=len(items), initial=done, desc=measurement, unit="item",
                  disable=not progress) as bar:
            for i, it in enumerate(items):
                if found[i] is None:
                    found[i] = self.save(measurement, params, it, compute_item(it),
                                         computing_module(compute_item))
                    bar.update(1)
        return found  # type: ignore[return-value]


def _check_root(root: Path, arg: str) -> None:
    """Refuse a cache root that cannot be a directory (it, or a parent, is a regular file).

    A dangling or looping symbolic link on the way is refused too, naming where it points.
    """
    for path in (root, *root.parents):
        if path.is_symlink() and not path.exists():
            target = os.readlink(path)
            try:
                os.stat(path)
                why = "cannot be followed"
            except FileNotFoundError:
                why = f"points to {target!r}, which does not exist"
            except OSError:
                why = f"loops (it points to {target!r}, which leads back to itself)"
            where = "" if path == root else f" (under it, {path})"
            raise LlmdynError(f"results cache {arg}={str(root)!r}{where}: the symbolic link "
                              f"{why}; create the directory it points to, or point {arg} at "
                              "a directory (default: results)")
        if path.exists():
            if not path.is_dir():
                what = "is a file" if path == root else f"lies under the file {path}"
                raise LlmdynError(f"results cache {arg}={str(root)!r} {what}, so it cannot be a "
                                  f"directory; point {arg} at a directory (default: results)")
            return


def _what(provenance: Any) -> Any:
    """The part of a model's provenance that says what it is, not where it was found.

    ``name`` (the spec as typed, e.g. ``./mine``) and ``path`` change when a checkpoint is
    named differently or moved; its content hashes do not.
    """
    if not isinstance(provenance, dict):
        return provenance
    return {k: v for k, v in provenance.items() if k not in ("name", "path")}


def _check_items(items: Sequence[str]) -> list[str]:
    """Check that `items` is a sequence of non-empty strings and return it as a list."""
    if isinstance(items, str) or not all(isinstance(it, str) and it for it in items):
        raise LlmdynError(f"items must be a sequence of non-empty str, got {items!r:.80}")
    return list(items)


ITEM_CHARS = 256  # an item longer than this (a whole prompt) is recorded by digest and length


def item_record(item: str) -> str | dict[str, Any]:
    """What a sidecar records of its item: the item itself, or a long one's digest and length.

    A prompt can be megabytes; every sidecar of every measurement of it would hold a copy.
    """
    if len(item) <= ITEM_CHARS:
        return item
    return {"sha256": hashlib.sha256(item.encode()).hexdigest(), "chars": len(item)}


def _check_directories(directory: Path, root: Path) -> None:
    """Refuse a store path on which a file (not a directory) stands where a directory must be.

    ``mkdir`` would stop with ``FileExistsError``; the message names the entry and what to do.
    """
    for entry in (directory, *directory.parents):
        if entry.exists() and not entry.is_dir():
            raise LlmdynError(f"results cache {root}: {entry} is a file, not a directory of "
                              "results; move it away (or delete it) and run again")
        if entry == root:
            return


def _item_key(item: str) -> str:
    """Filesystem-safe file stem for `item`; a short hash is appended if sanitising changed it."""
    if not isinstance(item, str) or not item:
        raise LlmdynError(f"item must be a non-empty str, got {item!r}")
    key = safe_name(item)[:80]
    if key != item:
        key = f"{key}-{hashlib.sha256(item.encode()).hexdigest()[:8]}"
    return key
