"""What each checkpoint of a training run looks like: coupling, regularity, norms (paper A §5.3).

One `CheckpointProfile` per checkpoint holds per-prompt values, so every curve over training
can carry an interval over prompts. Coupling is the depth coupling of the last token (paper A
§3.1, eq. 14); trajectories follow the papers' convention that the final norm is part of the
last block (paper A eq. 7), unless ``last_point="block_output"``. The whole-trajectory LSS and
expodistance are kept at both ends as well: in a model of a few blocks the final-norm step is a
large part of the trajectory.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore
from llmdyn.coupling.default_k import PAPER_K
from llmdyn.coupling.depth import depth_coupling
from llmdyn.coupling.scores import diagonal_share, mean_diagonal_share, offdiagonal_mean
from llmdyn.models.loading import LoadedModel, collect_if_alive, load_model
from llmdyn.models.quiet import quiet_transformers
from llmdyn.phases.split import window_that_fits
from llmdyn.trace import (
    LAST_POINTS,
    LastPoint,
    check_last_point,
    trajectory,
    with_final_norm,
)
from llmdyn.training import suite as suites
from llmdyn.training.checkpoints import Checkpoint, by_run, suite_checkpoints
from llmdyn.trajectories import shape


@dataclass(frozen=True)
class CheckpointProfile:
    """One checkpoint measured on a list of prompts.

    Attributes:
        miscoupling: ``[prompt]`` mean miscoupling m̃(A^{ll'}) over l ≠ l' (paper A eq. 14).
        diagonal_share: ``[prompt]`` mean diagonal share 1 − m̃² over l ≠ l' (chance: about 1/k).
        miscoupling_map: ``[layer, layer]`` m̃ averaged over prompts (for adjacency graphs).
        diagonal_share_map: ``[prompt, layer, layer]`` the diagonal share 1 − m̃² of every pair.
        lss: ``[prompt]`` line-shape score of the whole trajectory, mean over tokens (eq. 15).
        expodistance: ``[prompt]`` expodistance of the whole trajectory, median over tokens
            (eq. 18; the median because one token with Avg α ≈ 0 has an unbounded value).
        norms: ``[prompt, layer+1]`` ‖x^l‖, mean over tokens.
        window_lss: ``[prompt, centre]`` LSS on windows of ``window`` points centred at
            `centres`, mean over tokens (Figs 27 right, 28).
        window_ed: ``[prompt, centre]`` expodistance on the same windows, median over tokens
            (Figs 29, 30 right).
        centres: ``[centre]`` the depths l at which a window fits.
        lss_by_end: ``[prompt, end]`` whole-trajectory LSS ending after the final norm and at
            the last block's output (the order of `trace.LAST_POINTS`).
        expodistance_by_end: ``[prompt, end]`` the same for the expodistance.
    """

    miscoupling: np.ndarray
    diagonal_share: np.ndarray
    miscoupling_map: np.ndarray
    lss: np.ndarray
    expodistance: np.ndarray
    norms: np.ndarray
    window_lss: np.ndarray
    window_ed: np.ndarray
    centres: np.ndarray
    diagonal_share_map: np.ndarray
    lss_by_end: np.ndarray
    expodistance_by_end: np.ndarray

    def whole(self, score: str, last_point: LastPoint) -> np.ndarray:
        """``[prompt]`` whole-trajectory "lss" or "expodistance" ending at ``last_point``."""
        if score not in ("lss", "expodistance") or last_point not in LAST_POINTS:
            raise LlmdynError(f"whole(score, last_point): score must be 'lss' or 'expodistance' "
                              f"and last_point one of {LAST_POINTS}, got {score!r}, "
                              f"{last_point!r}")
        return getattr(self, f"{score}_by_end")[:, LAST_POINTS.index(last_point)]

    def __post_init__(self) -> None:
        """Check that every per-prompt field has one row per prompt."""
        n = len(self.miscoupling)
        rows = {k: getattr(self, k).shape for k in ("diagonal_share", "lss", "expodistance",
                                                     "norms", "window_lss", "window_ed",
                                                     "diagonal_share_map",
                                                     "lss_by_end", "expodistance_by_end")}
        if any(dims[0] != n for dims in rows.values()) or \
                self.window_lss.shape[1:] != self.centres.shape:
            raise LlmdynError(f"CheckpointProfile: every field needs {n} prompt rows and "
                              f"{len(self.centres)} window centres, got {rows}")


def _trajectory_scores(model: LoadedModel, prompt: str, window: int,
                       last_point: LastPoint) -> dict[str, np.ndarray]:
    block = trajectory(model, prompt,
                       last_point="block_output").states.double()  # [layer+1, tok, d_model]
    ends = {"block_output": block, "final_norm": with_final_norm(model, block)}
    whole = {end: ends[end].transpose(0, 1).numpy()  # [tok, layer+1, d_model]
             for end in LAST_POINTS}
    x = whole[last_point]
    views = np.lib.stride_tricks.sliding_window_view(
        x, window, axis=1)  # [tok, centre, d_model, window]
    windows = np.swapaxes(views, -1, -2)  # [tok, centre, window, d_model]
    return {"lss": shape.line_shape_score(x).mean(),
            "expodistance": np.median(shape.expodistance(x)),
            "norms": shape.norms(x).mean(0),  # [layer+1]
            "window_lss": shape.line_shape_score(windows).mean(0),  # [centre]
            "window_ed": np.median(shape.expodistance(windows), 0),
            "lss_by_end": np.array([shape.line_shape_score(whole[e]).mean()
                                    for e in LAST_POINTS]),  # (end,)
            "expodistance_by_end": np.array([np.median(shape.expodistance(whole[e]))
                                             for e in LAST_POINTS])}


def measure_checkpoint(model: LoadedModel, prompts: Sequence[str], *, k: int, window: int = 3,
                       last_point: LastPoint = "final_norm",
                       store: ResultStore | None = None) -> CheckpointProfile:
    """Coupling and trajectory shape of one model on ``prompts``, cached per prompt.

    Args:
        model: the checkpoint, loaded.
        prompts: the texts (the same for every checkpoint).
        k: top singular vectors in the coupling matrices.
        window: odd number of points per window (cut to the model's depth by `window_that_fits`).
        last_point: ``"final_norm"`` (the papers') or ``"block_output"``: where the
            trajectories end and what the coupling's last block includes.
        store: results cache (None: compute without caching).
    """
    if isinstance(prompts, str) or not prompts:
        raise LlmdynError("prompts must be a non-empty list of texts")
    check_last_point(last_point)
    # paper A's whole trajectories end at x^L (where `last_point` says): windows may hold it
    w = window_that_fits(window, model.n_layers, include_last=True)
    # the coupling's last block ends where the trajectories do (its cache key holds last_point)
    coupling = depth_coupling(model, prompts, k=k, store=store, last_point=last_point)

    def compute(prompt: str) -> dict[str, np.ndarray]:
        return _trajectory_scores(model, prompt, w, last_point)

    params = {"window": w, "last_point": last_point, "dtype": "float64", "ends": "both"}
    scores = (store.map("training_profile", params, list(prompts), compute, progress=False)
              if store is not None else [compute(p) for p in prompts])
    stack = {key: np.stack([np.asarray(s[key]) for s in scores]) for key in scores[0]}
    shares = [diagonal_share(c.miscoupling) for c in coupling]
    share_map = np.stack(shares)  # [prompt, layer, layer]
    return CheckpointProfile(
        miscoupling=np.array([offdiagonal_mean(c.miscoupling) for c in coupling]),
        diagonal_share=np.array([mean_diagonal_share(c.miscoupling) for c in coupling]),
        diagonal_share_map=share_map,
        miscoupling_map=np.mean([c.miscoupling for c in coupling], 0),
        centres=np.arange(w // 2, model.n_layers + 1 - w // 2), **stack)


def measure_checkpoints(checkpoints: Sequence[Checkpoint], prompts: Sequence[str], *, k: int,
                        window: int = 3, last_point: LastPoint = "final_norm",
                        device: str = "cpu", progress: bool = True
                        ) -> dict[str, CheckpointProfile]:
    """`measure_checkpoint` for every checkpoint, one model in memory at a time.

    Returns:
        Profiles keyed by ``Checkpoint.spec``.
    """
    out = {}
    for c in tqdm(checkpoints, desc="checkpoints", unit="ckpt", disable=not progress):
        with quiet_transformers():
            model = load_model(c.spec, device=device)
        store = ResultStore(model.model_id, provenance=model.identity)
        out[c.spec] = measure_checkpoint(model, prompts, k=k, window=window,
                                         last_point=last_point, store=store)
        weights = weakref.ref(model.hf)
        del model, store
        collect_if_alive(weights)
    return out


def half_rise_step(steps: Sequence[int], values: Sequence[float]) -> float:
    """First step at which ``values`` has covered half its change from the first to the last.

    Used to compare when coupling rises and when the loss falls: both are read on the same
    checkpoints. Linear interpolation between checkpoints; NaN if there is no change.
    """
    steps, values = np.asarray(steps, float), np.asarray(values, float)
    if len(steps) != len(values) or len(steps) < 2:
        raise LlmdynError(f"need matching steps and values with >= 2 points, got "
                          f"{len(steps)} and {len(values)}")
    change = values[-1] - values[0]
    if change == 0 or not np.isfinite(change):
        return float("nan")
    progress = (values - values[0]) / change  # 0 at the start, 1 at the end
    i = int(np.argmax(progress >= 0.5))
    if i == 0:
        return float(steps[0])
    t = (0.5 - progress[i - 1]) / (progress[i] - progress[i - 1])
    return float(steps[i - 1] + t * (steps[i] - steps[i - 1]))


@dataclass(frozen=True)
class RunSeries:
    """One run's checkpoints stacked in step order (the x axis of every figure over training).

    Attributes:
        steps: ``[ckpt]`` optimizer updates.
        tokens: ``[ckpt]`` training tokens seen (NaN where unknown).
        heldout_loss: ``[ckpt]`` nats per token on the held-out split (NaN where unknown).
        train_loss: ``[ckpt]`` the same on a fixed slice of the training split.
        params: parameter count of the run's model (0 where unknown).
        profiles: the `CheckpointProfile` of each checkpoint, in step order.
    """

    steps: np.ndarray
    tokens: np.ndarray
    heldout_loss: np.ndarray
    train_loss: np.ndarray
    params: int
    profiles: tuple[CheckpointProfile, ...]

    def stack(self, field: str) -> np.ndarray:
        """One profile field over checkpoints: ``[ckpt, prompt, ...]``."""
        return np.stack([getattr(p, field) for p in self.profiles])

    @property
    def n_layers(self) -> int:
        """Blocks of the run's model."""
        return self.profiles[0].miscoupling_map.shape[0]

    def window_at(self, field: str, depth: int) -> np.ndarray:
        """A windowed score at one window centre over checkpoints: ``[ckpt, prompt]``."""
        centres = list(self.profiles[0].centres)
        if depth not in centres:
            raise LlmdynError(f"no window is centred at depth {depth}; centres: {centres}")
        return self.stack(field)[:, :, centres.index(depth)]

    def at(self, step: int) -> CheckpointProfile:
        """The profile of one saved step."""
        index = np.flatnonzero(self.steps == step)
        if not len(index):
            raise LlmdynError(f"step {step} is not among this run's checkpoints "
                              f"{self.steps.tolist()}")
        return self.profiles[int(index[0])]


def run_series(checkpoints: Sequence[Checkpoint],
               profiles: dict[str, CheckpointProfile]) -> dict[str, RunSeries]:
    """Group measured checkpoints by run, each in step order."""
    runs = by_run(checkpoints)
    nan = float("nan")
    return {run: RunSeries(
        steps=np.array([c.step for c in cs]),
        tokens=np.array([c.tokens_seen if c.tokens_seen is not None else nan for c in cs],
                        dtype=float),
        heldout_loss=np.array([c.heldout_loss for c in cs]),
        train_loss=np.array([c.train_loss for c in cs]),
        params=int(cs[0].params or 0),
        profiles=tuple(profiles[c.spec] for c in cs)) for run, cs in runs.items()}


def spread_steps(steps: Sequence[int], n: int = 4) -> list[int]:
    """``n`` saved steps spread over training on a log scale: the first, the last, and between."""
    steps = sorted(set(int(s) for s in steps))
    if len(steps) <= n:
        return steps
    positions = np.log1p(steps)
    targets = np.linspace(positions[0], positions[-1], n)
    chosen = {steps[int(np.argmin(np.abs(positions - t)))] for t in targets}
    return sorted(chosen)


def depths_at(centres: Sequence[int], n_layers: int,
              fractions: Sequence[float] = (5 / 36, 15 / 36, 30 / 36)) -> list[int]:
    """Window centres nearest to fractions of depth (default: paper A Fig 28's 5, 15, 30 of 36).

    Returns distinct centres in increasing order (fewer when the model is shallow).
    """
    centres = np.asarray(centres)
    if not len(centres):
        raise LlmdynError("no window centre fits this model's depth")
    return sorted({int(centres[np.argmin(np.abs(centres - f * n_layers))]) for f in fractions})


def measure_suite(suite: str | Sequence[str], *, root: str | Path | None = None,
                  steps: Sequence[int] | None = None, prompts: Sequence[str] | None = None,
                  n_prompts: int = 16, passage_chars: int = 240, seed: int = 0, k: int = PAPER_K,
                  window: int = 3, last_point: LastPoint = "final_norm", device: str = "cpu"
                  ) -> tuple[list[Checkpoint], list[str], dict[str, RunSeries]]:
    """Train what is missing of a named suite, then measure every checkpoint on held-out text.

    Chapters 08 and 09 start here. A list of checkpoint specs (local or hub revisions) is
    measured as given, on passages from the default suite's held-out documents.

    Returns:
        (checkpoints, the passages measured, the runs in step order).
    """
    if isinstance(suite, str):  # finished runs are skipped, killed runs resume
        suites.train_suite(suite, root, device=device)
    ckpts = suite_checkpoints(suite, root=root, steps=steps)
    texts = list(prompts) if prompts else suites.heldout_prompts(
        suite if isinstance(suite, str) else "default", n_prompts, chars=passage_chars, seed=seed)
    profiles = measure_checkpoints(ckpts, texts, k=k, window=window, last_point=last_point,
                                   device=device)
    return ckpts, texts, run_series(ckpts, profiles)
