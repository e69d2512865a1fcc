"""The optimizer schedule of a training run and the steps it saves (Pythia's checkpoint grid)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from llmdyn import LlmdynError


@dataclass(frozen=True)
class Schedule:
    """AdamW with linear warm-up then cosine decay to ``min_lr_ratio · lr`` (Pythia's recipe)."""

    steps: int  # optimizer updates in the run
    lr: float  # peak learning rate
    warmup: int  # steps of linear warm-up
    min_lr_ratio: float = 0.1  # Pythia decays to 10 % of the peak
    weight_decay: float = 0.01  # Pythia: 0.01
    betas: tuple[float, float] = (0.9, 0.95)  # Pythia: (0.9, 0.95)
    grad_clip: float = 1.0  # Pythia: 1.0

    def __post_init__(self) -> None:
        """Check the values."""
        if self.steps < 1 or not 0 <= self.warmup <= self.steps or self.lr <= 0:
            raise LlmdynError(f"schedule needs steps >= 1, 0 <= warmup <= steps and lr > 0, got "
                              f"steps={self.steps}, warmup={self.warmup}, lr={self.lr}")

    def lr_at(self, step: int) -> float:
        """Learning rate of update ``step`` (0-based)."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        progress = (step - self.warmup) / max(1, self.steps - self.warmup)
        cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        return self.lr * (self.min_lr_ratio + (1 - self.min_lr_ratio) * cosine)


def checkpoint_steps(total: int, *, log_until: int = 512, n_even: int = 8) -> list[int]:
    """Pythia's checkpoint steps scaled to a run of ``total`` updates.

    0, 1, 2, 4, …, 512 (powers of two up to ``log_until``), then ``n_even`` evenly spaced steps
    to the end (Pythia: every 1,000 of 143,000), all cut to ``total``; ``total`` is always in.
    """
    if total < 1:
        raise LlmdynError(f"a run needs at least 1 step, got {total}")
    steps = {0, total}
    power = 1
    while power <= min(log_until, total):
        steps.add(power)
        power *= 2
    if total > log_until:
        steps.update(round(log_until + (total - log_until) * i / n_even)
                     for i in range(1, n_even + 1))
    return sorted(steps)


def check_steps(steps: Sequence[int], total: int) -> list[int]:
    """Checkpoint steps as given by a user: integers, strictly increasing, within [0, total]."""
    steps = list(steps)
    if not steps or any(not isinstance(s, int) or isinstance(s, bool) for s in steps):
        raise LlmdynError(f"checkpoint steps must be a non-empty list of ints, got {steps!r}")
    if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
        raise LlmdynError(f"checkpoint steps must be strictly increasing, got {steps}")
    if steps[0] < 0 or steps[-1] > total:
        raise LlmdynError(f"checkpoint steps must lie in [0, {total}], got {steps}")
    return steps
