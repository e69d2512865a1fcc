"""A resumable, deterministic training loop with Pythia-style checkpoints, for any model.

The loop knows nothing about language or images: a `TrainTask` gives the batch of a step, the loss,
the evaluation and how to save the model. The suite of language models (`llmdyn.training.suite`) and
of vision transformers use the same loop, so both are idempotent (a finished run trains nothing),
resumable (a killed run continues from its last checkpoint, optimizer and RNG state included, and
ends with the same weights as an uninterrupted run) and bitwise deterministic on CPU for a fixed
seed.

Layout of a run directory::

    <run>/run_config.json      what the run is (checked on resume)
    <run>/step<N>/             weights after N optimizer updates (step0: at initialisation)
        metrics.json           step, tokens_seen, losses, wall_s, weights_sha256
        optimizer.safetensors  AdamW and RNG state (kept in the newest checkpoint only)
    <run>/run.json             written last: the run is complete
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from filelock import FileLock
from safetensors.torch import load_file, save_file  # no pickle anywhere
from tqdm.auto import tqdm

from llmdyn import LlmdynError
from llmdyn.core.store import apply_umask, apply_umask_tree, atomic_write, writer_alive
from llmdyn.models.files import sha256_of
from llmdyn.training.schedule import Schedule, check_steps

WEIGHTS = "model.safetensors"
METRICS = "metrics.json"
OPTIMIZER = "optimizer.safetensors"
METRIC_KEYS = ("step", "tokens_seen", "train_loss", "heldout_loss", "wall_s")
log = logging.getLogger(__name__)


class TrainTask(Protocol):
    """What the loop needs from a task (language modelling, image classification, …)."""

    tokens_per_step: int  # inputs per optimizer step (tokens, or images), for tokens_seen

    def batch(self, step: int) -> Any:
        """The batch of optimizer step ``step`` (a pure function of the step and the seed)."""

    def loss(self, model: torch.nn.Module, batch: Any) -> torch.Tensor:
        """Scalar training loss of ``model`` on ``batch``."""

    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """``train_loss`` and ``heldout_loss`` (and any other scores) on fixed evaluation sets."""

    def save_model(self, model: torch.nn.Module, directory: Path) -> None:
        """Write ``directory/model.safetensors`` and whatever else loads the model back."""

    def load_weights(self, model: torch.nn.Module, directory: Path) -> None:
        """Put the weights saved by `save_model` in ``directory`` into ``model``."""


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


def _latest(run_dir: Path, before: int | None = None) -> tuple[int, Path] | None:
    """The newest checkpoint that can be resumed from (it holds the optimizer state).

    With ``before``, only checkpoints of earlier steps count: a run resumes before its first
    missing or corrupt checkpoint, so that retraining rebuilds it.
    """
    found = sorted((int(p.name[4:]), p) for p in run_dir.glob("step*")
                   if p.name[4:].isdigit() and (p / OPTIMIZER).exists()
                   and (before is None or int(p.name[4:]) < before))
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


@dataclass(frozen=True)
class RunResult:
    """A finished run: its directory, its checkpoints and its training throughput."""

    directory: Path
    steps: list[int]  # checkpoint steps, increasing
    wall_s: float  # training time (updates only, summed over resumes)
    tokens_per_s: float  # tokens_per_step · updates / wall_s


def _save_checkpoint(run_dir: Path, step: int, model, task: TrainTask, opt, *,
                     wall_s: float) -> None:
    final = run_dir / f"step{step}"
    # unique to this process: concurrent `llmdyn train` on one root never share a temp name
    tmp = Path(tempfile.mkdtemp(dir=run_dir, prefix=f".step{step}.{os.getpid()}-", suffix=".tmp"))
    apply_umask(tmp, directory=True)  # mkdtemp makes it 0700
    task.save_model(model, tmp)
    metrics = {"step": step, "tokens_seen": step * task.tokens_per_step, "wall_s": wall_s,
               **task.evaluate(model), "weights_sha256": sha256_of(tmp / WEIGHTS)}
    _write_json(tmp / METRICS, metrics)
    save_file(_optimizer_state(opt), tmp / OPTIMIZER)
    apply_umask_tree(tmp)  # safetensors writes 0600: the weights follow the umask too
    _replace_dir(tmp, final)  # a checkpoint is either whole or absent
    for older in run_dir.glob(f"step*/{OPTIMIZER}"):  # resume state: newest checkpoint only
        if older.parent != final:
            older.unlink(missing_ok=True)


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


def run_lock(run_dir: Path) -> FileLock:
    """A lock on one run directory, held around `train` by the suites.

    Two processes training the same run (three `llmdyn train` on one root) take turns; the
    later one finds the run done.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    return FileLock(str(run_dir / ".train.lock"))


