import re

import pytest

from llmdyn import LlmdynError
from llmdyn.book.params import DepthCouplingParams


def test_defaults_are_valid():
    p = DepthCouplingParams()
    assert p.model == "smollm2-135m" and p.k is None and p.grid_layers is None
    p = p.for_model(30, 576)  # SmolLM2-135M
    assert p.k == 30 and p.grid_layers == list(range(8, 16))


@pytest.mark.parametrize("field, value", [
    ("k", "30"), ("k", 3.5), ("k", True), ("grid_layers", [1, "2"]), ("grid_layers", 5),
    ("prompts", "one prompt"), ("model", None), ("seed", 1.0),
])
def test_wrong_types_name_the_parameter(field, value):
    with pytest.raises(LlmdynError, match=f"notebook parameter '{field}'"):
        DepthCouplingParams(**{field: value})


def test_none_allowed_where_declared():
    assert DepthCouplingParams(prompts=None).prompts is None
    assert DepthCouplingParams(prompts=["a", "b"]).prompts == ["a", "b"]


@pytest.mark.parametrize("field, value", [("k", 0), ("n_prompts", 0)])
def test_bad_values(field, value):
    with pytest.raises(LlmdynError, match=field):
        DepthCouplingParams(**{field: value})


def test_depth_coupling_compare_models_skip_the_primary():
    from llmdyn.book.params import DepthCouplingParams as P

    assert P().compared() == ["gemma3-270m"]
    assert P(model="gemma3-270m", compare_models=["gemma3-270m"]).compared() == []
    # By default the packaged models other than the book's model, whichever it is
    assert P(model="gemma3-270m").compared() == ["smollm2-135m"]
    assert P(model="/a/checkpoint").compared() == ["smollm2-135m", "gemma3-270m"]
    assert P(compare_models=[]).compared() == []
    with pytest.raises(LlmdynError, match="n_compare_prompts"):
        P(n_compare_prompts=0)


@pytest.mark.parametrize("field, value, match", [
    ("noise_tokens", "first", "noise_tokens"), ("noise_levels", [0.0, 0.1], "noise_levels"),
    ("n_gsm8k", 2, "n_gsm8k"), ("max_prompt_chars", 5, "max_prompt_chars"),
    ("noise_levels", ["0.1"], "notebook parameter 'noise_levels'"),
])
def test_spectra_prompts_params(field, value, match):
    from llmdyn.book.params import SpectraPromptsParams

    assert SpectraPromptsParams().compared() == ["gemma3-270m"]
    with pytest.raises(LlmdynError, match=match):
        SpectraPromptsParams(**{field: value})


def test_from_cell_reads_fields_and_rejects_unknown_names():
    import math

    cell = {"model": "tiny-llama", "k": 4, "grid_layers": [0, 1], "math": math, "KINDS": ("a",),
            "In": [""], "_": "", "get_ipython": print}
    p = DepthCouplingParams.from_cell(cell)
    assert (p.model, p.k, p.grid_layers, p.n_prompts) == ("tiny-llama", 4, [0, 1], 20)
    with pytest.raises(LlmdynError, match=r"unknown notebook parameter 'kk' \(did you mean 'k'"):
        DepthCouplingParams.from_cell({**cell, "kk": 3})


@pytest.mark.parametrize("field, value, match", [
    ("example_prompt", "", "'example_prompt' must be non-empty text"),
    ("grid_layers", [], "'grid_layers' must be a non-empty list"),
    ("compare_models", ["gemma3-270m", " "], "'compare_models' must be non-empty"),
    ("k", 1, "'k' must be >= 2"),
])
def test_empty_and_too_small_values_name_the_parameter(field, value, match):
    with pytest.raises(LlmdynError, match=match):
        DepthCouplingParams(**{field: value})


def test_blocks_resolve_negatives_once_and_check_the_depth():
    p = DepthCouplingParams(grid_layers=[-1, 0, 2])
    assert p.blocks("grid_layers", 4) == [3, 0, 2]
    with pytest.raises(LlmdynError,
                       match=r"'grid_layers' must be blocks of smollm2-135m \(4 blocks"):
        DepthCouplingParams(grid_layers=list(range(8, 16))).blocks("grid_layers", 4)
    assert DepthCouplingParams(grid_layers=list(range(8, 16))).blocks(
        "grid_layers", 12, drop_missing=True) == [8, 9, 10, 11]
    with pytest.raises(LlmdynError, match="distinct"):
        DepthCouplingParams(grid_layers=[3, -1]).blocks("grid_layers", 4)
    from llmdyn.book.params import TokenCouplingParams

    assert TokenCouplingParams(layer=-2).block("layer", 30) == 28
    with pytest.raises(LlmdynError, match="'ref_layer' must be a block"):
        TokenCouplingParams(ref_layer=12).block("ref_layer", 6)


