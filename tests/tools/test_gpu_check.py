"""`make gpu-check` without a GPU says so and exits 0; its report renders from known rows."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

TOOL = Path(__file__).resolve().parents[2] / "tools" / "gpu_check.py"
_SPEC = importlib.util.spec_from_file_location("gpu_check", TOOL)
gpu_check = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gpu_check)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_without_a_gpu_it_says_so_and_exits_0(tmp_path):
    done = subprocess.run([sys.executable, str(TOOL), "--out", str(tmp_path / "g")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "no CUDA device" in done.stdout
    assert not (tmp_path / "g").exists()  # nothing written


def test_report_lists_chapters_routes_and_unsupported_dtypes():
    report = {"gpu": "NVIDIA H100", "torch": "2.13", "cuda": "12.8", "host": "h",
              "chapters": [{"chapter": "05_depth_coupling", "params": {"device": "cuda"},
                            "ok": True, "seconds": 61.4},
                           {"chapter": "08_training", "params": {"device": "cuda"}, "ok": False,
                            "seconds": 3.0, "error": "LlmdynError: boom"}],
              "jacobians": [{"model": "m", "route": "J_nn", "dtype": "float32", "cpu_s": 4.0,
                             "gpu_s": 0.05, "speedup": 80.0, "rel_error_vs_cpu_fp32": 2e-7},
                            {"model": "m", "route": "J_nn", "dtype": "bfloat16", "cpu_s": 4.0,
                             "error": "RuntimeError: no bf16"}]}
    text = gpu_check.render(report)
    assert "| 05_depth_coupling | `{\"device\": \"cuda\"}` | yes | 61 |" in text
    assert "| m | J_nn | float32 | 4.00 | 0.050 | 80.0× | 2.0e-07 |" in text
    assert "not supported: RuntimeError: no bf16" in text
    assert "**08_training failed:**" in text and "LlmdynError: boom" in text
    assert "| --- | --- | --- | ---: |" in text  # the seconds right-aligned


def test_an_unsupported_route_stays_one_row_and_a_skipped_part_is_named():
    report = {"gpu": "g", "torch": "2", "cuda": "12", "host": "h", "chapters": [],
              "jacobians": [{"model": "m", "route": "J_nn", "dtype": "float16", "cpu_s": 4.0,
                             "error": "RuntimeError: a | b\nc"}]}
    text = gpu_check.render(report)
    assert "No chapter ran." in text
    assert r"| m | J_nn | float16 | 4.00 | not supported: RuntimeError: a \| b c |  |  |" in text
    assert "No Jacobian route was timed." in gpu_check.render({**report, "jacobians": []})


def test_chapter_parameters_put_each_chapter_on_cuda_with_its_inputs(tmp_path):
    ch05 = gpu_check.chapter_parameters("05_depth_coupling", tmp_path, "tiny", None)
    assert ch05 == {"device": "cuda"}  # the chapter's own compare models
    assert gpu_check.chapter_parameters("05_depth_coupling", tmp_path, "tiny", []) == {
        "device": "cuda", "compare_models": []}
    ch08 = gpu_check.chapter_parameters("08_training", tmp_path, "tiny", None)
    # the tiny suite's 32-token context takes the smoke book's short passages
    assert ch08["passage_chars"] == 40 and ch08["suite"] == "tiny"
    assert ch08["suite_root"] == str(tmp_path / "suite") and ch08["device"] == "cuda"
    ch08_default = gpu_check.chapter_parameters("08_training", tmp_path, "default", None)
    assert ch08_default == {"suite": "default", "suite_root": str(tmp_path / "suite"),
                            "device": "cuda"}


def test_smoke_plans_every_chapter_at_the_smoke_book_parameters_on_cuda(tmp_path):
    args = gpu_check.argparse.Namespace(out=tmp_path, suite="tiny", compare_models=[],
                                        chapters=["05_depth_coupling"], skip_chapters=False,
                                        smoke=True)
    runs = gpu_check.planned_runs(args)
    assert runs[0] == ("05_depth_coupling", {"compare_models": [], "device": "cuda"})
    smoke = dict(runs[1:])
    assert list(smoke) == sorted(p.stem for p in (TOOL.parents[1] / "tests/smoke").glob("*.yaml"))
    assert len(smoke) == 11 and all(p["device"] == "cuda" for p in smoke.values())
    assert smoke["10_vit"]["grid"] == "tiny" and smoke["01_trajectories"]["model"] == "tiny-gemma3"


def test_chapters_run_jobs_at_a_time_and_report_in_the_order_asked(tmp_path, monkeypatch):
    import threading

    import llmdyn.runner.build as build

    running, most = [], []
    lock = threading.Lock()

    def fake_run(chapter, out_dir, params):
        with lock:
            running.append(chapter)
            most.append(len(running))
        threading.Event().wait(0.05)
        with lock:
            running.remove(chapter)
        if chapter == "bad":
            raise RuntimeError("no")

    monkeypatch.setattr(build, "run_chapter", fake_run)
    runs = [("a", {}), ("bad", {}), ("c", {}), ("d", {})]
    rows = gpu_check.chapter_rows(tmp_path, runs, jobs=2)
    assert [r["chapter"] for r in rows] == ["a", "bad", "c", "d"]
    assert [r["ok"] for r in rows] == [True, False, True, True]
    assert "RuntimeError: no" in rows[1]["error"] and max(most) == 2
