"""A local checkpoint loads right or is refused in one line that names the file to fix.

Each probe builds its own broken copy of a tiny Llama saved with ``save_pretrained``.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from llmdyn import LlmdynError
from llmdyn.models.files import checkpoint_files, dir_digest
from llmdyn.models.loading import load_model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ckpt") / "tiny-llama"
    m = load_model("tiny-llama", seed=3)
    m.hf.save_pretrained(directory)
    m.tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture
def copy(saved, tmp_path):
    target = tmp_path / "model"
    shutil.copytree(saved, target)
    return target


def _refused(directory, match, *, untrained=False):
    with pytest.raises(LlmdynError, match=match) as err:
        load_model(str(directory), untrained=untrained)
    assert "\n" not in str(err.value)
    return str(err.value)


def _rewrite_weights(directory, change):
    weights = load_file(directory / "model.safetensors")
    change(weights)
    save_file(weights, directory / "model.safetensors", metadata={"format": "pt"})


def _rewrite_config(directory, **fields):
    config = json.loads((directory / "config.json").read_text())
    config.update(fields)
    (directory / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("key", ["model.layers.1.mlp.down_proj.weight", "lm_head.weight"])
def test_a_missing_weight_is_refused_not_drawn_at_random(copy, key):
    _rewrite_weights(copy, lambda w: w.pop(key))  # lm_head: the untied head
    message = _refused(copy, "lack 1 the config needs")
    assert key in message and str(copy / "model.safetensors") in message


def test_an_unexpected_weight_is_refused(copy):
    _rewrite_weights(copy, lambda w: w.update({"model.layers.0.extra.weight": torch.zeros(2)}))
    assert "model.layers.0.extra.weight" in _refused(copy, "does not use")


def test_an_index_naming_a_file_outside_the_directory_is_refused(copy, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.move(copy / "model.safetensors", elsewhere / "x.safetensors")
    keys = load_file(elsewhere / "x.safetensors")
    index = {"metadata": {}, "weight_map": dict.fromkeys(keys, "../elsewhere/x.safetensors")}
    (copy / "model.safetensors.index.json").write_text(json.dumps(index))
    assert "'../elsewhere/x.safetensors'" in _refused(copy, "not a file of")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_weight_file_that_is_not_a_regular_file_is_never_opened(copy, kind):
    (copy / "model.safetensors").unlink()
    if kind == "fifo":
        os.mkfifo(copy / "model.safetensors")  # safe_open would wait forever for a writer
    else:
        os.symlink("/dev/zero", copy / "model.safetensors")
    for untrained in (False, True):
        _refused(copy, "model.safetensors is not a regular file", untrained=untrained)


def test_a_gguf_path_that_is_a_device_is_named_as_such(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.gguf")
    with pytest.raises(LlmdynError, match="zero.gguf.*is not a regular file|/dev/zero is not"):
        load_model(str(tmp_path / "zero.gguf"))


@pytest.mark.parametrize("fields", [{"dtype": "float128"}, {"num_attention_heads": 0},
                                    {"intermediate_size": -4}],
                         ids=["bad-dtype", "zero-heads", "negative-size"])
def test_a_config_transformers_cannot_build_is_one_line(copy, fields):
    _rewrite_config(copy, **fields)
    for untrained in (False, True):
        _refused(copy, "config.json describes no model that builds", untrained=untrained)


def test_a_recursion_bomb_in_the_config_is_one_line(copy):
    text = (copy / "config.json").read_text().rstrip()[:-1]
    nested = '{"text_config": ' * 5000 + "{}" + "}" * 5000
    (copy / "config.json").write_text(f'{text}, "text_config": {nested}}}')
    _refused(copy, "config.json describes no model that builds")


@pytest.mark.parametrize("kind", ["not-json", "passwd"])
def test_a_tokenizer_file_that_cannot_be_read_is_named(copy, kind):
    (copy / "tokenizer.json").unlink()
    if kind == "not-json":
        (copy / "tokenizer.json").write_text("not json{")
    else:
        os.symlink("/etc/passwd", copy / "tokenizer.json")
    message = _refused(copy, "tokenizer.json is not JSON")
    assert "model.safetensors" not in message  # the weights are there: no advice to add them


def test_the_identity_covers_every_file_loading_reads(copy):
    (copy / "merges.txt").write_text("#version: 0.2\n")
    (copy / "tokenizer.model").write_bytes(b"\x00")
    (copy / "added_tokens.json").write_text("{}")
    names = {p.name for p in checkpoint_files(copy, "m")}
    assert {"merges.txt", "tokenizer.model", "added_tokens.json", "config.json",
            "model.safetensors", "tokenizer.json"} <= names
    before = dir_digest(copy)
    (copy / "merges.txt").write_text("#version: 0.2\na b\n")
    assert dir_digest(copy) != before


@pytest.mark.parametrize("name", ["tokenizer.json", "config.json"])
def test_a_config_or_tokenizer_file_that_is_a_device_or_fifo_is_never_read(copy, name):
    (copy / name).unlink()
    if name == "config.json":
        os.mkfifo(copy / name)
    else:
        os.symlink("/dev/zero", copy / name)  # a reader would never reach its end
    _refused(copy, f"the file {copy / name} is not a regular file")
