"""Defaults relative to the model: today's values on the book's models, fractions elsewhere."""

import dataclasses

import pytest

from llmdyn import LlmdynError
from llmdyn.book.params import (
    DepthCouplingParams,
    JacobianAlignmentParams,
    SpectraPromptsParams,
    TokenCouplingParams,
    relative_blocks,
    relative_k,
    relative_pair,
    resolve,
    same_fraction,
)

# The literal defaults the chapters had before they became relative, and what
# chapter 06 ran on Gemma-3-270M's 18 blocks: the pair [23, 24] was left out there.
BEFORE = {"k": 30, "grid_layers": list(range(8, 16)), "layer": 11, "ref_layer": 12}
SMOLLM2, GEMMA3 = (30, 576), (18, 640)  # (blocks, d_model) of the two packaged models


@pytest.mark.parametrize("cls", [DepthCouplingParams, JacobianAlignmentParams,
                                 SpectraPromptsParams, TokenCouplingParams])
@pytest.mark.parametrize("shape, pairs", [(SMOLLM2, [[3, 4], [23, 24]]), (GEMMA3, [[3, 4]])])
def test_book_models_resolve_to_the_values_before(cls, shape, pairs):
    p = cls().for_model(*shape)
    expected = {**BEFORE, "extra_layer_pairs": pairs}
    for f in dataclasses.fields(p):
        if f.name in expected:
            assert getattr(p, f.name) == expected[f.name], (cls.__name__, shape, f.name)


@pytest.mark.slow
@pytest.mark.parametrize("name, shape", [("smollm2-135m", SMOLLM2), ("gemma3-270m", GEMMA3)])
def test_packaged_configs_have_the_shapes_assumed_above(name, shape):
    from llmdyn.models import model_shape

    s = model_shape(name)
    assert (s.n_layers, s.d_model) == shape


def test_same_fraction_maps_block_centres():
    # (b + 1/2)·L/30 − 1/2, rounded half up: block 8 of 30 → 1.2 → 1 of 6; 15 → 2.6 → 3.
    assert [same_fraction(b, 6) for b in (0, 8, 15, 29)] == [0, 1, 3, 5]
    assert [same_fraction(b, 30) for b in range(30)] == list(range(30))  # identity at 30
    assert relative_blocks(list(range(8, 16)), 6) == [1, 2, 3]
    assert relative_blocks(list(range(8, 16)), 16) == list(range(8, 16))  # has them all
    assert relative_blocks(list(range(8, 16)), 3) == [0, 1]


def test_pairs_keep_their_offset_and_stay_inside():
    assert relative_pair((11, 12), 6) == (2, 3)
    assert relative_pair((23, 24), 3) == (1, 2)  # 2 would put l′ beyond the last block
    p = TokenCouplingParams().for_model(6, 256)
    assert p.layer_pairs(6) == [(2, 3), (0, 1), (4, 5)]
    p = TokenCouplingParams().for_model(3, 32)  # (23, 24) lands on the main pair: left out
    assert (p.layer, p.ref_layer, p.extra_layer_pairs) == (1, 2, [[0, 1]])


def test_k_is_the_papers_where_d_model_allows_it():
    assert [relative_k(d) for d in (32, 100, 239, 240, 576)] == [4, 12, 29, 30, 30]


def test_explicit_values_win():
    p = TokenCouplingParams(layer=0, k=3, extra_layer_pairs=[]).for_model(6, 256)
    assert (p.layer, p.ref_layer, p.k, p.extra_layer_pairs) == (0, 3, 3, [])
    assert DepthCouplingParams(grid_layers=[0, 5]).for_model(6, 256).grid_layers == [0, 5]
    assert "`grid_layers`, `k`: relative to the model, set for" in \
        DepthCouplingParams().for_model(6, 256)._repr_markdown_()


