import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.trace import logit_lens, trajectory
from tests.conftest import FRANCE


def _hf_reference(model, ids):
    with torch.no_grad():
        out = model.hf(ids[None], output_hidden_states=True, use_cache=False)
    return torch.stack(out.hidden_states)[:, 0], out.logits[0]


def test_trajectory_matches_output_hidden_states(tiny64):
    """The papers' end point (default): X^L after the final norm, HF's hidden_states[-1]."""
    tr = trajectory(tiny64, FRANCE)
    hs, logits = _hf_reference(tiny64, tr.input_ids)
    L = tiny64.n_layers
    assert tr.states.shape == (L + 1, len(tr.tokens), tiny64.d_model)
    assert tr.last_point == "final_norm"
    # Same operations in the same order: equal to the last bit before the norm; the norm is
    # applied to [tok, d] here and to [1, tok, d] in HF, so allow float64 rounding there.
    assert torch.equal(tr.states[:L], hs[:L])
    assert torch.allclose(tr.states[L], hs[L], rtol=0, atol=1e-12)
    # The other convention: the raw output of the last block, whose norm is HF's last state.
    raw = trajectory(tiny64, FRANCE, last_point="block_output")
    assert raw.last_point == "block_output" and torch.equal(raw.states[:L], hs[:L])
    assert torch.allclose(tiny64.final_norm(raw.states[L]), hs[L], rtol=0, atol=1e-12)
    assert not torch.allclose(raw.states[L], hs[L])
    for lens in ("paper", "normed"):  # both lenses end at the model's own logits
        for states, lp in ((tr.states, "final_norm"), (raw.states, "block_output")):
            got = logit_lens(tiny64, states, lens=lens, last_point=lp)[L]
            assert torch.allclose(got, logits, rtol=0, atol=1e-12), (lens, lp)


@pytest.mark.slow
def test_smollm2_trajectory_and_logit_lens(smollm2):
    tr = trajectory(smollm2, FRANCE)
    hs, logits = _hf_reference(smollm2, tr.input_ids)
    assert torch.equal(tr.states[:30], hs[:30])
    assert torch.allclose(tr.states[30], hs[30], rtol=0, atol=1e-5)  # X^L after the norm
    lens = logit_lens(smollm2, tr.states[:, -1])  # (layer+1, vocab)
    # float32 with a different batch shape in the head's matmul: logits of size ~20 agree to
    # a few ulps of their magnitude.
    assert torch.allclose(lens[-1], logits[-1], rtol=0, atol=1e-4)
    assert smollm2.tokenizer.decode(lens[-1].argmax()) == " Paris"


def test_empty_prompt_is_refused(tiny64):
    with pytest.raises(LlmdynError, match="non-empty"):
        trajectory(tiny64, "   ")


def test_prompt_longer_than_context_is_refused(tiny64):
    with pytest.raises(LlmdynError, match="accepts at most 64"):
        trajectory(tiny64, "x" * 100)  # byte tokenizer: 100 tokens > n_ctx 64


def test_logit_lens_checks_width(tiny64):
    with pytest.raises(LlmdynError, match="d_model=32"):
        logit_lens(tiny64, torch.zeros(3, 31))


def test_conventions_refuse_unknown_names(tiny64):
    with pytest.raises(LlmdynError, match="last_point must be"):
        trajectory(tiny64, FRANCE, last_point="normed")
    with pytest.raises(LlmdynError, match="lens must be"):
        logit_lens(tiny64, torch.zeros(3, 32), lens="tuned")
    with pytest.raises(LlmdynError, match="layer axis"):
        logit_lens(tiny64, torch.zeros(32))


def test_trajectory_skips_the_head_and_keeps_the_same_bits(tiny64):
    # The trace asks for one token's logits only; the blocks' inputs are unchanged, so every
    # hidden state must be bitwise the one of a full forward pass (tolerance 0).
    import llmdyn.trace as trace

    assert trace.one_logit(tiny64) in ({"logits_to_keep": 1}, {})
    fast = trajectory(tiny64, FRANCE).states
    full_forward = trace.one_logit
    try:
        trace.one_logit = lambda model: {}
        full = trajectory(tiny64, FRANCE).states
    finally:
        trace.one_logit = full_forward
    assert torch.equal(fast, full)


def test_the_advice_for_a_long_prompt_works_when_followed(tiny64):
    # The advised max_prompt_chars did not shorten example_prompt (chapters
    # 01, 02, 06 have no such parameter); cut_long_prompts is what every chapter has.
    with pytest.raises(LlmdynError, match="set cut_long_prompts = True") as refused:
        trajectory(tiny64, "x" * 100)
    assert "max_prompt_chars" not in str(refused.value)
    assert "pass cut_long_prompts=True" in str(refused.value)  # the advice in code
    # what cut_long_prompts = True does in a chapter: the chapter passes it to each call
    assert len(trajectory(tiny64, "x" * 100, cut_long_prompts=True).tokens) <= 64
    with pytest.raises(LlmdynError, match="cut_long_prompts must be True or False"):
        trajectory(tiny64, "x" * 100, cut_long_prompts="yes")


def test_the_setting_is_an_argument_not_a_state_of_the_module(tiny64):
    # keep_prompt_ends set a module-level policy that every later encode read.
    from llmdyn import trace

    assert not hasattr(trace, "keep_prompt_ends") and not hasattr(trace, "_LONG_PROMPTS")
    long = "x" * 100
    assert trace.encode(tiny64, long, cut_long_prompts=True).shape == (1, 64)
    with pytest.raises(LlmdynError, match="accepts at most 64"):
        trace.encode(tiny64, long)  # a cut before leaves no trace on the next call
