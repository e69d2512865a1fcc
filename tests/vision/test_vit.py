"""ViTs: Jacobians against finite differences, the tiny grid's training, its coupling."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from llmdyn import LlmdynError
from llmdyn.jacobians.blocks import record_block_calls, residual_map, stack_jacobians
from llmdyn.training import loop as training
from llmdyn.vision import coupling as vit_coupling
from llmdyn.vision import grids as vit_grids
from llmdyn.vision.vit import ViT, ViTShape, drop_path
from tests.vision.test_images import write_fashion_mnist

TINY = vit_grids.GRIDS["tiny"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Fake Fashion-MNIST files: the test needs no Debian package."""
    return str(write_fashion_mnist(tmp_path_factory.mktemp("fmnist"), n_train=300, n_test=80))


@pytest.fixture(scope="module")
def trained(tmp_path_factory, dataset):
    root = tmp_path_factory.mktemp("vit")
    return root, vit_grids.train_grid(TINY, root, dataset=dataset, progress=False)


def _fd_rows(f, x, t1, t2, h=1e-4):
    """∂f(X)_{t2}/∂x_{t1} by central differences, Richardson-extrapolated: ``[d_out, d_in]``."""

    def central(step):
        cols = []
        for i in range(x.shape[1]):
            e = torch.zeros_like(x)
            e[t1, i] = step
            with torch.no_grad():
                cols.append((f(x + e)[t2] - f(x - e)[t2]) / (2 * step))
        return torch.stack(cols, 1)

    return (4 * central(h / 2) - central(h)) / 3


def test_vit_jacobians_match_finite_differences():
    """Float64 throughout (the ViT's LayerNorm and softmax included): with h = 1e-4 the
    extrapolated truncation error is O(h^4) ~ 1e-16 and rounding O(eps64 / h) ~ 1e-12, so a
    relative error of 1e-8 leaves a wide margin."""
    torch.manual_seed(0)
    model = ViT(ViTShape(d_model=16, depth=3, heads=2), drop_path_rate=0.3).double().eval()
    image = torch.randn(1, 28, 28, dtype=torch.float64)
    calls = record_block_calls(model.blocks, lambda: model(image[None]))
    pairs = [(0, 0), (5, 0), (0, 5), (7, 7)]  # t1 > t2 too: attention is bidirectional
    jac = stack_jacobians(model.blocks, calls, [0, 2], pairs)  # (layer, pair, d, d)
    for i, b in enumerate([0, 2]):
        f = residual_map(model.blocks[b], calls[b])
        for p, (t1, t2) in enumerate(pairs):
            ref = _fd_rows(f, calls[b].hidden, t1, t2)
            assert ref.norm() > 1e-3  # every pair is non-zero: no causal mask
            assert (jac[i, p] - ref).norm() / ref.norm() < 1e-8, (b, t1, t2)
    cls = vit_coupling.cls_jacobians(model, image, last_point="block_output")
    assert cls.shape == (3, 16, 16) and torch.equal(cls[[0, 2]], jac[:, 0])


def test_jacobians_refuse_training_mode():
    model = ViT(ViTShape(d_model=16, depth=2, heads=2), 0.1)
    with pytest.raises(LlmdynError, match="training mode"):
        vit_coupling.cls_jacobians(model, torch.zeros(1, 28, 28))


def test_drop_path_drops_whole_samples_and_keeps_the_mean():
    torch.manual_seed(0)
    x = torch.ones(4000, 3, 2)
    y = drop_path(x, 0.25, training=True)
    kept = y[:, 0, 0] != 0
    assert torch.all(y[kept] == 1 / 0.75) and torch.all(y[~kept] == 0)
    assert abs(kept.float().mean().item() - 0.75) < 0.03  # binomial sd 0.007
    assert torch.equal(drop_path(x, 0.25, training=False), x)
    rates = [b.drop_path_rate for b in ViT(ViTShape(depth=3, d_model=16), 0.3).blocks]
    assert rates == pytest.approx([0.0, 0.15, 0.3])  # DeiT: linear over depth


