"""bench/training.py: the MFU arithmetic and its report (no timing in tests)."""

import importlib.util

import pytest

from llmdyn.runner.build import REPO
from llmdyn.training.suite import SUITES

spec = importlib.util.spec_from_file_location("bench_training", REPO / "bench" / "training.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_mfu_is_model_flops_over_peak():
    suite = SUITES["default"]
    rows = [{"size": s, "layers": 2, "d_model": 128, "s_per_update": t,
             "tokens_per_s": suite.tokens_per_step / t, "flops_per_token_6n": 6e6,
             "flops_per_token_palm": 7e6} for s, t in (("xs", 0.1), ("s", 0.2), ("m", 0.4))]
    out = bench.report(rows, gflops=100.0, suite=suite)
    xs = out[0]
    assert xs["mfu_6n"] == pytest.approx(6e6 * 1024 / 0.1 / 100e9)
    assert xs["mfu_palm"] == pytest.approx(7e6 * 1024 / 0.1 / 100e9)
    whole = out[-1]
    # runs xs, s, m, s: 512 updates each, weighted by time
    seconds = 512 * (0.1 + 0.2 + 0.4 + 0.2)
    assert whole["predicted_train_s"] == pytest.approx(seconds)
    assert whole["mfu_6n"] == pytest.approx(4 * 512 * 1024 * 6e6 / seconds / 100e9)
    text = bench.markdown({"machine": "x", "threads": 2, "gemm_gflops": 100.0,
                           "suite": "default", "batch_size": 8, "seq_len": 128, "rows": out})
    assert "| xs | 2 × 128 | 0.100 |" in text and "whole suite" in text


def test_vit_mfu_and_grid_time():
    from llmdyn.vision.grids import GRIDS

    grid = GRIDS["default"]
    row = {"grid": "default", "depth": 6, "d_model": 64, "tokens": 17, "batch_size": 128,
           "s_per_update": 0.1, "flops_per_image": 5e7}
    out = bench.vit_report(row, gflops=100.0, grid=grid)
    assert out["images_per_s"] == pytest.approx(1280)
    assert out["mfu"] == pytest.approx(5e7 * 1280 / 100e9)
    assert out["predicted_grid_s"] == pytest.approx(len(grid.runs) * grid.steps * 0.1)
    text = bench.markdown({"machine": "x", "threads": 2, "gemm_gflops": 100.0, "suite": "default",
                           "batch_size": 8, "seq_len": 128, "rows": [], "vit": out})
    assert "ViT grid `default`" in text and "0.100 s per update" in text