def test_shared_bases_give_models_and_checks_once():
    from llmdyn.book.params import JacobianAlignmentParams, UncertaintyParams

    assert UncertaintyParams(compare_models=["smollm2-135m", "x", "x"]).models() == \
        ["smollm2-135m", "x"]
    assert JacobianAlignmentParams().compared() == ["gemma3-270m"]
    assert JacobianAlignmentParams().n_prompts == 20 == UncertaintyParams().n_prompts
    assert JacobianAlignmentParams().n_compare_prompts == 16
    for cls in (UncertaintyParams, JacobianAlignmentParams):
        with pytest.raises(LlmdynError, match="phase_criterion"):
            cls(phase_criterion="median")
        with pytest.raises(LlmdynError, match="window"):
            cls(window=4)


@pytest.mark.slow
@pytest.mark.parametrize("extra, message", [
    ({"kk": 3}, "unknown notebook parameter 'kk' (did you mean 'k'?)"),
    ({"grid_layers": [0, 99]}, "notebook parameter 'grid_layers' must be blocks of tiny-llama"),
    ({"grid_layers": []}, "notebook parameter 'grid_layers' must be a non-empty list"),
    ({"example_prompt": ""}, "notebook parameter 'example_prompt' must be non-empty text"),
])
def test_chapter_rejects_bad_parameters_before_any_work(tmp_path, extra, message):
    import yaml

    from llmdyn.runner.build import REPO, run_chapter

    smoke = yaml.safe_load((REPO / "tests" / "smoke" / "05_depth_coupling.yaml").read_text())
    with pytest.raises(LlmdynError) as err:  # one line naming the chapter, no traceback
        run_chapter("05_depth_coupling", tmp_path, {**smoke, **extra}, cwd=tmp_path)
    assert str(err.value).startswith(f"chapter 05_depth_coupling: {message}")
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.npz"))


def test_parameters_render_as_a_table():
    table = DepthCouplingParams(k=4)._repr_markdown_().splitlines()
    assert table[:2] == ["| parameter | value |", "| --- | --- |"]
    assert "| `k` | `4` |" in table and "| `model` | `'smollm2-135m'` |" in table


def test_lens_parameter_of_paper_b_chapters():
    from llmdyn.book.params import JacobianAlignmentParams, UncertaintyParams

    assert UncertaintyParams().lens == "paper" and UncertaintyParams().other_lens() == "normed"
    assert JacobianAlignmentParams(lens="normed").other_lens() == "paper"
    with pytest.raises(LlmdynError, match="notebook parameter 'lens'"):
        UncertaintyParams(lens="tuned")


@pytest.mark.parametrize("cls, seeds, ok", [
    ("UncertaintyParams", [0, 1, 2], True), ("UncertaintyParams", [], True),
    ("UncertaintyParams", [1, 1], False), ("GeometryAlongDepthParams", [3, 3], False),
    ("DepthCouplingParams", [], False), ("DepthCouplingParams", [4], True),
])
def test_twin_seeds_are_distinct_and_empty_only_where_twins_are_optional(cls, seeds, ok):
    import llmdyn.book.params as params

    make = getattr(params, cls)
    if ok:
        assert make(twin_seeds=seeds).twin_seeds == seeds
    else:
        with pytest.raises(LlmdynError, match="notebook parameter 'twin_seeds'.*distinct"):
            make(twin_seeds=seeds)
@pytest.mark.parametrize("cls_name", ["JacobianAlignmentParams", "SpectraPromptsParams",
                                      "RegularityParams", "TokenCouplingParams",
                                      "DepthCouplingParams"])
@pytest.mark.parametrize("bad, match", [
    ({"twin_seeds": []}, "'twin_seeds' must be a non-empty list of distinct seeds"),
    ({"twin_seeds": [1, 1]}, "'twin_seeds' must be a non-empty list of distinct seeds"),
    ({"twin_seeds": [1.0]}, "notebook parameter 'twin_seeds' must be"),
    ({"twin_seeds": 1}, "notebook parameter 'twin_seeds' must be"),
    ({"n_seed_prompts": 0}, "notebook parameter 'n_seed_prompts' must be >= 1"),
])
def test_twin_seeds_are_checked(cls_name, bad, match):
    import llmdyn.book.params

    cls = getattr(llmdyn.book.params, cls_name)
    assert cls().twin_seeds == [0, 1, 2] and cls(twin_seeds=[5]).twin_seeds == [5]
    with pytest.raises(LlmdynError, match=match):
        cls(**bad)


