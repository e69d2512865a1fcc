"""The package's facade and every subpackage's lazy table: each exported name resolves."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import llmdyn

SUBPACKAGES = sorted(m.name for m in pkgutil.iter_modules(llmdyn.__path__) if m.ispkg)


def test_import_llmdyn_loads_no_subpackage_and_no_torch():
    code = ("import sys, llmdyn; "
            "print(sorted(m for m in sys.modules if m.startswith('llmdyn.') or m == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_every_facade_name_resolves():
    unresolved = [name for name in llmdyn.__all__ if not hasattr(llmdyn, name)]
    assert unresolved == []
    assert llmdyn.load_model is importlib.import_module("llmdyn.models.loading").load_model
    assert llmdyn.depth_coupling is importlib.import_module("llmdyn.coupling.depth").depth_coupling


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_lazy_name_of_a_subpackage_resolves(name):
    package = importlib.import_module(f"llmdyn.{name}")
    unresolved = [attr for attr in getattr(package, "__all__", []) if not hasattr(package, attr)]
    assert unresolved == [], f"llmdyn.{name} exports names it does not define: {unresolved}"


def test_the_facade_session_runs_on_a_tiny_model():
    model = llmdyn.load_model("tiny-llama")
    prompt = "What is the capital of France? The capital is"
    traced = llmdyn.trajectory(model, prompt)
    logits = llmdyn.logit_lens(model, traced.states)
    assert logits.shape[:2] == traced.states.shape[:2]
    J = llmdyn.block_jacobians(model, prompt, layers=[0], progress=False)
    assert J.shape[0] == 1
    coupling = llmdyn.depth_coupling(model, [prompt], k=2)
    assert len(coupling) == 1
