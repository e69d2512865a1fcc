"""Grids of vision transformers over stochastic depth × weight decay (paper A §3.4, Figs 6, 10).

Paper A trains 64 DeiT-Tiny ViTs (width 192, depth 12, 3 heads) on CIFAR-10 with the DeiT
recipe, varying the stochastic-depth (SD) rate over {0, 0.05, 0.1, 0.3} and the weight decay
from 0.005 to 0.2. A grid here is the same design scaled to a CPU: a smaller ViT, fewer steps,
one seed, on Fashion-MNIST (`llmdyn.vision.images`). Training goes through the model-agnostic loop
of `llmdyn.training.loop` (resumable, idempotent, bitwise deterministic on CPU), as the
language-model suite does; only the task differs (`ImageTask`).

DeiT's optimiser, scaled: AdamW, learning rate 5e-4 · batch/512 in DeiT (here a fixed peak that
suits the small model), linear warm-up then cosine decay, betas (0.9, 0.999), label smoothing
0.1. DeiT's heavy augmentation (RandAugment, Mixup, CutMix, random erasing, repeated
augmentation) is left out: at a few hundred steps it slows learning more than it regularises.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from llmdyn import LlmdynError
from llmdyn.core.checks import check_root, torch_device
from llmdyn.core.paths import results_root
from llmdyn.core.store import safe_name
from llmdyn.training import loop as training
from llmdyn.training.schedule import Schedule, check_steps
from llmdyn.vision.images import ImageData, load_images
from llmdyn.vision.vit import ViT, ViTShape


@dataclass(frozen=True)
class VitRun:
    """One ViT of a grid: a cell (stochastic-depth rate, weight decay) and a seed in it."""

    drop_path: float
    weight_decay: float
    seed: int = 0  # the replicate within the cell

    @property
    def cell(self) -> str:
        """The cell's name, e.g. ``sd0.1-wd0.05`` (the same for every seed of the cell)."""
        return f"sd{self.drop_path:g}-wd{self.weight_decay:g}"

    @property
    def name(self) -> str:
        """Directory name, e.g. ``sd0.1-wd0.05-seed0``."""
        return f"{self.cell}-seed{self.seed}"

    @property
    def init_seed(self) -> int:
        """The seed of the initial weights, stochastic-depth masks and image order.

        Derived from the cell and the seed, so no two ViTs of a grid share initial weights or
        image order: every ViT is an independent draw, as the between/within-cell ANOVA and
        the bootstrap over seeds assume (`llmdyn.stats.anova`, `llmdyn.stats.replicates`).
        Sharing them across cells (common random numbers) would tie seed 0 of every cell
        together.
        """
        key = [self.seed, round(self.drop_path * 1e6), round(self.weight_decay * 1e6)]
        return int(np.random.SeedSequence(key).generate_state(1)[0])


@dataclass(frozen=True)
class VitGrid:
    """A grid of ViTs sharing data, architecture, schedule and checkpoint steps."""

    name: str
    drop_paths: tuple[float, ...]
    weight_decays: tuple[float, ...]
    shape: ViTShape = ViTShape()
    seeds: tuple[int, ...] = (0,)
    steps: int = 200  # optimizer updates per run
    batch_size: int = 128
    lr: float = 2e-3  # peak learning rate
    warmup_fraction: float = 0.1
    label_smoothing: float = 0.1  # DeiT: 0.1
    n_train: int | None = None  # None: every training image; else the first n
    n_eval: int = 1000  # training images for train_loss (fixed set)
    n_test: int | None = None  # None: the whole test set for heldout_loss and test_accuracy
    checkpoints: tuple[int, ...] | None = None  # None: the final step only
    dataset: str = "fashion-mnist"
    device: str = "cpu"
    note: str = ""

    def __post_init__(self) -> None:
        """Check rates, decays and steps."""
        if not self.drop_paths or not self.weight_decays:
            raise LlmdynError(f"grid {self.name!r} needs SD rates and weight decays")
        if any(not 0 <= r < 1 for r in self.drop_paths) or min(self.weight_decays) < 0:
            raise LlmdynError(f"grid {self.name!r}: SD rates must be in [0, 1) and weight decays "
                              f">= 0, got {self.drop_paths}, {self.weight_decays}")
        check_steps(self.checkpoint_steps(), self.steps)
        if self.checkpoint_steps()[-1] != self.steps:  # the measured model is the final one
            raise LlmdynError(f"grid {self.name!r}: checkpoints must include the final step "
                              f"{self.steps}, got {self.checkpoint_steps()}")

    @property
    def runs(self) -> tuple[VitRun, ...]:
        """Every (SD rate, weight decay, seed), SD rate slowest."""
        return tuple(VitRun(r, wd, s) for r in self.drop_paths for wd in self.weight_decays
                     for s in self.seeds)

    def checkpoint_steps(self) -> list[int]:
        """Steps saved by every run: the end unless given.

        Each checkpoint costs an evaluation on the whole test set; the untrained state needs no
        checkpoint, since `llmdyn.vision.coupling` rebuilds it from the seed.
        """
        return list(self.checkpoints) if self.checkpoints is not None else [self.steps]


