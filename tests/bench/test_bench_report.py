"""The benchmark's report: ratios and target checks from a known set of timings."""

import importlib.util

import pytest

from llmdyn.runner.build import REPO


def _load(name):
    """bench/<name>.py as a module, with its sibling modules (common, report) importable."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(REPO / "bench"))
        spec = importlib.util.spec_from_file_location(f"bench_{name}",
                                                      REPO / "bench" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _load("jacobians")


@pytest.fixture(scope="module")
def report():
    return _load("report")


def _row(method, seconds, rss, agreement):
    return {"method": method, "all_blocks_s": seconds, "per_block_s": [seconds / 30],
            "extrapolated": method in ("naive", "hf_hidden_states"), "peak_rss_gib": rss,
            "agreement": agreement, "n_layers": 30, "d_model": 576, "tok": 10,
            "blocks_measured": [0, 14, 29], "speedup_vs_a": 100.0 / seconds}


RESULTS = {
    "naive": _row("naive", 100.0, 2.0, {"rel_fro_vs_a": 0.0}),
    "hf_hidden_states": _row("hf_hidden_states", 120.0, 2.5, {"rel_fro_vs_a": 2e-7}),
    "own_position": _row("own_position", 20.0, 3.0, {"rel_fro_vs_a": 5e-5}),
    "topk": _row("topk", 5.0, 1.0, {"angle_vs_a_max": 1e-4, "angle_vs_c_max": 2e-3}),
}


def test_target_checks_compute_each_ratio(report):
    checks = {what.split(",")[0]: (value, ok) for what, value, ok in
              report.target_checks(RESULTS)}
    assert checks["(c) faster than tuned (a)"] == (pytest.approx(5.0), False)  # < 0.7 * 10
    assert checks["(c) faster than (b)"] == (pytest.approx(6.0), True)  # 120 / 20
    assert checks["(d) faster than (c)"] == (pytest.approx(4.0), True)  # 20 / 5
    assert checks["(d) largest principal angle vs exact SVD"] == (pytest.approx(2e-3), False)
    assert checks["peak RSS of any method"] == (pytest.approx(3.0), True)
    assert checks["(b)"] == (pytest.approx(5e-5), True)  # the worse of (b) and (c)


def test_missing_methods_are_reported_as_unknown(report):
    only = {"naive": RESULTS["naive"], "own_position": RESULTS["own_position"]}
    checks = {what.split(",")[0]: ok for what, _, ok in report.target_checks(only)}
    assert checks["(c) faster than (b)"] is None and checks["(d) faster than (c)"] is None


def test_markdown_report_has_a_row_per_method(report):
    out = {"machine": {"date": "2026-01-01", "cores": 2, "cpu": "test", "torch": "x",
                       "torch_threads": 2, "load_average_start": [0.0], "gemm_gflops": 100.0,
                       "load_average_end": [0.0], "prompt": "p", "k": 30},
           "models": {"tiny": RESULTS}}
    text = report.markdown_report(out)
    for label in ("(a) naive jacrev", "(b) HF hidden states", "(c) own-position exact",
                  "(d) top-K, tol"):
        assert f"| {label} |" in text
    assert "| 5 | no |" in text  # (c) vs (a) misses the 0.7·T = 7x target


def test_last_token_and_batched_sections(report):
    out = {"machine": {"date": "2026-01-01", "cores": 2, "cpu": "test", "torch": "x",
                       "torch_threads": 1, "load_average_start": [0.0], "gemm_gflops": 100.0,
                       "load_average_end": [0.0], "prompt": "p", "k": 30},
           "models": {},
           "last_token": {"tiny": {
               "tok": 90, "n_layers": 30, "blocks_measured": [0, 29],
               "library": {"chunk_size": None, "all_blocks_s": 2.0, "flop_floor_s": 1.6,
                           "products": 17280, "gflops_beside_runs": [60.0, 70.0, 80.0],
                           "flop_floor_best_peak_s": 1.0},
               "authors": {"chunk_size": 288, "all_blocks_s": 60.0, "flop_floor_s": 40.0,
                           "products": 17280},
               "speedup": 30.0, "rel_fro_library_vs_authors": 1e-7}},
           "batched": {"tiny": {"n_prompts": 8, "k": 30,
                                "max_rel_diff_singular_values_vs_loop": 1e-7, "rows": {
               "1 (loop)": {"s": 16.0, "prompts_per_s": 0.5, "speedup_vs_loop": 1.0,
                            "jacobians_speedup_vs_loop_cpu": 1.0},
               "8": {"s": 8.0, "prompts_per_s": 1.0, "speedup_vs_loop": 2.0,
                     "jacobians_speedup_vs_loop_cpu": 3.0}}}}}
    text = report.markdown_report(out)
    assert "| library within 1.5× its FLOP floor | 1.25 | yes |" in text  # 2.0 / 1.6
    assert "(60, 70, 80 GFLOP/s)" in text and "it ran at 2.00× its floor" in text
    assert "| library ≥ 25× the authors' route | 30.0 | yes |" in text
    assert "| 8 | 8.0 | 1.00 | 2.00 | 3.00 |" in text
    assert "| route | chunk size | s, all blocks | CPU s | × FLOP floor | × faster than authors' |"\
           "\n| --- | ---: | ---: | ---: | ---: | ---: |" in text


def test_the_profile_grid_puts_each_method_beside_the_other(report):
    results = {"own_position": {"profile_block": 3, "profile": [
                   {"op": "aten::mm", "share": 0.6}, {"op": "aten::bmm", "share": 0.25}]},
               "topk": {"profile": [{"op": "aten::linalg_qr", "share": 0.5}]}}
    assert report._profile_table(results, rows=2) == [
        "Where the time of one block (block 3) goes, by torch.profiler self CPU time:", "",
        "| (c) own-position exact: operator | share | (d) top-K, tol: operator | share |\n"
        "| --- | ---: | --- | ---: |\n"
        "| `aten::mm` | 60% | `aten::linalg_qr` | 50% |\n"
        "| `aten::bmm` | 25% |  |  |", ""]


@pytest.fixture(scope="module")
def tiny_model_and_calls():
    import torch

    from llmdyn.jacobians.blocks import capture_block_calls
    from llmdyn.models.loading import load_model
    from llmdyn.trace import encode

    model = load_model("tiny-llama", dtype=torch.float64)
    ids = encode(model, "The capital of France is")
    return model, ids, capture_block_calls(model, ids)


def test_baseline_routes_agree_with_the_library(bench, tiny_model_and_calls, monkeypatch):
    """The baselines the ratios are taken against compute the same Jacobians (float64, 1e-10)."""

    from llmdyn.jacobians.full import block_jacobians
    from llmdyn.jacobians.last_token import last_token_jacobians

    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import last_token

    model, ids, calls = tiny_model_and_calls
    prompt, b = "The capital of France is", 1
    x = calls[b].hidden.detach()
    diagonal = bench.hf_block(model, ids, x, b)
    ours = block_jacobians(model, prompt, [b], "diagonal", method="exact", progress=False)[0]
    assert (diagonal - ours).abs().max() < 1e-10
    last = last_token.authors_last_block(model, ids, x, b)
    assert (last - last_token_jacobians(model, prompt, [b])[0]).abs().max() < 1e-10


def test_the_last_token_workload_compares_the_same_quantity_on_both_routes():
    # The authors' hooks read the last block's own output; the library must be asked for the
    # same quantity, or the agreement column compares two conventions (it read 0.28 on SmolLM2).
    from llmdyn.models.loading import load_model

    last_token = _load("last_token")
    model = load_model("tiny-llama", seed=0)
    spec = {"layers": [0, model.n_layers - 1], "long_prompt": "The capital of France is Paris",
            "gemm_seconds": 0.01}
    row = last_token.last_token_workload(model, spec, gflops=1.0)
    assert row["rel_fro_library_vs_authors"] < 1e-5
    # the floor is at the median throughput measured beside the library's runs, one per run
    lib = row["library"]
    assert len(lib["gflops_beside_runs"]) == len(lib["runs_s"]) == 2
    beside = lib["gflops_beside_runs"]
    assert lib["flop_floor_s"] * sum(beside) / 2 == pytest.approx(  # the median of two
        lib["flop_floor_best_peak_s"] * max(beside))  # the same FLOPs at the best throughput
