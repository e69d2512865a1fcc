"""A finished measurement survives any locale, and each refusal is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.models.loading import load_model
from llmdyn.runner.build import REPO

MEASURE = ["measure", "coupling", "--model", "tiny-gpt2", "--k", "4", "--n-per-task", "1",
           "--tasks", "gsm8k"]


def test_measure_coupling_finishes_under_any_stream_encoding(tmp_path):
    # The probe: under PYTHONIOENCODING=ascii the job wrote its result, then crashed printing
    # "m̃"; the workflow deleted the finished file and every rerun repeated it.
    base = {**os.environ, "PYTHONPATH": str(REPO / "lib"), "LLMDYN_RESULTS": str(tmp_path / "r")}
    base.pop("PYTHONIOENCODING", None)
    envs = {"ascii": {**base, "PYTHONIOENCODING": "ascii"},
            "C": {**base, "LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0",
                  "PYTHONCOERCECLOCALE": "0"},
            "latin1": {**base, "PYTHONIOENCODING": "latin-1"}}
    procs = {name: subprocess.Popen(
        [sys.executable, "-m", "llmdyn", *MEASURE, "--max-chars", "40",
         "--out", str(tmp_path / f"{name}.json")], env=env, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name, env in envs.items()}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode(errors="replace")[-3000:]
        assert b"Traceback" not in err
        line = out.decode("ascii")  # every stream stayed within its encoding
        assert "m\\u0303 = " in line and line.rstrip().endswith(f"{name}.json"), line
        assert json.loads((tmp_path / f"{name}.json").read_text())["prompts"]


@pytest.mark.parametrize("device, want", [
    ("meta", "--device='meta' holds shapes but no numbers.*use 'cpu' or 'cuda'"),
    ("xpu", "--device='xpu', but this torch .* has no usable 'xpu' device here; use 'cpu'")])
def test_meta_and_xpu_devices_are_one_line(device, want, tmp_path, capsys):
    # The probe: meta "measured" (exit 0), xpu died in torch with an AssertionError.
    assert main([*MEASURE, "--out", str(tmp_path / "o.json"), "--device", device]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("llmdyn measure coupling: error: ")
    assert __import__("re").search(want, err), err
    assert not (tmp_path / "o.json").exists()


def test_too_long_prompt_names_max_chars(tmp_path, capsys):
    # The probe: the message named chapter parameters (cut_long_prompts, max_prompt_chars).
    assert main([*MEASURE, "--out", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "longer than tiny-gpt2's context of 64 tokens" in err and "--max-chars " in err
    assert "cut_long_prompts" not in err and "max_prompt_chars" not in err
    fits = int(err.split("--max-chars ")[1].split()[0])
    assert main([*MEASURE, "--max-chars", str(fits), "--out", str(tmp_path / "o.json")]) == 0


@pytest.mark.parametrize("how", ["HF_HUB_OFFLINE", "unreachable"])
def test_uncached_hub_id_offline_fails_at_once(how, monkeypatch, tmp_path):
    # One refusal that says why and what to pass, not transformers' retries and traceback.
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache
    if how == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    why = "HF_HUB_OFFLINE is set" if how == "HF_HUB_OFFLINE" else "cannot be reached"
    with pytest.raises(LlmdynError, match=f"'EleutherAI/pythia-14m' is a Hugging Face hub id, "
                                          f"but .*{why}.*pass a local checkpoint directory"):
        load_model("EleutherAI/pythia-14m")
