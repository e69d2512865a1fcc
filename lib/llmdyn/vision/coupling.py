"""Depth coupling of a ViT at its class token, over a grid of trained ViTs (paper A Figs 6, 10).

The Jacobians come from the same code as the language models' (`llmdyn.jacobians.full`): the ViT's
blocks and the arguments each received in a real forward pass are all it needs. Coupling is
read at the class token, position 0: the classifier sees only the final class token, as a
causal LM's next-token head sees only the last token, so that token's trajectory through the
blocks is the one whose linearisations decide the output. Attention is bidirectional, so the
class token's block Jacobian J_00 includes how the block's attention re-reads the token's own
state from every patch's point of view; `stack_jacobians` differentiates the whole block and
assumes no causal order.

Per image, the coupling score is paper A's mean depth-wise coupling: the mean over block pairs
l ≠ l′ of 1 − m̃(A_{l l′}) (eq. 14, `llmdyn.coupling.mean_strength`), with A from the
top-k singular vectors. A model's coupling is its mean over the same held-out test images.

Where the trajectory ends (``last_point``) follows the language-model chapters: by default the
ViT's final LayerNorm is part of the last block, f^L(X) = norm(block_L(X)) − X (paper A eq. 7),
as `llmdyn.jacobians.blocks.block_function` counts it; ``"block_output"`` ends at the last
block's output instead. Only the last block's Jacobian differs, so `measure_grid` computes the
other blocks once and keeps both endpoints.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore, content_hash
from llmdyn.coupling.default_k import coupling_k
from llmdyn.coupling.depth import DepthCoupling, coupling_from_jacobians
from llmdyn.coupling.scores import mean_strength
from llmdyn.jacobians.blocks import record_block_calls, stack_jacobians
from llmdyn.stats.bootstrap import bootstrap, mean
from llmdyn.stats.regression import ols_or_none
from llmdyn.trace import LAST_POINTS, LastPoint, check_last_point
from llmdyn.training import loop as training
from llmdyn.vision.grids import (
    VitGrid,
    default_root,
    final_checkpoint,
    get_grid,
    grid_data,
    load_vit,
    shape_for,
)
from llmdyn.vision.images import ImageData
from llmdyn.vision.vit import ViT

CLS = 0  # position of the class token


def counted_blocks(model: ViT, last_point: LastPoint = "final_norm") -> list:
    """The blocks as the papers count them: under ``"final_norm"`` the last includes the final norm.

    Each is a callable ``[batch, tok, d_model] → [batch, tok, d_model]`` with the block's signature.
    """
    blocks = list(model.blocks)
    if check_last_point(last_point) == "final_norm":
        last = blocks[-1]
        blocks[-1] = lambda x, *args, **kwargs: model.norm(last(x, *args, **kwargs))
    return blocks


def cls_jacobians(model: ViT, image: torch.Tensor, layers: Sequence[int] | None = None, *,
                  last_point: LastPoint = "final_norm",
                  chunk_size: int | None = 2048) -> torch.Tensor:
    """J^l_{00} = ∂ f^l(X)_0 / ∂ x_0 of every block at the class token.

    Args:
        model: a ViT in eval mode (stochastic depth off).
        image: one image ``[channels, height, width]``, in the model's dtype.
        layers: 0-based blocks (None: all).
        last_point: ``"final_norm"`` (the LM chapters' convention: the last block's map
            includes the final LayerNorm) or ``"block_output"``.
        chunk_size: reverse products run at once.

    Returns:
        ``[layer, d_model, d_model]``.
    """
    if model.training:
        raise LlmdynError("the ViT is in training mode (stochastic depth active); call .eval()")
    layers = list(range(len(model.blocks))) if layers is None else list(layers)
    calls = record_block_calls(model.blocks, lambda: model(image[None]))
    jac = stack_jacobians(counted_blocks(model, last_point), calls, layers, [(CLS, CLS)],
                          chunk_size=chunk_size)
    return jac[:, 0]  # [layer, d_model, d_model]


def both_endpoints(model: ViT, image: torch.Tensor) -> dict[str, torch.Tensor]:
    """Class-token Jacobians ``[layer, d_model, d_model]`` under both ``last_point`` conventions.

    The blocks before the last are shared; only the last block is differentiated twice.
    """
    if model.training:
        raise LlmdynError("the ViT is in training mode (stochastic depth active); call .eval()")
    calls = record_block_calls(model.blocks, lambda: model(image[None]))
    plain = stack_jacobians(list(model.blocks), calls, range(len(model.blocks)),
                            [(CLS, CLS)])[:, 0]  # [layer, d_model, d_model]
    last = len(model.blocks) - 1
    normed = stack_jacobians(counted_blocks(model, "final_norm"), calls, [last],
                             [(CLS, CLS)])[:, 0]  # [1, d_model, d_model]
    return {"final_norm": torch.cat([plain[:last], normed]), "block_output": plain}


def image_coupling(model: ViT, image: torch.Tensor, k: int, *,
                   last_point: LastPoint = "final_norm") -> DepthCoupling:
    """Every depth-coupling score of one image's class-token Jacobians."""
    return coupling_from_jacobians(cls_jacobians(model, image, last_point=last_point).double(),
                                   k)


