"""A run directory's files: checkpoints written whole or not at all, verified on read, resume state.

Layout::

    <run>/step<N>/             weights after N optimizer updates (step0: at initialisation)
        model.safetensors      the task's weights (mode from the umask, not safetensors' 0600)
        metrics.json           step, tokens_seen, losses, wall_s, weights_sha256
        optimizer.safetensors  AdamW and RNG state (kept in the newest checkpoint only)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from filelock import FileLock, Timeout
from safetensors import SafetensorError
from safetensors.torch import save_file  # no pickle anywhere

from llmdyn import LlmdynError
from llmdyn.core.failures import as_os_error
from llmdyn.core.holders import describe, lock_holders
from llmdyn.core.store import (
    apply_umask,
    apply_umask_tree,
    atomic_write,
    temp_prefix,
    writer_alive,
)
from llmdyn.models.files import sha256_of

__all__ = ["METRICS", "METRIC_KEYS", "OPTIMIZER", "WEIGHTS", "read_metrics", "run_lock"]

WEIGHTS = "model.safetensors"
METRICS = "metrics.json"
OPTIMIZER = "optimizer.safetensors"
METRIC_KEYS = ("step", "tokens_seen", "train_loss", "heldout_loss", "wall_s")


def _write_json(path: Path, value: Any) -> None:
    text = json.dumps(value, indent=1, sort_keys=True)  # temp name unique to this process
    atomic_write(path, lambda f: f.write(text.encode()))


def read_metrics(directory: Path) -> dict[str, Any]:
    """The checkpoint's ``metrics.json``, after checking that its files are there and intact.

    Raises:
        LlmdynError: a file is missing, unreadable, or the weights' sha256 does not match.
    """
    directory = Path(directory)
    what = (f"checkpoint {directory}: run its suite or grid again (`llmdyn train` or `llmdyn "
            "train-vit`): it rebuilds this checkpoint by retraining the run from its newest "
            "checkpoint that resumes exactly (usually step 0)")
    try:
        metrics = json.loads((directory / METRICS).read_text())
    except (OSError, ValueError) as err:
        raise LlmdynError(f"{what}; its {METRICS} is missing or not JSON ({err})") from None
    missing = [k for k in (*METRIC_KEYS, "weights_sha256") if k not in metrics]
    if missing or not (directory / WEIGHTS).is_file():
        raise LlmdynError(f"{what}; missing {missing or WEIGHTS}")
    if sha256_of(directory / WEIGHTS) != metrics["weights_sha256"]:
        raise LlmdynError(f"{what}; {WEIGHTS} does not match the sha256 recorded when it was "
                          "written (corrupt or overwritten)")
    return metrics


def _optimizer_state(opt: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    """AdamW's state and torch's RNG as flat tensors (safetensors: no pickle)."""
    flat = {"rng": torch.get_rng_state()}
    for index, state in opt.state_dict()["state"].items():
        for key, value in state.items():
            flat[f"state.{index}.{key}"] = torch.as_tensor(value).contiguous()
    return flat


def _restore_optimizer(opt: torch.optim.Optimizer, flat: dict[str, torch.Tensor]) -> None:
    state: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in flat.items():
        if name.startswith("state."):
            _, index, key = name.split(".", 2)
            state.setdefault(int(index), {})[key] = value
    opt.load_state_dict({"state": state, "param_groups": opt.state_dict()["param_groups"]})
    torch.set_rng_state(flat["rng"])


def _resumable(run_dir: Path, before: int | None = None) -> list[tuple[int, Path]]:
    """The checkpoints that hold an optimizer state, oldest first: ``[(step, path)]``.

    With ``before``, only checkpoints of earlier steps count: a run resumes before its first
    missing or corrupt checkpoint, so that retraining rebuilds it.
    """
    return sorted((int(p.name[4:]), p) for p in run_dir.glob("step*")
                  if p.name[4:].isdigit() and (p / OPTIMIZER).exists()
                  and (before is None or int(p.name[4:]) < before))


def _latest(run_dir: Path, before: int | None = None) -> tuple[int, Path] | None:
    """The newest checkpoint that can be resumed from (it holds the optimizer state)."""
    found = _resumable(run_dir, before)
    return found[-1] if found else None


def _unverified(run_dir: Path, steps: Sequence[int]) -> dict[int, str]:
    """The promised checkpoints that are missing or do not verify, with why: ``{step: why}``."""
    bad = {}
    for step in steps:
        try:
            read_metrics(run_dir / f"step{step}")
        except LlmdynError as err:
            bad[step] = str(err).rsplit("; ", 1)[-1]
    return bad


def _save_checkpoint(run_dir: Path, step: int, model, task: Any, opt, *,
                     wall_s: float) -> None:
    """Write checkpoint ``step`` (weights, metrics, resume state) whole, or leave nothing.

    ``task`` is the loop's `TrainTask` (it saves and evaluates the model).
    """
    final = run_dir / f"step{step}"
    # unique to this process: concurrent `llmdyn train` on one root never share a temp name
    tmp = Path(tempfile.mkdtemp(dir=run_dir, prefix=temp_prefix(f"step{step}"), suffix=".tmp"))
    try:
        apply_umask(tmp, directory=True)  # mkdtemp makes it 0700
        task.save_model(model, tmp)
        metrics = {"step": step, "tokens_seen": step * task.tokens_per_step, "wall_s": wall_s,
                   **task.evaluate(model), "weights_sha256": sha256_of(tmp / WEIGHTS)}
        _write_json(tmp / METRICS, metrics)
        save_file(_optimizer_state(opt), tmp / OPTIMIZER)
        apply_umask_tree(tmp)  # safetensors writes 0600: the weights follow the umask too
        if _same_weights(final, metrics["weights_sha256"]):  # rebuilt bit for bit: keep it,
            os.replace(tmp / OPTIMIZER, final / OPTIMIZER)  # byte-identical, add resume state
        else:
            _replace_dir(tmp, final)  # a checkpoint is either whole or absent
    except SafetensorError as err:  # a full disk, in safetensors' words: the OS's, one line
        raise as_os_error(err, tmp) or err from None
    finally:  # a full disk leaves no half-written directory behind (gone after a rename)
        shutil.rmtree(tmp, ignore_errors=True)
    for older in run_dir.glob(f"step*/{OPTIMIZER}"):  # resume state: newest checkpoint only
        if older.parent != final:
            older.unlink(missing_ok=True)


def _same_weights(final: Path, weights_sha256: str) -> bool:
    """Whether ``final`` is a verified checkpoint holding exactly these weights."""
    try:
        return read_metrics(final)["weights_sha256"] == weights_sha256
    except LlmdynError:
        return False


def _replace_dir(tmp: Path, final: Path) -> None:
    """Rename directory ``tmp`` to ``final``: a checkpoint is whole or absent, never a mix.

    An old ``final`` is first renamed aside (atomic), never deleted in place. When another
    process puts its own ``final`` there in between, that one is kept: a run is bitwise
    deterministic, so it holds the same checkpoint.
    """
    trash = tmp.with_name(tmp.name[: -len(".tmp")] + "-old.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.rename(final, trash)
    try:
        os.rename(tmp, final)
    except OSError:  # another process's final arrived first
        if not final.is_dir():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(trash, ignore_errors=True)


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[FileLock]:
    """Hold the lock on one run directory around `train` (the suites and the ViT grids do).

    Two processes training the same run (three `llmdyn train` on one root) take turns; the
    later one finds the run done. One that has to wait first says so on stderr, naming the
    process it waits for (read from /proc), instead of waiting without a word.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(run_dir / ".train.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        pids = lock_holders(lock.lock_file)
        who = ", ".join(map(describe, pids)) if pids else "another process"
        print(f"llmdyn: waiting for {who}, which is training {run_dir} (it holds "
              f"{lock.lock_file}); this run goes on when that one ends", file=sys.stderr,
              flush=True)
        lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def _sweep_temp_dirs(run_dir: Path) -> None:
    """Remove the temp directories of checkpoint writers that no longer run (killed runs)."""
    for tmp in run_dir.glob(".step*.tmp"):
        if not writer_alive(tmp.name):
            shutil.rmtree(tmp, ignore_errors=True)