def _sweep_temp_dirs(run_dir: Path) -> None:
    """Remove the temp directories of checkpoint writers that no longer run (killed runs)."""
    for tmp in run_dir.glob(".step*.tmp"):
        if not writer_alive(tmp.name):
            shutil.rmtree(tmp, ignore_errors=True)


def train(model: torch.nn.Module, task: TrainTask, run_dir: Path, *, schedule: Schedule,
          checkpoints: Sequence[int], config: dict[str, Any], facts: dict[str, Any] | None = None,
          desc: str = "train", progress: bool = True) -> RunResult:
    """Train ``model`` on ``task`` into ``run_dir``, resuming or skipping what is already done.

    Args:
        model: the freshly initialised model (seeded by the caller); its weights are replaced
            by the newest checkpoint's when resuming.
        task: batches, loss, evaluation and saving.
        run_dir: the run's directory (created).
        schedule: optimizer and learning-rate schedule.
        checkpoints: steps at which to save, strictly increasing, within [0, schedule.steps].
        config: JSON description of the run; a resume with a different config is refused.
        facts: what else ``run.json`` records about the model (e.g. parameter counts).
        desc: progress-bar label.
        progress: show a progress bar with loss and tokens/s.

    A run is finished (``run.json``) only while every checkpoint of ``checkpoints`` verifies
    (`read_metrics`); one that went missing or corrupt is rebuilt by retraining from the newest
    earlier checkpoint that resumes exactly (weights, optimizer and RNG state, kept only at the
    newest checkpoint of an unfinished run), which after a finished run means step 0.

    Raises:
        LlmdynError: the saved config differs.
    """
    steps = check_steps(checkpoints, schedule.steps)
    run_dir = _prepare(Path(run_dir), config)
    bad = _unverified(run_dir, steps)  # finished only when every promised checkpoint verifies
    if (run_dir / "run.json").exists() and not bad:
        return _finished(run_dir)
    opt = torch.optim.AdamW(model.parameters(), lr=schedule.lr, betas=schedule.betas,
                            weight_decay=schedule.weight_decay)
    start, wall = _resume(run_dir, model, task, opt, steps, bad)
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    bar = tqdm(total=schedule.steps, initial=start, desc=desc, unit="step", disable=not progress)
    session_wall = 0.0  # this call's training time, for the tokens/s shown
    try:
        model.train()
        for step in range(start, schedule.steps):
            tic = time.perf_counter()
            loss = _update(model, task, opt, schedule, step, desc)
            elapsed = time.perf_counter() - tic
            wall, session_wall = wall + elapsed, session_wall + elapsed
            bar.update(1)
            tokens_per_s = task.tokens_per_step * (step + 1 - start) / session_wall
            bar.set_postfix(loss=f"{loss.item():.3f}", tok_s=f"{tokens_per_s:.0f}")
            if step + 1 in steps:
                model.eval()
                _save_checkpoint(run_dir, step + 1, model, task, opt, wall_s=wall)
                model.train()
    finally:
        bar.close()
        model.eval()
        torch.use_deterministic_algorithms(was_deterministic)
    return _finish(run_dir, steps, wall, task.tokens_per_step * schedule.steps,
                   {"config": config, **(facts or {})})


