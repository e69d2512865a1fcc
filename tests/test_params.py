import pytest

from llmdyn import LlmdynError
from llmdyn.params import DepthCouplingParams


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
    from llmdyn.params import DepthCouplingParams as P

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
    from llmdyn.params import SpectraPromptsParams

    assert SpectraPromptsParams().compared() == ["gemma3-270m"]
    with pytest.raises(LlmdynError, match=match):
        SpectraPromptsParams(**{field: value})
