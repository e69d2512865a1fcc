"""bench/training.py: the MFU arithmetic and its report (no timing in tests)."""

import importlib.util

import pytest

from llmdyn.runner.build import REPO
from llmdyn.training.suite import SUITES

spec = importlib.util.spec_from_file_location("bench_training", REPO / "bench" / "training.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


META = {"machine": "x", "threads": 1, "rounds": 5, "when": "2026-11-26T00:00:00+00:00",
        "load": [0.5, 0.7], "suite": "default", "batch_size": 8, "seq_len": 128}


def test_mfu_is_model_flops_over_the_peak_of_its_own_rounds():
    suite = SUITES["default"]
    peaks = {"xs": 100.0, "s": 100.0, "m": 50.0}  # m's rounds saw a slower machine
    rows = [{"size": s, "layers": 2, "d_model": 128, "s_per_update": t,
             "tokens_per_s": suite.tokens_per_step / t, "gemm_gflops": peaks[s],
             "flops_per_token_6n": 6e6, "flops_per_token_palm": 7e6}
            for s, t in (("xs", 0.1), ("s", 0.2), ("m", 0.4))]
    out = bench.report(rows, suite=suite)
    xs, m = out[0], out[2]
    assert xs["mfu_6n"] == pytest.approx(6e6 * 1024 / 0.1 / 100e9)
    assert xs["mfu_palm"] == pytest.approx(7e6 * 1024 / 0.1 / 100e9)
    assert m["mfu_6n"] == pytest.approx(6e6 * 1024 / 0.4 / 50e9)
    whole = out[-1]
    # runs xs, s, m and 4 more seeds of s: 512 updates each; the suite's FLOPs over what each
    # size's peak could do
    seconds = 512 * (0.1 + 0.2 + 0.4 + 4 * 0.2)
    capacity = 512 * (0.1 * 100e9 + 0.2 * 100e9 + 0.4 * 50e9 + 4 * 0.2 * 100e9)
    assert whole["predicted_train_s"] == pytest.approx(seconds)
    assert whole["mfu_6n"] == pytest.approx(7 * 512 * 1024 * 6e6 / capacity)
    text = bench.markdown({**META, "rows": out})
    assert "| xs | 2 × 128 | 0.100 | 10240 | 100 | 61 % |" in text and "whole suite" in text
    assert "with 1 thread," in text and "medians of 5 rounds" in text


def test_rounds_alternate_gemm_bursts_and_updates(monkeypatch):
    calls = []
    monkeypatch.setattr(bench, "gemm_gflops", lambda seconds: calls.append("gemm") or 80.0)
    seconds, peak = bench.rounds(lambda: calls.append("update"), steps=4, n_rounds=2)
    assert calls == ["update", "gemm", "update", "update", "gemm", "update", "update"]
    assert peak == 80.0 and seconds >= 0


def test_vit_mfu_and_grid_time():
    from llmdyn.vision.grids import GRIDS

    grid = GRIDS["default"]
    row = {"grid": "default", "depth": 6, "d_model": 64, "tokens": 17, "batch_size": 128,
           "s_per_update": 0.1, "gemm_gflops": 100.0, "flops_per_image": 5e7}
    out = bench.vit_report(row, grid=grid)
    assert out["images_per_s"] == pytest.approx(1280)
    assert out["mfu"] == pytest.approx(5e7 * 1280 / 100e9)
    assert out["predicted_grid_s"] == pytest.approx(len(grid.runs) * grid.steps * 0.1)
    text = bench.markdown({**META, "rows": [], "vit": out})
    assert "ViT grid `default`" in text and "0.100 s per update" in text
    assert "No size of the suite was timed." in text



def test_the_whole_suite_row_fills_only_its_mfu():
    rows = [{"size": "xs", "layers": 2, "d_model": 128, "s_per_update": 0.17,
             "tokens_per_s": 6034.2, "gemm_gflops": 78.4, "mfu_6n": 0.43, "mfu_palm": 0.46},
            {"size": "suite", "predicted_train_s": 803.2, "mfu_6n": 0.6}]
    assert bench.markdown({**META, "rows": rows}).splitlines()[2:] == [
        "| size | blocks × d_model | s per update | tokens/s | peak GFLOP/s | MFU (6N) "
        "| MFU (6N + attention) |", "| --- | --- | --- | --- | --- | --- | --- |",
        "| xs | 2 × 128 | 0.170 | 6034 | 78 | 43 % | 46 % |",
        "| whole suite (predicted 803 s of updates) |  |  |  |  | 60 % |  |"]