def test_tiny_grid_trains_once_and_learns(trained, dataset):
    root, results = trained
    assert [r.directory.name for r in results] == [r.name for r in TINY.runs]
    assert len(results) == 8 and all(r.steps == [0, 3, 6] for r in results)
    first = training.read_metrics(results[0].directory / "step0")
    last = training.read_metrics(results[0].directory / "step6")
    assert last["train_loss"] < first["train_loss"] and 0 <= last["test_accuracy"] <= 1
    before = {p: p.stat().st_mtime_ns for p in root.rglob("model.safetensors")}
    vit_grids.train_grid(TINY, root, dataset=dataset, progress=False)
    assert before == {p: p.stat().st_mtime_ns for p in root.rglob("model.safetensors")}
    config = json.loads((results[0].directory / "run_config.json").read_text())
    assert config["dataset"] == "Fashion-MNIST" and config["n_train"] == TINY.n_train


def test_the_grid_record_names_every_run_and_trains_nothing_again(trained, dataset):
    """The workflow's one job per grid (rule vit_grid): a finished grid is only recorded."""
    import hashlib

    from llmdyn.cli.job import main

    root, results = trained
    before = {p: p.stat().st_mtime_ns for p in root.rglob("model.safetensors")}
    assert main(["vit-grid", "tiny", dataset, str(root), str(root / "grid.json")]) == 0
    assert before == {p: p.stat().st_mtime_ns for p in root.rglob("model.safetensors")}
    summary = json.loads((root / "grid.json").read_text())
    assert summary["dataset"] == dataset
    assert summary["grid"] == "tiny" and list(summary["runs"]) == [r.name for r in TINY.runs]
    for r in results:
        want = hashlib.sha256((r.directory / "run.json").read_bytes()).hexdigest()
        assert summary["runs"][r.directory.name] == want


def test_tiny_grid_is_bitwise_deterministic_and_resumes(trained, tmp_path, dataset, monkeypatch):
    root, _ = trained
    run = TINY.runs[-1].name  # SD 0.3: the drop masks come from the restored RNG state
    real_batch = vit_grids.ImageTask.batch

    def dies_at_step_4(self, step):
        if step == 4:
            raise KeyboardInterrupt  # killed between checkpoints 3 and 6
        return real_batch(self, step)

    monkeypatch.setattr(vit_grids.ImageTask, "batch", dies_at_step_4)
    with pytest.raises(KeyboardInterrupt):
        vit_grids.train_grid(TINY, tmp_path, runs=[run], dataset=dataset, progress=False)
    monkeypatch.setattr(vit_grids.ImageTask, "batch", real_batch)
    vit_grids.train_grid(TINY, tmp_path, runs=[run], dataset=dataset, progress=False)
    a = load_file(root / run / "step6" / training.WEIGHTS)
    b = load_file(tmp_path / run / "step6" / training.WEIGHTS)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_grid_coupling_table(trained, dataset):
    root, _ = trained
    g = vit_coupling.measure_grid(TINY, root, n_images=3, k=4, dataset=dataset, progress=False)
    assert list(g.table.run) == [r.name for r in TINY.runs]
    assert list(g.table.cell) == [r.cell for r in TINY.runs]
    for end, column in [("final_norm", "strength"), ("block_output", "strength_block_output")]:
        assert g.per_image[end].shape == (3, 8)
        assert np.all((g.per_image[end] > 0) & (g.per_image[end] <= 1))
        np.testing.assert_allclose(g.table[column], g.per_image[end].mean(0))
    assert not np.allclose(g.per_image["final_norm"], g.per_image["block_output"])
    again = vit_coupling.measure_grid(TINY, root, n_images=3, k=4, dataset=dataset,
                                      progress=False)  # from the cache: identical
    assert all(np.array_equal(again.per_image[e], g.per_image[e]) for e in g.per_image)
    with pytest.raises(LlmdynError, match="not trained"):
        vit_coupling.measure_grid(TINY, root / "empty", n_images=3, k=4, dataset=dataset)


