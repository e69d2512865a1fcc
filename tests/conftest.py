"""Shared fixtures: tiny random models (no download) and, for slow tests, SmolLM2-135M."""

from __future__ import annotations

import pytest
import torch

from llmdyn.models.loading import load_model
from tests.helpers import write_corpus

TINY = ["tiny-gpt2", "tiny-llama", "tiny-neox", "tiny-gemma3"]
FRANCE = "What is the capital of France? The capital is"


@pytest.fixture(autouse=True)
def _results_in_tmp(tmp_path, monkeypatch):
    """Tests never write to the repository's results/ cache."""
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path / "results"))


@pytest.fixture(scope="session", params=TINY)
def tiny64(request):
    """Each tiny architecture in float64, seeded (for finite differences)."""
    return load_model(request.param, seed=0, dtype=torch.float64)


@pytest.fixture(scope="session")
def smollm2():
    """The default real model (float32); first use converts the packaged GGUF (~40 s)."""
    return load_model("smollm2-135m")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    """A small synthetic corpus for the tiny training suite (12 documents of 400 words)."""
    return write_corpus(tmp_path_factory.mktemp("corpus"), n_docs=12, words=400)


def pytest_addoption(parser):
    parser.addoption("--models", action="store_true",
                     help="also run the full chapters × models matrix (make test-models)")


def pytest_collection_modifyitems(config, items):
    """Tests marked `models` (the full matrix of tests/test_any_model.py) need --models."""
    if config.getoption("--models"):
        return
    skip = pytest.mark.skip(reason="the full chapters × models matrix: make test-models")
    for item in items:
        if item.get_closest_marker("models") is not None:
            item.add_marker(skip)