PAPER_WEIGHT_DECAYS = (0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.2)  # Fig 10
PAPER_DROP_PATHS = (0.0, 0.05, 0.1, 0.3)  # Fig 6a

SCALED_WEIGHT_DECAYS = (0.125, 0.5, 1.0, 5.0)  # 25 × (0.005, 0.02, 0.04, 0.2): see GRIDS

GRIDS: dict[str, VitGrid] = {
    # The default grid overfits: 1,000 training images for 51 epochs. Its weight decays are four
    # of Fig 10's × 25, so that over its 400 updates decay alone shrinks a weight by what the
    # paper's value does over the paper grid's 20,000 (`decay_factor`: 0.95, 0.82, 0.67, 0.13).
    "default": VitGrid(
        "default", PAPER_DROP_PATHS, SCALED_WEIGHT_DECAYS,
        shape=ViTShape(d_model=32, depth=6, heads=2), seeds=(0, 1), steps=400, n_train=1000,
        note="4 SD rates × 4 weight decays × 2 seeds = 32 ViTs of width 32, depth 6, each 400 "
             "updates of 128 of the first 1,000 training images (51 epochs); about 5 minutes "
             "on 2 idle CPU cores"),
    "paper": VitGrid(
        "paper", PAPER_DROP_PATHS, PAPER_WEIGHT_DECAYS,
        shape=ViTShape(image_size=28, channels=1, patch=4, d_model=192, depth=12, heads=3),
        seeds=(0, 1), steps=20_000, batch_size=256, lr=1e-3, warmup_fraction=0.05,
        device="cuda", note="DeiT-Tiny's shape (192, 12, 3 heads), Fig 10's 8 weight decays, "
                            "two seeds: 64 ViTs; for a GPU"),
    "tiny": VitGrid(
        "tiny", (0.0, 0.3), (0.01, 0.1), shape=ViTShape(d_model=16, depth=3, heads=2),
        seeds=(0, 1), steps=6, batch_size=16, n_train=256, n_eval=32, n_test=64,
        checkpoints=(0, 3, 6),
        note="for tests: 2 × 2 cells × 2 seeds of tiny ViTs, a few steps on a slice of the data"),
}


def get_grid(name: str) -> VitGrid:
    """A grid from `GRIDS`, with a clear error for an unknown name."""
    if name not in GRIDS:
        raise LlmdynError(f"unknown ViT grid {name!r}; known grids: {', '.join(GRIDS)}")
    return GRIDS[name]


def grid_data(grid: VitGrid, dataset: str | None = None) -> ImageData:
    """The grid's images (or ``dataset``'s), cut to ``n_train`` and ``n_test``."""
    data = load_images(dataset or grid.dataset)
    n_train = grid.n_train or len(data.train_y)
    n_test = grid.n_test or len(data.test_y)
    return dataclasses.replace(data, train_x=data.train_x[:n_train], train_y=data.train_y[:n_train],
                               test_x=data.test_x[:n_test], test_y=data.test_y[:n_test])


def shape_for(grid: VitGrid, data: ImageData) -> ViTShape:
    """The grid's ViT fitted to the images: their channels and side, and a patch that tiles them.

    The patch is the largest divisor of the side not above the grid's (7 on 28×28 gives 16
    patches; on CIFAR's 32×32 it becomes 4, on the 8×8 digits 4).
    """
    c, h, w = data.shape
    if h != w:
        raise LlmdynError(f"{data.name} images are {h}×{w}; the ViT takes square images")
    patch = max(p for p in range(1, min(grid.shape.patch, h) + 1) if h % p == 0)
    return dataclasses.replace(grid.shape, image_size=h, channels=c, patch=patch,
                               n_classes=len(data.classes))


