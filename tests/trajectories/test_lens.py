"""The logit-lens entropy per layer equals the entropy of the model's own head on the states."""

import numpy as np
import pytest
import torch

from llmdyn.core.store import ResultStore
from llmdyn.models.loading import load_model
from llmdyn.trace import encode, logit_lens, trajectory
from llmdyn.trajectories.lens import entropy, lens_entropy
from tests.conftest import FRANCE

PROMPTS = [FRANCE, "United States of", "What month was I born in?"]


def test_lens_entropy_matches_the_logit_lens(tiny64, tmp_path):
    store = ResultStore(tiny64.model_id, root=tmp_path)
    got = lens_entropy(tiny64, PROMPTS, store)
    assert got.shape == (3, tiny64.n_layers + 1)
    tr = trajectory(tiny64, PROMPTS[2])
    want = entropy(logit_lens(tiny64, tr.states[:, -1].float()).double()).numpy()
    np.testing.assert_allclose(got[2], want, rtol=1e-5)
    normed = lens_entropy(tiny64, PROMPTS, store, lens="normed")  # same cached states
    np.testing.assert_allclose(normed[:, -1], got[:, -1], rtol=1e-12)  # l = L: both agree
    assert not np.allclose(normed[:, :-1], got[:, :-1])
    with torch.no_grad():  # the last layer reads the model's real prediction
        logits = tiny64.hf(tr.input_ids[None]).logits[0, -1]
    assert got[2, -1] == pytest.approx(float(entropy(logits)), rel=1e-5)
    assert (got <= np.log(tiny64.vocab_size) + 1e-9).all() and (got >= 0).all()


def test_top_text():
    from llmdyn.trajectories.lens import top_text

    assert top_text(["Paris", "the", "a", "x"], np.array([0.861, 0.02, 0.01, 0.0])) == \
        "‘Paris’ 0.86, ‘the’ 0.02, ‘a’ 0.01"


def test_readout_with_mismatched_fields_raises():
    from llmdyn import LlmdynError
    from llmdyn.trajectories.lens import LensReadout

    with pytest.raises(LlmdynError, match="LensReadout fields disagree"):
        LensReadout(np.zeros(3), np.zeros((3, 2), int), np.zeros((3, 2)), np.zeros(3),
                    np.zeros(4), 1.0)


def _norm_by_hand(model, x):
    """The final norm written out from its weights, in float64: LayerNorm (GPT-2, NeoX),
    RMSNorm w·x/rms(x) (Llama) or (1 + w)·x/rms(x) (Gemma 3)."""
    norm, x = model.final_norm, x.double()
    if isinstance(norm, torch.nn.LayerNorm):
        centred = x - x.mean(-1, keepdim=True)
        scale = torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + norm.eps)
        return centred * scale * norm.weight + norm.bias
    eps = getattr(norm, "variance_epsilon", None) or norm.eps
    gain = 1 + norm.weight if model.hf.config.model_type == "gemma3_text" else norm.weight
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gain


@pytest.fixture(scope="module", params=["tiny-gpt2", "tiny-llama", "tiny-neox", "tiny-gemma3"])
def tiny_norm(request):
    """A tiny model whose final norm has random gains (and biases): a norm that matters."""
    model = load_model(request.param, seed=0, dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in model.final_norm.parameters():
            param.copy_(0.5 + torch.rand(param.shape, generator=g, dtype=param.dtype))
    return model


def test_paper_lens_and_normed_lens_by_hand(tiny_norm):
    """paper: softmax(W_U x^l) for l < L; normed: softmax(W_U norm(x^l)); both the model at L.

    W_U x^l runs in float64 on both sides (1e-10). HF's RMSNorm (Llama, Gemma 3) computes in
    float32 whatever the model dtype, so the normed lens agrees with the float64 hand norm to
    float32 rounding of logits of size ~1: atol 1e-5.
    """
    m, L = tiny_norm, tiny_norm.n_layers
    raw = trajectory(m, FRANCE, last_point="block_output").states[:, -1]  # (layer+1, d)
    W = m.head.weight.double()  # (vocab, d_model); the tiny models have no head bias
    with torch.no_grad():
        model_logits = m.hf(encode(m, FRANCE)).logits[0, -1].double()
    for states, lp in ((raw, "block_output"), (trajectory(m, FRANCE).states[:, -1], "final_norm")):
        paper = logit_lens(m, states, lens="paper", last_point=lp)  # (layer+1, vocab)
        normed = logit_lens(m, states, lens="normed", last_point=lp)
        torch.testing.assert_close(paper[:L], raw[:L].double() @ W.T, rtol=0, atol=1e-10)
        torch.testing.assert_close(normed[:L], _norm_by_hand(m, raw[:L]) @ W.T, rtol=0, atol=1e-5)
        for logits in (paper[L], normed[L]):  # l = L: the model's own output under both
            torch.testing.assert_close(logits, _norm_by_hand(m, raw[L]) @ W.T, rtol=0, atol=1e-5)
            torch.testing.assert_close(logits, model_logits, rtol=0, atol=1e-10)
        assert not torch.allclose(paper[:L], normed[:L], atol=1e-3)
    got = lens_entropy(m, [FRANCE], lens="paper")[0]
    want = entropy(raw[:L].double() @ W.T).numpy()
    np.testing.assert_allclose(got[:L], want, rtol=1e-5)  # token_states is float32


def test_paper_lens_sharpens_as_the_norm_grows(tiny_norm):
    """Paper B Proposition 1: without the norm, scaling x^l by c > 1 lowers the entropy
    (S(softmax(c z)) falls with c for non-constant z); the normed lens is scale-invariant
    (up to the norm's eps <= 1e-5, against mean x^2 >= 1 here: x is rescaled to unit RMS)."""
    m, L = tiny_norm, tiny_norm.n_layers
    raw = trajectory(m, FRANCE, last_point="block_output").states[:, -1]
    x, last = raw[L // 2] / raw[L // 2].pow(2).mean().sqrt(), raw[L:]
    scales = [1.0, 2.0, 4.0, 8.0]
    entropies = {lens: [float(entropy(logit_lens(
        m, torch.cat([c * x[None], last]), lens=lens, last_point="block_output")[0]))
        for c in scales] for lens in ("paper", "normed")}
    assert all(a > b for a, b in zip(entropies["paper"][:-1], entropies["paper"][1:],
                                     strict=True))
    np.testing.assert_allclose(entropies["normed"], entropies["normed"][0], rtol=1e-4)