def _parameters_cell(chapter: str) -> tuple[str, dict]:
    """The params class a chapter builds (``XParams.from_cell``) and its parameters cell."""
    import json

    from llmdyn.runner.build import REPO

    cells = json.loads((REPO / "notebooks" / f"{chapter}.ipynb").read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    cls_name = re.search(r"(\w+Params)\.from_cell", code).group(1)
    cell = next("".join(c["source"]) for c in cells
                if "parameters" in c.get("metadata", {}).get("tags", []))
    namespace: dict = {}
    exec(cell, {"list": list, "range": range}, namespace)  # our own committed cell
    return cls_name, namespace


@pytest.mark.parametrize("chapter", __import__("llmdyn.runner.build").runner.build.chapters())
def test_parameters_cell_and_dataclass_defaults_agree(chapter):
    """Defaults are written twice (papermill needs the literal cell): they must be the same."""
    import dataclasses

    import llmdyn.book.params as params

    cls_name, cell = _parameters_cell(chapter)
    cls = getattr(params, cls_name)
    fields = {f.name for f in dataclasses.fields(cls)}
    assert set(cell) <= fields, f"{chapter}: cell names no field: {set(cell) - fields}"
    defaults = cls()
    differ = {k: (v, getattr(defaults, k)) for k, v in cell.items() if getattr(defaults, k) != v}
    assert not differ, f"{chapter}: parameters cell != {cls_name} defaults: {differ}"


def test_each_parameter_is_documented_once_in_its_class_and_the_cells_are_written_from_it():
    """The cell and the class had drifted apart (120 of 137 comments differed)."""
    from llmdyn.book.params.cell import field_docs, papermill_readable, parameters_cell
    from tools.parameter_cells import main

    assert main(["--check"]) == 0, "run `python tools/parameter_cells.py` to rewrite the cells"
    for chapter in __import__("llmdyn.runner.build").runner.build.chapters():
        cls_name, cell = _parameters_cell(chapter)
        cls = getattr(__import__("llmdyn.book.params").book.params, cls_name)
        docs = field_docs(cls)
        undocumented = [name for name in cell if not docs.get(name)]
        assert not undocumented, f"{cls_name}: no comment for {undocumented}"
        # papermill skips a line holding two '=' and then warns "unknown parameter"
        assert all(papermill_readable(d) for d in docs.values()), cls_name
        first, *assignments = parameters_cell(cls).splitlines()
        assert first.startswith(f"# Generated from {cls.__module__}.{cls_name} by "
                                "tools/parameter_cells.py")
        assert list(cell) == [line.split(" = ")[0] for line in assignments]


def test_the_cell_is_written_from_the_declared_docs_and_a_subclass_doc_wins():
    from dataclasses import dataclass

    from llmdyn.book.params.base import ChapterParams
    from llmdyn.book.params.cell import parameters_cell
    from llmdyn.core.declared import param

    @dataclass(frozen=True)
    class Example(ChapterParams):
        n: int = param(3, doc="a doc", at_least=1)
        seed: int = param(1, doc="seed of this chapter's draw")
        names: list[str] | None = None  # not declared with param: no doc

    note, *cell = parameters_cell(Example).splitlines()
    assert note.startswith("# Generated from ") and "Example by tools/parameter_cells.py" in note
    assert "n = 3  # a doc" in cell and "seed = 1  # seed of this chapter's draw" in cell
    assert "names = None" in cell and cell[0].startswith('model = "smollm2-135m"  # ')
    assert "resolution" not in parameters_cell(Example)  # carried, not a parameter
    with pytest.raises(LlmdynError, match=r"parameter 'n' must be >= 1, got 0 \(n: a doc\)"):
        Example(n=0)


@pytest.mark.parametrize("cls_name", ["DepthCouplingParams", "TrainingParams", "VitParams"])
def test_a_negative_seed_is_refused(cls_name):
    # Seed -1 drew seed 1's questions while the page reported -1.
    import llmdyn.book.params as params

    with pytest.raises(LlmdynError, match=r"notebook parameter 'seed' must be >= 0, got -1"):
        getattr(params, cls_name)(seed=-1)
    assert getattr(params, cls_name)(seed=0).seed == 0


def test_chapter_04_question_draw_is_one_default_for_the_chapters_that_reuse_it():
    from llmdyn.book.params import (
        GeometryAlongDepthParams,
        JacobianAlignmentParams,
        SpectraPromptsParams,
        UncertaintyParams,
    )
    from llmdyn.book.params.base import COMPARE_QUESTIONS, QUESTIONS

    for cls in (GeometryAlongDepthParams, UncertaintyParams, JacobianAlignmentParams,
                DepthCouplingParams, SpectraPromptsParams):
        assert cls().n_prompts == QUESTIONS, cls.__name__
    for cls in (JacobianAlignmentParams, DepthCouplingParams, SpectraPromptsParams):
        assert cls().n_compare_prompts == COMPARE_QUESTIONS <= cls().n_prompts, cls.__name__


@pytest.mark.parametrize("cls_name, ahead", [("JacobianAlignmentParams", 0),
                                             ("DepthCouplingParams", 1),
                                             ("SpectraPromptsParams", 1)])
def test_a_compare_count_beyond_the_prompts_it_is_drawn_from_is_refused(cls_name, ahead):
    import llmdyn.book.params as params

    cls = getattr(params, cls_name)
    # the example in front of the questions (chapters 05, 11) is one more prompt to take
    assert cls(n_prompts=5, n_compare_prompts=5 + ahead).n_compare_prompts == 5 + ahead
    with pytest.raises(LlmdynError) as refused:
        cls(n_prompts=5, n_compare_prompts=6 + ahead)
    message = str(refused.value)
    assert "\n" not in message
    assert "'n_compare_prompts' = " in message and "'n_prompts'" in message
    assert "lower n_compare_prompts or raise n_prompts" in message
    with pytest.raises(LlmdynError, match="'n_seed_prompts' = 7 must be at most 'n_prompts'"):
        cls(n_prompts=5, n_compare_prompts=5, n_seed_prompts=7)