def test_resolve_reads_the_config_and_skips_a_second_spelling(tmp_path, capsys):
    p = resolve(DepthCouplingParams(model="tiny-llama", compare_models=["tiny-llama",
                                                                         "tiny-gpt2"]))
    assert (p.k, p.grid_layers, p.compare_models) == (4, [0, 1], ["tiny-gpt2"])
    assert "compare model 'tiny-llama' is the same model as 'tiny-llama': skipped" in \
        capsys.readouterr().out


def test_compare_models_default_to_the_other_packaged_models(monkeypatch):
    # On Gemma chapter 05 compared nothing, its fixed list naming Gemma itself
    from llmdyn.models import packaged

    monkeypatch.setattr(packaged, "PACKAGED", dict.fromkeys(["tiny-llama", "tiny-gpt2"]))
    for model, other in (("tiny-llama", "tiny-gpt2"), ("tiny-gpt2", "tiny-llama")):
        p = resolve(DepthCouplingParams(model=model))
        assert p.compare_models == [other]
        assert "`compare_models`, `grid_layers`, `k`: relative to the model" in \
            p._repr_markdown_()
    given = resolve(DepthCouplingParams(model="tiny-llama", compare_models=[]))
    assert given.compare_models == [] and "`compare_models`," not in given._repr_markdown_()


def test_models_that_do_not_load_name_their_parameter(tmp_path):
    with pytest.raises(LlmdynError, match="notebook parameter 'compare_models': 'no-such'"):
        resolve(DepthCouplingParams(model="tiny-llama", compare_models=["no-such"]))
    with pytest.raises(LlmdynError, match="notebook parameter 'model' = 'no-such'"):
        resolve(DepthCouplingParams(model="no-such"))


def test_long_prompts_keep_their_end_or_raise_naming_the_parameters(tiny64):
    from llmdyn import trace

    long = "x " * 60 + "What is the question?"  # byte tokenizer: 141 tokens > n_ctx 64
    # max_prompt_chars is not advised (it does not cut every prompt); the advice
    # given is followed below
    with pytest.raises(LlmdynError, match="cut_long_prompts = True .* or give shorter prompts"):
        trace.context_note(tiny64, [long])
    note = trace.context_note(tiny64, [long, "short"], cut_long_prompts=True)
    ids = trace.encode(tiny64, long, cut_long_prompts=True)
    assert "1 of 2 prompts are longer than its context of 64 tokens" in note
    assert "lose 77–77 tokens" in note  # 141 − 64
    assert ids.shape == (1, 64)
    assert tiny64.tokenizer.decode(ids[0]).endswith("What is the question?")


def test_a_window_longer_than_the_shallowest_model_covers_the_same_fraction():
    from llmdyn.book.params import GeometryAlongDepthParams, relative_window

    assert GeometryAlongDepthParams().for_model(30, 576, shallowest=18).window == 11
    p = GeometryAlongDepthParams().for_model(30, 576, shallowest=6)  # 7 points x^0 … x^6
    assert p.window == 3 and "`window`" in p._repr_markdown_()  # 11·7/31 ≈ 2.5 → 3
    # 11·10/31 ≈ 3.5 → 3; 21·20/31 ≈ 13.5 → 13; 21·4/31 → at least 3; 11 points hold 11
    assert [relative_window(w, L) for w, L in ((11, 9), (21, 19), (21, 3), (11, 10))] \
        == [3, 13, 3, 11]


@pytest.mark.parametrize("cls_name", ["TrajectoriesParams", "GeometryAlongDepthParams",
                                      "UncertaintyParams", "JacobianAlignmentParams",
                                      "DepthCouplingParams", "TokenCouplingParams",
                                      "RegularityParams", "SpectraPromptsParams"])
def test_every_model_chapter_resolves_on_a_tiny_model(cls_name):
    from llmdyn.book import params

    p = resolve(getattr(params, cls_name)(model="tiny-neox", compare_models=[])
                if cls_name != "TokenCouplingParams" else params.TokenCouplingParams(
                    model="tiny-neox"))
    assert getattr(p, "k", 4) == 4 and getattr(p, "window", 3) == 3
