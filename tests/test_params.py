import pytest

from llmdyn import LlmdynError
from llmdyn.book.params import DepthCouplingParams


def test_defaults_are_valid():
    p = DepthCouplingParams()
    assert p.model == "smollm2-135m" and p.k == 30 and p.layers == list(range(8, 16))


@pytest.mark.parametrize("field, value", [
    ("k", "30"), ("k", 3.5), ("k", True), ("layers", [1, "2"]), ("layers", 5),
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
    assert P(model="gemma3-270m").compared() == []
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

    cell = {"model": "tiny-llama", "k": 4, "layers": [0, 1], "math": math, "KINDS": ("a",),
            "In": [""], "_": "", "get_ipython": print}
    p = DepthCouplingParams.from_cell(cell)
    assert (p.model, p.k, p.layers, p.n_prompts) == ("tiny-llama", 4, [0, 1], 20)
    with pytest.raises(LlmdynError, match=r"unknown notebook parameter 'kk' \(did you mean 'k'"):
        DepthCouplingParams.from_cell({**cell, "kk": 3})


@pytest.mark.parametrize("field, value, match", [
    ("example_prompt", "", "'example_prompt' must be non-empty text"),
    ("layers", [], "'layers' must be a non-empty list"),
    ("compare_models", ["gemma3-270m", " "], "'compare_models' must be non-empty"),
    ("k", 1, "'k' must be >= 2"),
])
def test_empty_and_too_small_values_name_the_parameter(field, value, match):
    with pytest.raises(LlmdynError, match=match):
        DepthCouplingParams(**{field: value})


def test_blocks_resolve_negatives_once_and_check_the_depth():
    p = DepthCouplingParams(layers=[-1, 0, 2])
    assert p.blocks("layers", 4) == [3, 0, 2]
    with pytest.raises(LlmdynError, match=r"'layers' must be blocks of smollm2-135m \(4 blocks"):
        DepthCouplingParams().blocks("layers", 4)  # default 8-15 on a 4-block model
    assert DepthCouplingParams().blocks("layers", 12, drop_missing=True) == [8, 9, 10, 11]
    with pytest.raises(LlmdynError, match="distinct"):
        DepthCouplingParams(layers=[3, -1]).blocks("layers", 4)
    from llmdyn.book.params import TokenCouplingParams

    assert TokenCouplingParams(layer=-2).block("layer", 30) == 28
    with pytest.raises(LlmdynError, match="'ref_layer' must be a block"):
        TokenCouplingParams().block("ref_layer", 6)


def test_shared_bases_give_models_and_checks_once():
    from llmdyn.book.params import JacobianAlignmentParams, UncertaintyParams

    assert UncertaintyParams(compare_models=["smollm2-135m", "x", "x"]).models() == \
        ["smollm2-135m", "x"]
    assert JacobianAlignmentParams().compared() == ["gemma3-270m"]
    assert JacobianAlignmentParams().n_questions == 20 == UncertaintyParams().n_questions
    assert JacobianAlignmentParams().n_compare_questions == 2
    for cls in (UncertaintyParams, JacobianAlignmentParams):
        with pytest.raises(LlmdynError, match="phase_criterion"):
            cls(phase_criterion="median")
        with pytest.raises(LlmdynError, match="window"):
            cls(window=4)


@pytest.mark.slow
@pytest.mark.parametrize("extra, message", [
    ({"kk": 3}, "unknown notebook parameter 'kk' (did you mean 'k'?)"),
    ({"layers": [0, 99]}, "notebook parameter 'layers' must be blocks of tiny-llama"),
    ({"layers": []}, "notebook parameter 'layers' must be a non-empty list"),
    ({"example_prompt": ""}, "notebook parameter 'example_prompt' must be non-empty text"),
])
def test_chapter_rejects_bad_parameters_before_any_work(tmp_path, extra, message):
    import yaml
    from papermill.exceptions import PapermillExecutionError

    from llmdyn.book.build import REPO, run_chapter

    smoke = yaml.safe_load((REPO / "tests" / "smoke" / "05_depth_coupling.yaml").read_text())
    with pytest.raises(PapermillExecutionError) as err:
        run_chapter("05_depth_coupling", tmp_path, {**smoke, **extra}, cwd=tmp_path)
    assert message in str(err.value)
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
        assert make(untrained_seeds=seeds).untrained_seeds == seeds
    else:
        with pytest.raises(LlmdynError, match="notebook parameter 'untrained_seeds'.*distinct"):
            make(untrained_seeds=seeds)
@pytest.mark.parametrize("cls_name", ["JacobianAlignmentParams", "SpectraPromptsParams",
                                      "RegularityParams"])
@pytest.mark.parametrize("extra, match", [
    ({"extra_twin_seeds": [0]}, "'extra_twin_seeds' must be seeds other than seed=0"),
    ({"extra_twin_seeds": [1, 1]}, "'extra_twin_seeds' must be seeds other than seed=0"),
    ({"seed": 2, "extra_twin_seeds": [1, 2]}, "seeds other than seed=2"),
    ({"extra_twin_seeds": [1.0]}, "notebook parameter 'extra_twin_seeds' must be"),
    ({"extra_twin_seeds": 1}, "notebook parameter 'extra_twin_seeds' must be"),
    ({"n_seed_prompts": 0}, "notebook parameter 'n_seed_prompts' must be >= 1"),
])
def test_extra_twin_seeds_are_checked(cls_name, extra, match):
    import llmdyn.book.params

    cls = getattr(llmdyn.book.params, cls_name)
    assert cls().extra_twin_seeds == [1, 2] and cls(extra_twin_seeds=[]).extra_twin_seeds == []
    with pytest.raises(LlmdynError, match=match):
        cls(**extra)
