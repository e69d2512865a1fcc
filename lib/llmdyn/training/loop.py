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

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from safetensors.torch import load_file  # no pickle anywhere
from tqdm.auto import tqdm

from llmdyn import LlmdynError
from llmdyn.training.run_files import (  # re-exported: the suites use them as loop.<name>
    METRIC_KEYS,
    METRICS,
    OPTIMIZER,
    WEIGHTS,
    _latest,  # noqa: F401 -- tests reach it as loop._latest
    _replace_dir,  # noqa: F401
    _restore_optimizer,
    _resumable,
    _save_checkpoint,
    _sweep_temp_dirs,
    _unverified,
    _write_json,
    read_metrics,
    run_lock,
)
from llmdyn.training.schedule import Schedule, check_steps

__all__ = ["METRICS", "METRIC_KEYS", "OPTIMIZER", "WEIGHTS", "RunResult", "TrainTask",
           "read_metrics", "run_lock", "train"]

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


@dataclass(frozen=True)
class RunResult:
    """A finished run: its directory, its checkpoints and its training throughput."""

    directory: Path
    steps: list[int]  # checkpoint steps, increasing
    wall_s: float  # training time (updates only, summed over resumes)
    tokens_per_s: float  # tokens_per_step · updates / wall_s


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
    record = {"config": config, **(facts or {})}
    if (run_dir / "run.json").exists() and not bad:  # every checkpoint verifies
        return _finished(run_dir) or _finish(
            run_dir, steps, float(read_metrics(run_dir / f"step{steps[-1]}")["wall_s"]),
            task.tokens_per_step * schedule.steps, record)
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
    return _finish(run_dir, steps, wall, task.tokens_per_step * schedule.steps, record)


def _prepare(run_dir: Path, config: dict[str, Any]) -> Path:
    """Create ``run_dir``, sweep dead writers' temp files, and check (or write) its config."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _sweep_temp_dirs(run_dir)
    _check_config(run_dir, config)
    return run_dir


def _finished(run_dir: Path) -> RunResult | None:
    """The result a finished run recorded in its ``run.json``; None if that file is corrupt.

    Every checkpoint verified, so the caller writes ``run.json`` again from them.
    """
    try:
        summary = json.loads((run_dir / "run.json").read_text())
        return RunResult(run_dir, list(summary["checkpoints"]), float(summary["wall_s"]),
                         float(summary["tokens_per_s"]))
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("%s: run.json is unreadable (%s); writing it again from the verified "
                    "checkpoints", run_dir, err)
        return None


def _check_config(run_dir: Path, config: dict[str, Any]) -> None:
    """Write the run's config on its first call; refuse a resume under another config."""
    config_path = run_dir / "run_config.json"
    if config_path.exists():
        try:
            saved = json.loads(config_path.read_text())
        except (OSError, ValueError) as err:
            _config_lost(run_dir, config, err)
            return
        if saved != json.loads(json.dumps(config)):
            changed = sorted(k for k in {*saved, *config} if saved.get(k) != config.get(k))
            raise LlmdynError(f"{run_dir} was trained with another configuration (differs in "
                              f"{changed}); use another run name or root, or delete {run_dir}")
    else:
        _write_json(config_path, config)


def _config_lost(run_dir: Path, config: dict[str, Any], err: Exception) -> None:
    """A corrupt ``run_config.json``: write it again and retrain from step 0 if in doubt.

    Without it nothing says which configuration the checkpoints were trained under, unless
    ``run.json`` still records this one. Otherwise the run restarts at step 0 (its resume
    state may belong to another configuration); checkpoints it rebuilds bit for bit are kept
    byte-identical (`_same_weights`), others are replaced.
    """
    try:
        same = json.loads((run_dir / "run.json").read_text())["config"] == json.loads(
            json.dumps(config))
    except (OSError, ValueError, KeyError, TypeError):
        same = False
    log.warning("%s: run_config.json is unreadable (%s); writing it again%s", run_dir, err,
                "" if same else " and retraining the run from step 0")
    if not same:
        (run_dir / "run.json").unlink(missing_ok=True)
        for state in run_dir.glob(f"step*/{OPTIMIZER}"):  # resume state of an unknown config
            state.unlink()
    _write_json(run_dir / "run_config.json", config)


def _load_resume_state(path: Path, model: torch.nn.Module, task: TrainTask,
                       opt: torch.optim.Optimizer) -> float:
    """Load weights, optimizer and RNG state of checkpoint ``path``; its training time.

    All or nothing: when any part is unreadable (a truncated ``optimizer.safetensors``), the
    model, optimizer and RNG are put back as they were and the error is raised.
    """
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    try:
        wall = float(read_metrics(path)["wall_s"])
        task.load_weights(model, path)
        _restore_optimizer(opt, load_file(path / OPTIMIZER))
        return wall
    except Exception:
        model.load_state_dict(weights)
        opt.state.clear()
        torch.set_rng_state(rng)
        raise


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
    candidates = _resumable(run_dir, before=min(bad, default=None))
    latest = candidates[-1] if candidates else None
    done = run_dir / "run.json"
    if done.exists():  # finished once, but a checkpoint went missing or corrupt since
        from_step = latest[0] if latest is not None else 0
        log.warning("%s: checkpoint(s) %s missing or corrupt (%s); retraining the run from "
                    "step %d, its newest checkpoint that resumes exactly, to rebuild them",
                    run_dir, ", ".join(f"step{s}" for s in bad), next(iter(bad.values())),
                    from_step)
        done.unlink()  # not finished until they are rebuilt
    for start, path in reversed(candidates):  # newest first; a corrupt state falls back
        try:
            return start, _load_resume_state(path, model, task, opt)
        except Exception as err:  # noqa: BLE001 -- any unreadable state: fall back, never stop
            log.warning("%s: the resume state in %s is unreadable (%s: %s); falling back to "
                        "an older one, or step 0", run_dir, path.name, type(err).__name__, err)
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