@dataclass(frozen=True)
class GridCoupling:
    """Coupling and accuracy of every run of a grid, at both ends of the trajectory.

    Attributes:
        table: one row per run: run, cell (its SD rate and weight decay), drop_path,
            weight_decay, seed, test_accuracy, heldout_loss, train_loss, strength (the mean
            coupling strength 1 − m̃ over images, the final norm in the last block) and
            strength_block_output (the same, ending at the last block's output), wall_s.
        per_image: ``{last_point: [image, run]}`` mean depth coupling per test image.
        dataset: the data set's name.
        k: the number of top singular vectors used.
    """

    table: pd.DataFrame
    per_image: dict[str, np.ndarray]
    dataset: str
    k: int


def _run_coupling(directory: Path, images: torch.Tensor, k: int, device: str) -> dict:
    ckpt = final_checkpoint(directory)
    metrics = training.read_metrics(ckpt)
    store = ResultStore(f"vit-{metrics['weights_sha256'][:16]}", root=directory.parent / "_cache",
                        provenance={"checkpoint": str(ckpt), "sha256": metrics["weights_sha256"]})
    params = {"k": k, "n_images": len(images),
              "images_sha": content_hash({"images": images.numpy()})[:16]}

    def compute():
        model = load_vit(ckpt, device).double()
        jac = [both_endpoints(model, im) for im in images.double().to(device)]
        return {end: np.array([mean_strength(coupling_from_jacobians(j[end], k).miscoupling)
                               for j in jac]) for end in LAST_POINTS}  # [image] each

    return {**store.cached("cls_coupling", params, "all", compute), **metrics}


def heldout_images(data: ImageData, n: int, seed: int) -> torch.Tensor:
    """``n`` held-out test images drawn with ``seed`` (the same for every run), float32."""
    if not 2 <= n <= len(data.test_y):
        raise LlmdynError(f"n_images must be in [2, {len(data.test_y)}], got {n}")
    pick = np.sort(np.random.default_rng(seed).choice(len(data.test_y), n, replace=False))
    return torch.from_numpy(data.test_x[pick])