def test_bad_grids_are_clear_errors():
    with pytest.raises(LlmdynError, match="unknown ViT grid 'nope'"):
        vit_grids.get_grid("nope")
    with pytest.raises(LlmdynError, match="SD rates must be in"):
        vit_grids.VitGrid("x", (1.2,), (0.1,))
    with pytest.raises(LlmdynError, match="not divisible by 5 heads"):
        ViTShape(d_model=64, heads=5)


def test_chapter_parameters():
    from llmdyn.book.params import VitParams

    p = VitParams.from_cell({"grid": "tiny", "dataset": "digits", "k": None})
    assert p.k is None and p.n_images == 24 and p.fixed_weight_decay == 1.0
    with pytest.raises(LlmdynError, match="'n_images' must be >= 3"):
        VitParams(n_images=2)
    with pytest.raises(LlmdynError, match="unknown notebook parameter 'gird'"):
        VitParams.from_cell({"gird": "tiny"})


def test_seeds_are_independent_across_cells(trained):
    """No two ViTs of a grid share initial weights (nor image order: the same seed drives it)."""
    root, _ = trained
    seeds = [r.init_seed for r in TINY.runs]
    assert len(set(seeds)) == len(seeds)
    first = [load_file(root / r.name / "step0" / training.WEIGHTS)["pos_embed"] for r in TINY.runs]
    assert all(not torch.equal(a, b) for i, a in enumerate(first) for b in first[i + 1:])
    assert TINY.runs[0].init_seed == vit_grids.VitRun(0.0, 0.01, 0).init_seed  # stable


def test_both_endpoints_match_each_convention():
    """The shared computation equals each convention computed alone; only the last block differs,
    and under "final_norm" it is the Jacobian of norm(block(x)) − x."""
    torch.manual_seed(0)
    model = ViT(ViTShape(d_model=16, depth=3, heads=2)).double().eval()
    image = torch.randn(1, 28, 28, dtype=torch.float64)
    both = vit_coupling.both_endpoints(model, image)
    for end in ("final_norm", "block_output"):
        assert torch.allclose(both[end], vit_coupling.cls_jacobians(model, image, last_point=end),
                              atol=1e-12)
    assert torch.equal(both["final_norm"][:2], both["block_output"][:2])
    assert not torch.allclose(both["final_norm"][2], both["block_output"][2])
    calls = record_block_calls(model.blocks, lambda: model(image[None]))
    f = residual_map(vit_coupling.counted_blocks(model)[2], calls[2])
    ref = _fd_rows(f, calls[2].hidden, 0, 0)
    assert (both["final_norm"][2] - ref).norm() / ref.norm() < 1e-8


def test_decay_factor_is_the_product_of_decoupled_shrinks():
    grid = vit_grids.VitGrid("x", (0.0,), (1.0,), steps=10, lr=0.1, warmup_fraction=0.1)
    sched = vit_grids.schedule_for(grid, 1.0)
    expected = np.prod([1 - 0.1 * sched.lr_at(t) / 0.1 * 1.0 for t in range(10)])
    assert vit_grids.decay_factor(grid, 1.0) == pytest.approx(expected)
    assert vit_grids.decay_factor(grid, 0.0) == 1.0
    default = vit_grids.GRIDS["default"]
    paper = vit_grids.GRIDS["paper"]
    for ours, theirs in zip(default.weight_decays, (0.005, 0.02, 0.04, 0.2), strict=True):
        # the default grid's weight decays shrink as much as the paper's over the paper grid
        assert vit_grids.decay_factor(default, ours) == pytest.approx(
            vit_grids.decay_factor(paper, theirs), abs=0.01)
