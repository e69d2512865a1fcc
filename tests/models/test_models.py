import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.models.architectures import ARCHITECTURES, TINY_CONFIGS
from llmdyn.models.loading import known_models, load_model
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


# --- identity of local checkpoints and clear errors ---

@pytest.fixture
def checkpoint(tmp_path, monkeypatch):
    """A local checkpoint shaped like the training suite's: results/suite/<run>/step<N>/."""
    monkeypatch.setenv("LLMDYN_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "suite" / "run1" / "step100"
    m = load_model("tiny-neox")
    m.hf.save_pretrained(path)
    m.tokenizer.save_pretrained(path)
    (path / "metrics.json").write_text('{"loss": 3.0}')
    return path


def _overwrite_weights(path, seed):
    load_model("tiny-neox", seed=seed).hf.save_pretrained(path)


def test_local_model_is_keyed_by_content_of_its_weights(checkpoint):
    import json

    first = load_model(str(checkpoint))
    assert first.model_id.startswith("run1--step100-") and len(first.model_id) == 22
    assert first.model_id == load_model(str(checkpoint)).model_id  # stable
    json.dumps(first.identity)  # provenance stays JSON-serialisable
    (checkpoint / "metrics.json").write_text('{"loss": 2.0}')  # logs do not change the key
    assert load_model(str(checkpoint)).model_id == first.model_id
    _overwrite_weights(checkpoint, seed=1)
    second = load_model(str(checkpoint))
    assert second.model_id != first.model_id
    assert second.identity["sha256"] != first.identity["sha256"]


def test_overwritten_checkpoint_recomputes_not_reads_stale(checkpoint):
    from llmdyn.core.store import ResultStore

    def norm(m):
        ids = m.tokenizer("hello", return_tensors="pt").input_ids
        with torch.no_grad():
            return {"norm": m.hf(ids).logits.norm().reshape(1)}

    m = load_model(str(checkpoint))
    old = ResultStore(m.model_id, provenance=m.identity).cached("n", {}, "a", lambda: norm(m))
    _overwrite_weights(checkpoint, seed=1)
    m2 = load_model(str(checkpoint))
    new = ResultStore(m2.model_id, provenance=m2.identity).cached("n", {}, "a", lambda: norm(m2))
    assert new["norm"][0] == pytest.approx(float(norm(m2)["norm"][0]))
    assert new["norm"][0] != old["norm"][0]


def test_untrained_twin_of_checkpoints_shares_a_key_across_steps(checkpoint, tmp_path):
    other = tmp_path / "suite" / "run1" / "step200"
    load_model("tiny-neox", seed=1).hf.save_pretrained(other)
    load_model("tiny-neox").tokenizer.save_pretrained(other)
    a = load_model(str(checkpoint), untrained=True)
    b = load_model(str(other), untrained=True)
    assert a.identity["config_sha256"] == b.identity["config_sha256"]
    assert a.model_id.endswith("-untrained-s0")
    assert a.model_id != load_model(str(checkpoint)).model_id


def test_file_hash_is_remembered_until_the_file_changes(checkpoint, monkeypatch):
    from llmdyn.models import files as modelfiles

    load_model(str(checkpoint))
    calls = []
    real = modelfiles.sha256_of
    monkeypatch.setattr(modelfiles, "sha256_of", lambda p: calls.append(p) or real(p))
    load_model(str(checkpoint))
    assert calls == []  # every file remembered by its stat stamp
    _overwrite_weights(checkpoint, seed=2)
    load_model(str(checkpoint))
    assert sorted(p.name for p in calls) == ["config.json", "model.safetensors"]  # rewritten


def test_a_checkpoints_files_are_hashed_and_remembered_in_one_write(checkpoint, monkeypatch):
    import json

    from llmdyn.models import files as modelfiles

    writes = []
    real = modelfiles._write_json
    monkeypatch.setattr(modelfiles, "_write_json", lambda path, data: writes.append(data) or real(
        path, data))
    digest = modelfiles.dir_digest(checkpoint)
    assert len(writes) == 1  # was one rewrite of the whole index per file
    index = json.loads((modelfiles.cache_dir() / modelfiles._INDEX).read_text())
    names = sorted(p.name for p in checkpoint.iterdir() if str(p.resolve()) in index)
    assert "config.json" in names and "model.safetensors" in names
    for name in names:  # each remembered hash is the file's own
        path = (checkpoint / name).resolve()
        assert index[str(path)]["sha256"] == modelfiles.sha256_of(path)
    assert modelfiles.dir_digest(checkpoint) == digest and len(writes) == 1  # all remembered


def test_hub_model_is_keyed_by_resolved_commit(monkeypatch):
    from llmdyn.models import loading as models

    tiny = load_model("tiny-gpt2")
    tiny.hf.config._commit_hash = "0123456789abcdef"
    asked = []

    def fake_load(path, spec, revision=None, weights=True):
        asked.append((path, revision, weights))
        return (tiny.hf if weights else None), tiny.tokenizer, tiny.hf.config

    monkeypatch.setattr(models, "load_pretrained", fake_load)  # where load_model looks it up
    m = load_model("someone/model")
    assert m.model_id == "someone--model-01234567"
    assert m.identity["revision"] == "0123456789abcdef"
    load_model("EleutherAI/pythia-70m@step1000")  # a revision (Pythia's checkpoint branches)
    assert asked[-1] == ("EleutherAI/pythia-70m", "step1000", True)
    twin = load_model("someone/model", untrained=True, seed=2)  # the config alone, no weights
    assert asked[-1] == ("someone/model", None, False)
    assert twin.model_id == "someone--model-01234567-untrained-s2"


@pytest.mark.parametrize("make, match", [
    (lambda d: d, "has no config.json.*config.json and model.safetensors"),
    (lambda d: d / "nope", "does not exist"),
])
def test_not_a_model_directory(tmp_path, make, match):
    with pytest.raises(LlmdynError, match=match):
        load_model(str(make(tmp_path)))


def test_system_directory_is_not_a_model():
    with pytest.raises(LlmdynError, match="has no config.json"):
        load_model("../../../../../../etc")


def test_mistyped_local_path_shaped_like_hub_id_is_not_sent_to_the_hub(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    with pytest.raises(LlmdynError, match="does not exist"):
        load_model("results/typo")


def test_pickled_checkpoint_is_refused_with_how_to_convert(tmp_path):
    m = load_model("tiny-gpt2")
    m.hf.config.save_pretrained(tmp_path)
    (tmp_path / "pytorch_model.bin").write_bytes(b"pickle bytes are never read")
    with pytest.raises(LlmdynError, match="never unpickles.*save_pretrained"):
        load_model(str(tmp_path))


def test_corrupt_safetensors_names_the_file(checkpoint):
    path = checkpoint / "model.safetensors"
    path.write_bytes(b"\xff" * 8 + path.read_bytes()[8:])
    with pytest.raises(LlmdynError, match="model.safetensors.*corrupt"):
        load_model(str(checkpoint))


def test_cuda_without_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(LlmdynError, match="device='cuda'.*no CUDA"):
        load_model("tiny-gpt2", device="cuda")
    with pytest.raises(LlmdynError, match="device must be a torch device"):
        load_model("tiny-gpt2", device="gpu")


def test_same_checkpoint_by_relative_or_absolute_path_shares_cached_results(checkpoint,
                                                                           monkeypatch):
    from llmdyn.core.store import ResultStore

    monkeypatch.chdir(checkpoint.parent)
    rel, absolute = load_model("./step100"), load_model(str(checkpoint))
    assert rel.model_id == absolute.model_id
    calls = []
    for m in (rel, absolute):
        ResultStore(m.model_id, provenance=m.identity).cached(
            "n", {}, "a", lambda: calls.append(1) or {"x": np.zeros(1)})
    assert calls == [1]


def test_local_gguf_key_is_short(tmp_path, monkeypatch):
    from llmdyn.models import packaged

    gguf = tmp_path / "My Model.Q4.gguf"
    gguf.write_bytes(b"gguf")
    monkeypatch.setenv("LLMDYN_CACHE", str(tmp_path / "cache"))
    tiny = load_model("tiny-llama")

    def fake_converted(label, sha, get):
        out = tmp_path / "conv"
        tiny.hf.save_pretrained(out)
        tiny.tokenizer.save_pretrained(out)
        return out, "f" * 64

    monkeypatch.setattr(packaged, "converted", fake_converted)
    m = load_model(str(gguf))
    assert m.model_id.startswith("My_Model.Q4-") and len(m.model_id) == len("My_Model.Q4-") + 8


def test_each_model_loads_trained_and_one_twin_per_seed_in_turn(tmp_path):
    from llmdyn.models.loading import each_model

    seen = [(name, state, seed, m.untrained, m.store(tmp_path).model_id)
            for name, state, seed, m in each_model(["tiny-llama"], seeds=[4, 7])]
    assert [s[:4] for s in seen] == [("tiny-llama", "trained", 4, False),
                                    ("tiny-llama", "untrained", 4, True),
                                    ("tiny-llama", "untrained", 7, True)]
    assert len({s[4] for s in seen}) == 3  # trained and each twin have their own cache
    twins = [(seed, m.identity["untrained_seed"]) for _, _, seed, m in
             each_model(["tiny-llama"], states=("untrained",), seeds=[7])]
    assert twins == [(7, 7)]
    with pytest.raises(LlmdynError, match="states"):
        next(each_model(["tiny-llama"], states=("random",)))


def test_each_model_frees_a_model_before_the_next_loads():
    import gc
    import weakref

    from llmdyn.models.loading import each_model

    alive = []
    for _, _, _, m in each_model(["tiny-llama"], seeds=[1, 2]):
        alive = [r for r in alive if r() is not None]
        assert not alive, "the previous model was still alive when this one loaded"
        alive.append(weakref.ref(m.hf))
        del m  # the chapters' pattern: keep numpy results only
    gc.collect()


def test_each_model_collects_a_model_that_a_reference_cycle_holds():
    import gc
    import weakref

    from llmdyn.models.loading import each_model

    alive = []
    gc.disable()  # only each_model's own collection may free it
    try:
        for _, _, _, m in each_model(["tiny-llama"], seeds=[1, 2]):
            alive = [r for r in alive if r() is not None]
            assert not alive, "a model held by a cycle was still alive when the next loaded"
            alive.append(weakref.ref(m.hf))
            m.extra["itself"] = m  # a cycle: del m alone does not free it
            del m
    finally:
        gc.enable()


def test_a_checkpoints_tokenizer_is_read_once_until_its_files_change(tmp_path):
    m = load_model("tiny-llama")
    m.hf.save_pretrained(tmp_path)
    m.tokenizer.save_pretrained(tmp_path)
    first, twin = load_model(str(tmp_path)), load_model(str(tmp_path), untrained=True)
    assert twin.tokenizer is first.tokenizer  # one parse for the model and its twins
    assert twin.untrained and twin.hf.config.hidden_size == first.hf.config.hidden_size
    m.tokenizer.save_pretrained(tmp_path)  # rewritten: read again
    assert load_model(str(tmp_path)).tokenizer is not first.tokenizer


@pytest.mark.parametrize("change, why", [
    ({"vocab_size": 2}, r"Padding_idx must be within num_embeddings"),
    ({"num_attention_heads": 5}, r"hidden size \(32\) is not a multiple of the number of "
                                 r"attention heads \(5\)")])
def test_a_config_whose_values_build_no_model_is_one_line(tmp_path, change, why):
    # AssertionError and StrictDataclassClassValidationError tracebacks.
    import json

    m = load_model("tiny-llama")
    m.hf.save_pretrained(tmp_path)
    m.tokenizer.save_pretrained(tmp_path)
    saved = (tmp_path / "config.json").read_text()
    (tmp_path / "config.json").write_text(json.dumps({**json.loads(saved), **change}))
    with pytest.raises(LlmdynError, match=f"config.json describes no model that builds \\(.*"
                                          f"{why}.*\\); restore the config.json saved with"):
        load_model(str(tmp_path))
    (tmp_path / "config.json").write_text(saved)  # the advice, followed
    assert load_model(str(tmp_path)).n_layers == m.n_layers
