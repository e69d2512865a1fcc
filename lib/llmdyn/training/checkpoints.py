"""Where the checkpoints of a training run are, and what is known about each one.

Chapter 08 reads a list of `Checkpoint`s: the runs of one of our suites (`llmdyn.training.suite`),
any local checkpoint directories with the same layout, or hub revisions such as
``EleutherAI/pythia-70m@step1000`` for readers with a network (the same loader, one parameter).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.training import loop as training
from llmdyn.training.suite import SUITES, Suite, default_root, get_suite

# Pythia trains with batches of 1,024 sequences of 2,048 tokens (Biderman et al., 2023, §2).
PYTHIA_TOKENS_PER_STEP = 1024 * 2048
_REVISION_STEP = re.compile(r"^step(\d+)$")


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint of one run.

    Attributes:
        spec: what `llmdyn.models.load_model` takes (a directory or ``owner/name@revision``).
        run: the run it belongs to (our run name, or the hub model id).
        step: optimizer updates before this checkpoint (0: at initialisation).
        tokens_seen: training tokens before it (None where unknown).
        heldout_loss: mean token cross-entropy on the suite's held-out split (NaN if unknown).
        train_loss: the same on a fixed slice of the training split (NaN if unknown).
        params: number of parameters of the run's model (None where unknown).
        ood_loss: the same on the suite's out-of-distribution corpus (NaN if it has none).
    """

    spec: str
    run: str
    step: int
    tokens_seen: int | None
    heldout_loss: float = math.nan
    train_loss: float = math.nan
    params: int | None = None
    ood_loss: float = math.nan


def _from_directory(path: Path, run: str | None = None) -> Checkpoint:
    metrics = training.read_metrics(path)  # checks the files before any use
    summary = path.parent / "run.json"
    params = json.loads(summary.read_text()).get("params") if summary.exists() else None
    return Checkpoint(spec=str(path), run=run or path.parent.name, step=int(metrics["step"]),
                      tokens_seen=int(metrics["tokens_seen"]),
                      heldout_loss=float(metrics["heldout_loss"]),
                      train_loss=float(metrics["train_loss"]), params=params,
                      ood_loss=float(metrics.get("ood_loss", math.nan)))


def _from_hub(spec: str) -> Checkpoint:
    name, _, revision = spec.partition("@")
    match = _REVISION_STEP.match(revision)
    step = int(match.group(1)) if match else None
    if step is None:
        raise LlmdynError(f"hub checkpoint {spec!r}: give the revision as @step<N> (Pythia's "
                          "branch names), e.g. EleutherAI/pythia-70m@step1000")
    pythia = name.lower().startswith("eleutherai/pythia")
    return Checkpoint(spec=spec, run=name, step=step,
                      tokens_seen=step * PYTHIA_TOKENS_PER_STEP if pythia else None)


def _from_spec(spec: str) -> Checkpoint:
    path = Path(spec)
    if path.is_dir():
        return _from_directory(path)
    if "@" in spec and "/" in spec.partition("@")[0]:
        return _from_hub(spec)
    raise LlmdynError(f"checkpoint {spec!r} is neither a directory (config.json, "
                      "model.safetensors, metrics.json) nor a hub revision owner/name@stepN")


def suite_checkpoints(suite: str | Suite | Sequence[str], *, root: str | Path | None = None,
                      steps: Sequence[int] | None = None) -> list[Checkpoint]:
    """The checkpoints of a named suite, or of a list of checkpoint specs, ordered by run, step.

    Args:
        suite: a name from `llmdyn.training.SUITES` or a `Suite` (its runs must be trained:
            ``llmdyn train --suite NAME``), or a list of checkpoint directories / hub revisions.
        root: where a named suite's runs live (None: ``llmdyn.training.suite.default_root``).
        steps: keep only these steps (None: every checkpoint).

    Raises:
        LlmdynError: a run is not trained, a checkpoint is corrupt, or a step is not saved.
    """
    if isinstance(suite, str | Suite):
        spec = get_suite(suite) if isinstance(suite, str) else suite
        suite = spec.name
        root = root if root is not None else default_root()
        found = []
        for run in spec.runs:
            run_dir = Path(root) / run.name
            if not (run_dir / "run.json").exists():
                raise LlmdynError(f"run {run.name} of suite {suite!r} is not trained in "
                                  f"{root}; run `llmdyn train --suite {suite} --root {root}` "
                                  "(or `make book`, which trains it)")
            found += [_from_directory(run_dir / f"step{s}", run.name)
                      for s in spec.run_checkpoints(run)]
    else:
        if not suite:
            raise LlmdynError(f"suite must be a suite name ({', '.join(SUITES)}) or a non-empty "
                              "list of checkpoints")
        found = [_from_spec(s) for s in suite]
    if steps is not None:
        missing = sorted(set(steps) - {c.step for c in found})
        if missing:
            raise LlmdynError(f"checkpoints: steps {missing} are not saved; saved steps: "
                              f"{sorted({c.step for c in found})}")
        found = [c for c in found if c.step in set(steps)]
    return sorted(found, key=lambda c: (c.run, c.step))


def by_run(checkpoints: Sequence[Checkpoint]) -> dict[str, list[Checkpoint]]:
    """Checkpoints grouped by run, each run's list ordered by step."""
    runs: dict[str, list[Checkpoint]] = {}
    for c in sorted(checkpoints, key=lambda c: (c.run, c.step)):
        runs.setdefault(c.run, []).append(c)
    return runs
