import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.models import ARCHITECTURES, TINY_CONFIGS, known_models, load_model
from tests.conftest import FRANCE


def test_unknown_model_lists_known_names():
    with pytest.raises(LlmdynError, match="smollm2-135m") as err:
        load_model("no-such-model")
    assert "tiny-llama" in str(err.value)


def test_empty_spec_is_refused():
    with pytest.raises(LlmdynError, match="non-empty"):
        load_model("")


@pytest.mark.parametrize("name", sorted(TINY_CONFIGS))
def test_tiny_models_load_without_download(name):
    m = load_model(name)
    assert m.n_layers == 3 and m.d_model == 32
    assert m.hf.config.model_type in ARCHITECTURES
    assert not any(p.requires_grad for p in m.hf.parameters())
    assert m.hf.config._attn_implementation == "eager"


def test_tiny_weights_are_seeded():
    a, b, c = (load_model("tiny-llama", seed=s) for s in (0, 0, 1))
    wa, wb, wc = (m.blocks[0].mlp.up_proj.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_untrained_twin_has_same_config_fresh_weights():
    trained = load_model("tiny-neox", seed=3)
    twin = load_model("tiny-neox", untrained=True, seed=5)
    assert twin.hf.config.to_dict() == trained.hf.config.to_dict()
    assert twin.untrained and twin.identity["untrained_seed"] == 5
    assert twin.model_id != trained.model_id


def test_known_models_lists_packaged_and_tiny():
    assert {"smollm2-135m", "gemma3-270m", "tiny-gpt2"} <= set(known_models())


def test_local_path_goes_through_the_same_loader(tmp_path):
    m = load_model("tiny-llama")
    m.hf.save_pretrained(tmp_path)
    m.tokenizer.save_pretrained(tmp_path)
    again = load_model(str(tmp_path))
    ids = m.tokenizer("hello", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.equal(m.hf(ids).logits, again.hf(ids).logits)
    assert again.identity["source"] == "local"


@pytest.mark.slow
def test_smollm2_predicts_paris(smollm2):
    assert smollm2.n_layers == 30 and smollm2.d_model == 576
    ids = smollm2.tokenizer(FRANCE, return_tensors="pt").input_ids
    with torch.no_grad():
        top = smollm2.hf(ids).logits[0, -1].argmax()
    assert smollm2.tokenizer.decode(top) == " Paris"
    assert smollm2.identity["sha256"].startswith("b179c952")


def test_store_and_load_each(tmp_path):
    from llmdyn.models import load_each

    seen = [(name, kind, m.untrained, m.store(tmp_path).model_id)
            for name, kind, m in load_each(["tiny-llama"], seed=3)]
    assert [s[:3] for s in seen] == [("tiny-llama", "trained", False),
                                    ("tiny-llama", "untrained", True)]
    assert seen[0][3] != seen[1][3]  # twins never share a cache
    with pytest.raises(LlmdynError, match="kinds"):
        next(load_each(["tiny-llama"], kinds=("random",)))