def _prepare(run_dir: Path, config: dict[str, Any]) -> Path:
    """Create ``run_dir``, sweep dead writers' temp files, and check (or write) its config."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _sweep_temp_dirs(run_dir)
    _check_config(run_dir, config)
    return run_dir


def _finished(run_dir: Path) -> RunResult:
    """The result a finished run recorded in its ``run.json``."""
    summary = json.loads((run_dir / "run.json").read_text())
    return RunResult(run_dir, summary["checkpoints"], summary["wall_s"], summary["tokens_per_s"])


def _check_config(run_dir: Path, config: dict[str, Any]) -> None:
    """Write the run's config on its first call; refuse a resume under another config."""
    config_path = run_dir / "run_config.json"
    if config_path.exists():
        saved = json.loads(config_path.read_text())
        if saved != json.loads(json.dumps(config)):
            changed = sorted(k for k in {*saved, *config} if saved.get(k) != config.get(k))
            raise LlmdynError(f"{run_dir} was trained with another configuration (differs in "
                              f"{changed}); use another run name or root, or delete {run_dir}")
    else:
        _write_json(config_path, config)


def _resume(run_dir: Path, model: torch.nn.Module, task: TrainTask,
            opt: torch.optim.Optimizer, steps: list[int],
            bad: dict[int, str]) -> tuple[int, float]:
    """(first step to train, training time so far), from the newest exact resume point.

    That is the newest checkpoint that resumes exactly and comes before every missing or
    corrupt one (``bad``: step -> why).
    A run that finished once but lost a checkpoint is unfinished again until it is rebuilt.
    Without a resumable checkpoint, the run starts at step 0 and saves the initial weights if 0
    is a checkpoint.
    """
    latest = _latest(run_dir, before=min(bad, default=None))
    done = run_dir / "run.json"
    if done.exists():  # finished once, but a checkpoint went missing or corrupt since
        from_step = latest[0] if latest is not None else 0
        log.warning("%s: checkpoint(s) %s missing or corrupt (%s); retraining the run from "
                    "step %d, its newest checkpoint that resumes exactly, to rebuild them",
                    run_dir, ", ".join(f"step{s}" for s in bad), next(iter(bad.values())),
                    from_step)
        done.unlink()  # not finished until they are rebuilt
    if latest is not None:
        start, path = latest
        metrics = read_metrics(path)
        task.load_weights(model, path)
        _restore_optimizer(opt, load_file(path / OPTIMIZER))
        return start, float(metrics["wall_s"])
    if 0 in steps:
        _save_checkpoint(run_dir, 0, model, task, opt, wall_s=0.0)
    return 0, 0.0


def _update(model: torch.nn.Module, task: TrainTask, opt: torch.optim.Optimizer,
            schedule: Schedule, step: int, desc: str) -> torch.Tensor:
    """One optimizer update at ``step`` (learning rate, loss, clipped gradients); its loss."""
    for group in opt.param_groups:
        group["lr"] = schedule.lr_at(step)
    loss = task.loss(model, task.batch(step))
    if not torch.isfinite(loss):
        raise LlmdynError(f"{desc}: loss is {loss.item()} at step {step}; lower the "
                          "learning rate")
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), schedule.grad_clip)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def _finish(run_dir: Path, steps: list[int], wall: float, tokens: int,
            record: dict[str, Any]) -> RunResult:
    """Drop the resume state and write ``run.json`` (steps, time, throughput, ``record``)."""
    for leftover in run_dir.glob(f"step*/{OPTIMIZER}"):  # a finished run needs no resume state
        leftover.unlink(missing_ok=True)
    tokens_per_s = tokens / max(wall, 1e-9)
    _write_json(run_dir / "run.json", {"checkpoints": steps, "wall_s": wall,
                                       "tokens_per_s": tokens_per_s, **record})
    return RunResult(run_dir, steps, wall, tokens_per_s)
