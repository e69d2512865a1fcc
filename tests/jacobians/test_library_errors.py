"""Raw errors from libraries become LlmdynErrors naming the file or argument."""

from __future__ import annotations

import json
import logging
import shutil
import socket

import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore
from llmdyn.coupling.matrix import coupling_matrices
from llmdyn.jacobians.full import block_jacobians
from llmdyn.jacobians.last_token import last_token_jacobians
from llmdyn.jacobians.svd import svd_sorted
from llmdyn.models import packaged
from llmdyn.models.files import looks_like_path
from llmdyn.models.loading import load_model
from llmdyn.sweep.job import read_result, write_result


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ckpt") / "good"
    m = load_model("tiny-llama")
    m.hf.save_pretrained(directory)
    m.tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-llama")


def _copy(checkpoint, tmp_path, name):
    out = tmp_path / name
    shutil.copytree(checkpoint, out)
    return out


def test_corrupt_config_json_names_the_file(checkpoint, tmp_path):
    bad = _copy(checkpoint, tmp_path, "badjson")
    (bad / "config.json").write_text('{"model_type": "llama", ')  # cut short
    with pytest.raises(LlmdynError, match=r"badjson/config.json is not a valid config .*restore "
                                          "the config.json saved with the weights"):
        load_model(str(bad))
    with pytest.raises(LlmdynError, match="config.json is not a valid config"):
        load_model(str(bad), untrained=True)  # the twin reads only the config


def test_hidden_size_that_does_not_fit_the_weights(checkpoint, tmp_path, caplog):
    bad = _copy(checkpoint, tmp_path, "hidden")
    config = json.loads((bad / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**config, "hidden_size": 64}))
    with caplog.at_level(logging.WARNING), pytest.raises(
            LlmdynError, match=r"the weights in .*hidden do not fit its config.json \(e\.g\. "
                               r".*size mismatch.*\): the config \(hidden_size"):
        load_model(str(bad))
    assert "LOAD REPORT" not in caplog.text  # one message, not a table of every key


def test_a_good_checkpoint_still_loads(checkpoint):
    assert load_model(str(checkpoint)).d_model == 32


@pytest.mark.parametrize("spec", ["results/typo", "./nothing", "a/b/c", "run1\\step4",
                                  "mine.gguf", "~/nowhere/model"])
def test_path_like_spec_that_does_not_exist_fails_at_once(spec, monkeypatch):
    """A missing local path is refused as one, without asking the hub (and its retries)."""
    assert looks_like_path(spec)
    asked = []  # every host looked up or connected to: a hub id asks huggingface.co first

    def look_up(host, port, *args, **kwargs):
        asked.append((host, port))
        raise socket.gaierror("no network in this test")

    def connect(sock, address):
        asked.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", look_up)
    monkeypatch.setattr(socket.socket, "connect", connect)
    with pytest.raises(LlmdynError, match="does not exist"):
        load_model(spec)
    assert asked == []


def test_hub_ids_are_not_paths():
    assert not looks_like_path("EleutherAI/pythia-70m")
    assert not looks_like_path("EleutherAI/pythia-70m@step1000")
    assert not looks_like_path("smollm2-135m")


def test_truncated_gguf_names_the_file(tmp_path, monkeypatch):
    source = packaged._packaged_gguf("smollm2-135m")
    cut = tmp_path / "cut.gguf"
    with open(source, "rb") as fh:
        cut.write_bytes(fh.read(12_000_000))  # a download stopped early
    monkeypatch.setenv("LLMDYN_CACHE", str(tmp_path / "cache"))
    with pytest.raises(LlmdynError, match=r"cut.gguf cannot be read as a GGUF file .*truncated "
                                          "or not a GGUF file"):
        load_model(str(cut))  # "cannot reshape array" before


def test_measure_file_without_aggregate(tmp_path):
    from llmdyn.sweep.job import FORMAT

    path = write_result({"format": FORMAT, "model": {}, "params": {}, "prompts": []},
                        tmp_path / "r.json")
    with pytest.raises(LlmdynError, match=r"r.json lacks 'aggregate' .*rerun its measurement"):
        read_result(path)  # KeyError before


def test_pairs_must_be_integer_token_indices(tiny):
    with pytest.raises(LlmdynError, match=r"pairs must hold integer token indices, got 1.7"):
        block_jacobians(tiny, "hello there", layers=[0], pairs=[(1.7, 2.2)], progress=False)
    with pytest.raises(LlmdynError, match="pairs must hold integer"):
        block_jacobians(tiny, "hello there", layers=[0], pairs=[(True, 2)], progress=False)
    ok = block_jacobians(tiny, "hello there", layers=[0], pairs=[(np.int64(1), 2)],
                         progress=False)
    assert ok.shape == (1, 1, 32, 32)


@pytest.mark.parametrize("chunk", [0, -5, 2.5])
def test_chunk_size_must_be_positive(tiny, chunk):
    with pytest.raises(LlmdynError, match="chunk_size must be a positive integer"):
        block_jacobians(tiny, "hello there", layers=[0], chunk_size=chunk, progress=False)
    with pytest.raises(LlmdynError, match="chunk_size must be a positive integer"):
        last_token_jacobians(tiny, "hello there", layers=[0], chunk_size=chunk)


def test_half_precision_and_integer_inputs(tiny):
    J = torch.randn(2, 8, 8)
    for half in (torch.float16, torch.bfloat16):
        with pytest.raises(LlmdynError, match=r"jacobians: dtype .* has no SVD in torch; pass "
                                              "float32 or float64"):
            coupling_matrices(J.to(half), 3)  # NotImplementedError before
        with pytest.raises(LlmdynError, match="has no SVD"):
            svd_sorted(J[0].numpy().astype(np.float16))
    assert coupling_matrices(J.to(torch.int32), 3).dtype == torch.float64  # as before
    for dtype in (torch.int32, "float32"):
        with pytest.raises(LlmdynError, match="dtype must be a floating torch dtype"):
            load_model("tiny-llama", dtype=dtype)  # TypeError before


def test_results_root_under_a_regular_file(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path / "afile" / "results"))
    with pytest.raises(LlmdynError, match=r"LLMDYN_RESULTS=.*afile/results' lies under the "
                                          "file"):
        ResultStore("m")  # NotADirectoryError before
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path / "afile"))
    with pytest.raises(LlmdynError, match="is a file"):
        ResultStore("m")
    with pytest.raises(LlmdynError, match="root="):
        ResultStore("m", root=tmp_path / "afile")
