"""A model whose config.json lies about its depth is refused before any use."""

from __future__ import annotations

import json

import pytest

from llmdyn import LlmdynError
from llmdyn.models.loading import load_model, model_shape


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """tiny-llama (3 blocks) saved as a local checkpoint: config.json + model.safetensors."""
    directory = tmp_path_factory.mktemp("tiny-llama")
    model = load_model("tiny-llama", seed=0)
    model.hf.save_pretrained(directory, safe_serialization=True)
    model.tokenizer.save_pretrained(directory)
    return directory


def _with_layers(saved, tmp_path, layers):
    """A copy of `saved` whose config.json says `layers` blocks (the weights keep 3)."""
    copy = tmp_path / "lying"
    copy.mkdir()
    for path in saved.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    config = json.loads((saved / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "num_hidden_layers": layers}))
    return copy


def test_the_honest_checkpoint_loads(saved):
    assert load_model(str(saved)).n_layers == 3
    assert model_shape(str(saved)).n_layers == 3


@pytest.mark.parametrize("layers", [5, 2])
@pytest.mark.parametrize("untrained", [False, True])
def test_config_with_another_depth_is_refused(saved, tmp_path, layers, untrained):
    # The probe: 5 ran the chapter with 2 fresh random blocks, 2 dropped block 2; both exit 0.
    lying = _with_layers(saved, tmp_path, layers)
    want = (rf"{lying / 'config.json'} says {layers} layers \(num_hidden_layers\) but the "
            rf"weights \(model.safetensors in {lying}\) hold 3 blocks")
    with pytest.raises(LlmdynError, match=want):
        load_model(str(lying), untrained=untrained)
    with pytest.raises(LlmdynError, match=want):  # what a chapter's parameters resolve first
        model_shape(str(lying))
