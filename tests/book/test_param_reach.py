"""Each declared parameter reaches what it should: notebooks read it, library calls receive it.

No chapter runs here: the notebooks are read as text, and the library entry points that take
parameters run with their inner calls replaced by spies that record the arguments.
"""

import ast
import dataclasses
import inspect
import json
import re
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import llmdyn.book.params as params
from llmdyn import LlmdynError
from llmdyn.book.params.cell import parameters_cell_of, params_class
from llmdyn.core.declared import AT_LEAST, CHOICES, parameter_fields
from llmdyn.core.paths import REPO
from llmdyn.runner.build import chapters

CLASSES = sorted(n for n in params.__all__ if n.endswith("Params"))


class Reached(Exception):
    """Raised by a spy once it has recorded its call: the rest of the computation is not run."""


def _names_read(cls: type) -> dict[str, set[str]]:
    """``{method: names}``: the ``self.x`` attributes and quoted names each method reads,
    through the other methods it calls (``compared`` reads ``models``, which reads ``model``)."""
    direct: dict[str, set[str]] = {}
    for klass in cls.__mro__:
        if not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for node in body:
            if isinstance(node, ast.FunctionDef) and node.name not in direct:
                direct[node.name] = {
                    n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name) and n.value.id == "self"} | {
                    n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
                    and isinstance(n.value, str)}
    closed = {m: set(names) for m, names in direct.items()}
    for _ in range(len(closed)):
        for names in closed.values():
            names |= set().union(*(closed[n] for n in list(names) if n in closed))
    return closed


@pytest.mark.parametrize("chapter", chapters())
def test_every_parameter_is_read_by_its_notebook_outside_the_parameters_cell(chapter):
    """A field the chapter never reads would be a parameter that changes nothing."""
    cells = json.loads((REPO / "notebooks" / f"{chapter}.ipynb").read_text())["cells"]
    cls, cell = params_class(cells), parameters_cell_of(cells)
    code = "\n".join("".join(c["source"]) for c in cells
                     if c["cell_type"] == "code" and c is not cell)
    used = set(re.findall(r"\bp\.(\w+)", code))  # every chapter names its parameters p
    quoted = set(re.findall(r"\bp\.\w+\(\s*[\"'](\w+)[\"']", code))  # p.blocks("grid_layers", L)
    methods = _names_read(cls)
    reached = used | quoted | set().union(*(methods.get(m, set()) for m in used))
    unread = [f.name for f in parameter_fields(cls) if f.name not in reached
              and "unused" not in f.metadata["doc"]]  # a field may say it is unused, and why
    assert not unread, f"{chapter}: {cls.__name__} fields its notebook never reads: {unread}"


@pytest.mark.parametrize("cls_name", CLASSES)
def test_every_declared_bound_and_choice_is_checked(cls_name):
    """The checks are generated from the declarations: one below each bound is refused."""
    cls = getattr(params, cls_name)
    for f in parameter_fields(cls):
        default = getattr(cls(), f.name)
        if AT_LEAST in f.metadata:
            low = f.metadata[AT_LEAST]
            bad = [low - 1] if isinstance(default, list) else low - 1
            with pytest.raises(LlmdynError, match=f"notebook parameter '{f.name}' must be "):
                cls(**{f.name: bad})
        if CHOICES in f.metadata:
            bad = ["no-such"] if isinstance(default, list) else "no-such"
            with pytest.raises(LlmdynError, match=f"'{f.name}' must be .*one of "):
                cls(**{f.name: bad})