class ImageTask:
    """Image classification with a fixed, seeded order of training images (a `TrainTask`)."""

    def __init__(self, data: ImageData, grid: VitGrid, seed: int) -> None:
        self.data, self.grid, self.seed = data, grid, seed
        self.train_x, self.train_y = torch.from_numpy(data.train_x), torch.from_numpy(data.train_y)
        self.test_x, self.test_y = torch.from_numpy(data.test_x), torch.from_numpy(data.test_y)
        self.tokens_per_step = grid.batch_size  # images per update
        self._perm: tuple[int, np.ndarray] | None = None

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Images and labels of update ``step``: epoch e is a permutation seeded by (seed, e)."""
        n, b = len(self.train_y), self.grid.batch_size
        index = [self._permuted(*divmod(i, n)) for i in range(step * b, (step + 1) * b)]
        return self.train_x[index], self.train_y[index]

    def _permuted(self, epoch: int, pos: int) -> int:
        if self._perm is None or self._perm[0] != epoch:
            self._perm = (epoch, np.random.default_rng([self.seed, epoch]).permutation(
                len(self.train_y)))
        return int(self._perm[1][pos])

    def loss(self, model: torch.nn.Module, batch) -> torch.Tensor:
        """Cross-entropy with DeiT's label smoothing."""
        x, y = (t.to(self.grid.device) for t in batch)
        return F.cross_entropy(model(x), y, label_smoothing=self.grid.label_smoothing)

    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """Plain cross-entropy on fixed training images and on the test set; test accuracy."""
        train = self._logits(model, self.train_x[: self.grid.n_eval])
        test = self._logits(model, self.test_x)
        return {"train_loss": float(F.cross_entropy(train, self.train_y[: self.grid.n_eval])),
                "heldout_loss": float(F.cross_entropy(test, self.test_y)),
                "test_accuracy": float((test.argmax(-1) == self.test_y).float().mean())}

    def _logits(self, model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():  # chunks of 1,000 images bound memory
            return torch.cat([model(c.to(self.grid.device)).cpu() for c in x.split(1000)])

    def save_model(self, model: torch.nn.Module, directory: Path) -> None:
        """``model.safetensors`` and ``config.json`` (the shape and SD rate)."""
        save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                  directory / training.WEIGHTS)
        (directory / "config.json").write_text(json.dumps(
            {"shape": dataclasses.asdict(model.shape),
             "drop_path_rate": model.blocks[-1].drop_path_rate}, indent=1))

    def load_weights(self, model: torch.nn.Module, directory: Path) -> None:
        """Weights from a checkpoint directory."""
        model.load_state_dict(load_file(directory / training.WEIGHTS))


def final_checkpoint(run_dir: str | Path) -> Path:
    """The checkpoint of a finished run at its grid's final step, verified.

    Never the newest step that happens to exist: with that final step missing or corrupt,
    this refuses, and `llmdyn train-vit` rebuilds it.
    """
    run_dir = Path(run_dir)
    try:
        final = int(json.loads((run_dir / "run.json").read_text())["config"]["steps"])
    except (OSError, ValueError, KeyError, TypeError):
        raise LlmdynError(f"run {run_dir} is not trained (no readable run.json); train its grid "
                          "with `llmdyn train-vit --grid <grid>`") from None
    path = run_dir / f"step{final}"
    try:
        training.read_metrics(path)
    except LlmdynError as err:
        raise LlmdynError(f"run {run_dir}: its final checkpoint step{final} is missing or "
                          f"corrupt ({str(err).rsplit('; ', 1)[-1]}); run `llmdyn train-vit "
                          "--grid <grid>` again: it rebuilds it by retraining the run from its "
                          "newest checkpoint that resumes exactly (usually step 0)") from None
    return path


def load_vit(directory: str | Path, device: str = "cpu") -> ViT:
    """A saved ViT checkpoint (``config.json`` + ``model.safetensors``), in eval mode."""
    directory = Path(directory)
    try:
        config = json.loads((directory / "config.json").read_text())
    except (OSError, ValueError) as err:
        raise LlmdynError(f"{directory} is not a ViT checkpoint ({err}); train the grid with "
                          "`llmdyn train-vit`") from None
    model = ViT(ViTShape(**config["shape"]), config["drop_path_rate"])
    model.load_state_dict(load_file(directory / training.WEIGHTS))
    return model.to(device).eval()