def measure_grid(grid: VitGrid | str, root: str | Path | None = None, *, n_images: int = 32,
                 k: int | None = None, seed: int = 0, dataset: str | None = None,
                 device: str = "cpu", progress: bool = True) -> GridCoupling:
    """Final test accuracy and class-token coupling of every trained run of a grid.

    Runs must be trained (`llmdyn.vision.train_grid`); results are cached per checkpoint.
    ``k`` defaults to :func:`llmdyn.coupling.default_k.relative_k` (d_model // 8 below width 240:
    4 for the grid of width 32, 24 for DeiT-Tiny's 192).
    """
    from tqdm.auto import tqdm

    grid = get_grid(grid) if isinstance(grid, str) else grid
    root = Path(root) if root is not None else default_root(grid, dataset)
    data = grid_data(grid, dataset)
    d_model = shape_for(grid, data).d_model
    k = coupling_k(k, d_model)
    images = heldout_images(data, n_images, seed)
    rows, per_image = [], {end: [] for end in LAST_POINTS}
    for run in tqdm(grid.runs, desc=f"coupling {grid.name}", disable=not progress):
        done = root / run.name / "run.json"
        if not done.exists():
            raise LlmdynError(f"run {run.name} of grid {grid.name!r} is not trained ({done} "
                              f"missing); run `llmdyn train-vit --grid {grid.name}`")
        out = _run_coupling(root / run.name, images, k, device)
        for end in LAST_POINTS:
            per_image[end].append(out[end])
        rows.append({"run": run.name, "cell": run.cell, "drop_path": run.drop_path,
                     "weight_decay": run.weight_decay, "seed": run.seed,
                     "test_accuracy": out["test_accuracy"], "heldout_loss": out["heldout_loss"],
                     "train_loss": out["train_loss"],
                     "strength": float(np.mean(out["final_norm"])),
                     "strength_block_output": float(np.mean(out["block_output"])),
                     "wall_s": json.loads(done.read_text())["wall_s"]})
    return GridCoupling(pd.DataFrame(rows), {e: np.stack(v, 1) for e, v in per_image.items()},
                        data.name, k)


def trained_and_untrained(directory: str | Path, image: torch.Tensor, k: int, *,
                          seed: int = 0) -> dict[str, DepthCoupling]:
    """Class-token coupling of one trained ViT (its run directory) and of its untrained twin.

    The twin has the same shape, freshly initialised with ``seed``.
    """
    trained = load_vit(final_checkpoint(directory)).double()
    torch.manual_seed(seed)
    twin = ViT(trained.shape, trained.blocks[-1].drop_path_rate).double().eval()
    x = image.double()
    return {"untrained": image_coupling(twin, x, k), "trained": image_coupling(trained, x, k)}


def fits_by_sd(table: pd.DataFrame) -> dict[float, object]:
    """OLS of test accuracy on coupling for each SD rate (Fig 6a): ``{sd: LinearFit | None}``.

    None where there is nothing to fit (fewer than 3 runs, or coupling constant).
    """
    return {float(sd): ols_or_none(rows.strength, rows.test_accuracy)
            for sd, rows in table.groupby("drop_path")}


def run_intervals(per_image: np.ndarray, seed: int = 0) -> np.ndarray:
    """95 % bootstrap interval of each run's mean coupling over images: ``[image, run] → [2, run]``.

    The same image draws for every run (the images are shared), so the intervals are those of
    the paired comparison the claims make.
    """
    est = [bootstrap(mean, per_image[:, j], seed=seed) for j in range(per_image.shape[1])]
    return np.array([[e.lo for e in est], [e.hi for e in est]])


def example_run(table: pd.DataFrame, weight_decay: float, name: str | None = None) -> str:
    """``name`` if given (checked), else the run with the largest SD rate at ``weight_decay``."""
    if name:
        if name not in set(table.run):
            raise LlmdynError(f"example_run {name!r} is not a run of the grid; runs: "
                              f"{', '.join(table.run)}")
        return name
    rows = table[np.isclose(table.weight_decay, weight_decay)]
    if rows.empty:
        raise LlmdynError(f"no run with weight decay {weight_decay}; the grid's weight decays: "
                          f"{sorted(set(table.weight_decay))}")
    return str(rows.sort_values("drop_path").run.iloc[-1])