def test_resolution_returns_a_new_frozen_instance_and_resolves_k_once():
    given = params.DepthCouplingParams()
    resolved = given.for_model(6, 64)
    assert given.k is None and given.resolution is None  # the given instance is unchanged
    assert resolved.k == 8 and resolved.resolution == params.Resolution(
        ("grid_layers", "k"), 6, 64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.k = 3
    with pytest.raises(LlmdynError, match=r"notebook parameter 'k' must be at most d_model = 64 "
                                          r"of smollm2-135m \(k: got 65; expected an integer"):
        params.DepthCouplingParams(k=65).for_model(6, 64)  # k > d_model: refused at resolution
    assert params.DepthCouplingParams(k=64).for_model(6, 64).resolution.names == ("grid_layers",)


def test_training_parameters_reach_the_suite_measurement(monkeypatch):
    """Chapter 08's cell -> profiles.measure_suite -> measure_checkpoints (last_point)."""
    from llmdyn.emergence import profiles

    calls = {}
    monkeypatch.setattr(profiles.suites, "train_suite", lambda *a, **kw: calls.setdefault(
        "train", (a, kw)))
    monkeypatch.setattr(profiles, "suite_checkpoints", lambda suite, root, steps: calls.setdefault(
        "checkpoints", (suite, root, steps)) and [])
    monkeypatch.setattr(profiles.suites, "heldout_prompts", lambda *a, **kw: calls.setdefault(
        "prompts", (a, kw)) and ["a text"])

    def measure(ckpts, texts, **kw):
        calls["measure"] = kw
        raise Reached

    monkeypatch.setattr(profiles, "measure_checkpoints", measure)
    p = params.TrainingParams(suite="tiny", suite_root="/r", checkpoints=[0, 8], n_prompts=5,
                              passage_chars=99, seed=3, k=7, window=5, last_point="block_output",
                              device="meta")
    with pytest.raises(Reached):  # as notebook 08 calls it
        profiles.measure_suite(p.suite, root=p.suite_dir, steps=p.checkpoints, prompts=p.prompts,
                               n_prompts=p.n_prompts, passage_chars=p.passage_chars, seed=p.seed,
                               k=p.k, window=p.window, last_point=p.last_point, device=p.device)
    assert calls["checkpoints"] == ("tiny", p.suite_dir, [0, 8])
    assert calls["prompts"] == (("tiny", 5), {"chars": 99, "seed": 3})
    assert calls["measure"] == {"k": 7, "window": 5, "last_point": "block_output",
                                "device": "meta"}


def test_measure_params_reach_the_prompts_and_the_coupling(monkeypatch):
    """`llmdyn measure coupling`: k, n_per_task, tasks, seed and max_chars each arrive."""
    from llmdyn.coupling import depth
    from llmdyn.models import loading
    from llmdyn.sweep import job

    calls = {}
    prompts = [SimpleNamespace(text="x" * 50, task="gsm8k", id="g0")]
    monkeypatch.setattr(job, "sample_leaderboard", lambda n, tasks, seed: calls.setdefault(
        "sample", (n, tasks, seed)) and prompts)
    monkeypatch.setattr(loading, "load_model", lambda model, device: SimpleNamespace(
        model_id="m", identity={}, n_ctx=None))
    monkeypatch.setattr(job, "_check_lengths", lambda *a: None)

    def coupling(model, texts, *, k, store):
        calls["coupling"] = (texts, k)
        raise Reached

    monkeypatch.setattr(depth, "depth_coupling", coupling)
    p = job.MeasureParams(k=7, n_per_task=3, tasks=("gsm8k",), seed=4, max_chars=20)
    with pytest.raises(Reached):
        job.measure_coupling("tiny-llama", p, cache=False)
    assert calls == {"sample": (3, ("gsm8k",), 4), "coupling": (["x" * 20], 7)}


def test_twin_seeds_choose_the_twins_that_load(monkeypatch):
    """The chapters pass twin_seeds to each_model: one untrained twin per seed, in order."""
    from llmdyn.models import loading

    loaded = []
    monkeypatch.setattr(loading, "load_model", lambda name, untrained, seed, device: loaded.append(
        (name, untrained, seed, device)) or SimpleNamespace(hf=torch.nn.Linear(1, 1)))
    p = params.DepthCouplingParams(twin_seeds=[5, 2], compare_models=[])
    list(loading.each_model(p.models(), seeds=p.twin_seeds, device=p.device))
    assert loaded == [("smollm2-135m", False, 5, "cpu"), ("smollm2-135m", True, 5, "cpu"),
                      ("smollm2-135m", True, 2, "cpu")]


@pytest.mark.parametrize("k, reaches", [(None, 4), (6, 6)])
def test_vit_k_is_resolved_once_and_reaches_each_run(monkeypatch, tmp_path, k, reaches):
    """Chapter 10's k (None: relative_k of the grid's width 32) arrives at every run's coupling."""
    from llmdyn.vision import coupling as vc

    monkeypatch.setattr(vc, "grid_data", lambda grid, dataset: SimpleNamespace(
        test_y=np.zeros(10), test_x=np.zeros((10, 1, 4, 4), np.float32), name="d"))
    monkeypatch.setattr(vc, "shape_for", lambda grid, data: SimpleNamespace(d_model=32))
    grid = vc.get_grid("tiny")
    for run in grid.runs:
        (tmp_path / run.name).mkdir()
        (tmp_path / run.name / "run.json").write_text('{"wall_s": 1}')
    got = []

    def run_coupling(directory, images, k, device):
        got.append((k, len(images)))
        raise Reached

    monkeypatch.setattr(vc, "_run_coupling", run_coupling)
    p = params.VitParams(k=k, n_images=3)
    with pytest.raises(Reached):
        vc.measure_grid(grid, tmp_path, n_images=p.n_images, k=p.k, seed=p.seed, progress=False)
    assert got == [(reaches, 3)]
    with pytest.raises(LlmdynError, match="k: got 33; expected an integer with 2 <= k <= d_model"):
        vc.measure_grid(grid, tmp_path, n_images=3, k=33, progress=False)
    assert isinstance(vc.heldout_images(vc.grid_data(grid, None), 3, 0), torch.Tensor)