def run_config(run: VitRun, grid: VitGrid, data: ImageData) -> dict[str, Any]:
    """The JSON that identifies a run (a resume must match it)."""
    shape = shape_for(grid, data)
    keys = ("steps", "batch_size", "lr", "warmup_fraction", "label_smoothing", "n_eval")
    return {"run": run.name, "drop_path": run.drop_path, "weight_decay": run.weight_decay,
            "seed": run.seed, "init_seed": run.init_seed, "shape": dataclasses.asdict(shape),
            **{k: getattr(grid, k) for k in keys}, "checkpoints": grid.checkpoint_steps(),
            "dataset": data.name, "data_sha256": data.digest, "n_train": len(data.train_y),
            "n_test": len(data.test_y), "architecture": "vit"}


def schedule_for(grid: VitGrid, weight_decay: float) -> Schedule:
    """DeiT's AdamW schedule at the grid's length: warm-up, cosine to 1 % of the peak."""
    return Schedule(
        steps=grid.steps, lr=grid.lr, warmup=max(1, round(grid.warmup_fraction * grid.steps)),
        min_lr_ratio=0.01, weight_decay=weight_decay, betas=(0.9, 0.999), grad_clip=1.0)


def decay_factor(grid: VitGrid, weight_decay: float) -> float:
    """How much AdamW's decoupled decay alone shrinks a weight over a run: Π_t (1 − η_t λ).

    ≈ exp(−λ Σ_t η_t); the gradient steps come on top. It says whether a weight decay has had
    time to act: DeiT's 300 epochs sum to far more learning rate than a few hundred updates.
    """
    sched = schedule_for(grid, weight_decay)
    return float(np.prod([1 - sched.lr_at(t) * weight_decay for t in range(grid.steps)]))


def train_vit(run: VitRun, grid: VitGrid, root: Path, data: ImageData, *,
              progress: bool = True) -> training.RunResult:
    """Train (or resume, or skip) one ViT into ``<root>/<run name>/``."""
    torch.manual_seed(run.init_seed)
    model = ViT(shape_for(grid, data), run.drop_path).to(grid.device)
    schedule = schedule_for(grid, run.weight_decay)
    facts = {"params": sum(p.numel() for p in model.parameters()), "dataset": data.name}
    with training.run_lock(Path(root) / run.name):  # a second trainer of it waits, then skips
        return training.train(model, ImageTask(data, grid, run.init_seed), Path(root) / run.name,
                              schedule=schedule, checkpoints=grid.checkpoint_steps(),
                              config=run_config(run, grid, data), facts=facts, desc=run.name,
                              progress=progress)


def train_grid(grid: VitGrid | str, root: str | Path | None = None, *,
               runs: Sequence[str] | None = None, dataset: str | None = None,
               device: str | None = None, progress: bool = True) -> list[training.RunResult]:
    """Train every ViT of a grid (or the named ``runs``) into ``root`` (`default_root`).

    Finished runs are skipped and killed ones resume, as in `llmdyn.training.loop`.
    """
    grid = get_grid(grid) if isinstance(grid, str) else grid
    if device is not None:
        grid = dataclasses.replace(grid, device=torch_device(device))
    torch_device(grid.device, f"grid {grid.name!r}'s device")  # before any work
    if grid.device.startswith("cuda"):  # cuBLAS is deterministic only with a fixed workspace
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    unknown = set(runs or ()) - {r.name for r in grid.runs}
    if unknown:
        raise LlmdynError(f"grid {grid.name!r} has no run {sorted(unknown)}; its runs: "
                          f"{', '.join(r.name for r in grid.runs)}")
    root = Path(root) if root is not None else default_root(grid, dataset)
    check_root(root)
    data = grid_data(grid, dataset)
    return [train_vit(r, grid, root, data, progress=progress) for r in grid.runs
            if runs is None or r.name in runs]


def default_root(grid: VitGrid, dataset: str | None = None) -> Path:
    """``<results root>/vit/<grid>/<data set>``: runs on different data never share a directory.

    The results root is ``$LLMDYN_RESULTS``, else ``results``.
    """
    name = dataset or grid.dataset
    return results_root() / "vit" / grid.name / safe_name(Path(name).name or name)

