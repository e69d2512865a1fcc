import pytest

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore, params_hash
from llmdyn.coupling.depth import depth_coupling
from llmdyn.coupling.tokens import token_coupling
from llmdyn.jacobians.cache import cached_per_prompt, jacobian_key
from llmdyn.models.loading import load_model
from llmdyn.trajectories.geometry import token_states
from tests.conftest import FRANCE

LONG = "x " * 60 + "What is the question?"  # byte tokenizer: 141 tokens > n_ctx 64


@pytest.fixture(scope="module")
def llama():
    return load_model("tiny-llama", seed=0)


@pytest.fixture(scope="module")
def gemma():
    return load_model("tiny-gemma3", seed=0)


def test_default_calls_keep_their_cache_directories(llama, gemma, tmp_path):
    # The keys moved into the library unchanged. These names are the ones
    # main at 3de4e51 wrote for the same calls (known bytes: a changed key recomputes).
    for model, names in ((llama, {"depth_coupling-3a9c659bb51a", "token_coupling-4d59d5ffdc4a"}),
                         (gemma, {"depth_coupling-653fe345a9e0", "token_coupling-4af508e0bca5"})):
        root = tmp_path / model.name
        store = ResultStore(model.model_id, root=root)
        depth_coupling(model, [FRANCE], k=4, store=store)
        token_coupling(model, [FRANCE], layer=0, ref_layer=1, k=4, store=store)
        assert {p.parent.name for p in root.rglob("*.npz")} == names


def test_the_route_parameters_are_added_by_the_library(llama, gemma):
    params = {"k": 4, "last_point": "final_norm"}
    assert jacobian_key(llama, params) == params  # Llama's start changes no bit
    assert jacobian_key(gemma, params) == {**params, "mlp_start": "rms_norm_rows"}
    assert params_hash(jacobian_key(gemma, params)) != params_hash(params)
    with pytest.raises(LlmdynError, match="route parameters"):
        jacobian_key(gemma, {**params, "mlp_start": "dense"})  # a caller cannot override it


def test_a_call_that_refuses_long_prompts_never_reads_a_cut_result(llama, tmp_path):
    # Before: with the module-level setting, a cut result cached by one call was served to a
    # later call that had asked for long prompts to raise.
    store = ResultStore(llama.model_id, root=tmp_path)
    cut = depth_coupling(llama, [LONG], k=4, store=store, cut_long_prompts=True)
    assert len(list(tmp_path.rglob("*.npz"))) == 1
    with pytest.raises(LlmdynError, match="set cut_long_prompts = True"):
        depth_coupling(llama, [LONG], k=4, store=store)
    with pytest.raises(LlmdynError, match="set cut_long_prompts = True"):
        token_states(llama, [LONG], store)
    again = depth_coupling(llama, [LONG], k=4, store=store, cut_long_prompts=True)
    assert (again[0].A == cut[0].A).all()  # read back: the key is the same for both settings


def test_a_prompt_that_fits_has_one_result_for_both_settings(llama, tmp_path):
    store = ResultStore(llama.model_id, root=tmp_path)
    calls = []

    def compute(prompt):
        calls.append(prompt)
        return {"n": llama.tokenizer(prompt, return_tensors="np").input_ids}

    for cut in (False, True):
        cached_per_prompt(store, "lengths", llama, {"dtype": "int64"}, [FRANCE], compute,
                          cut_long_prompts=cut, progress=False)
    assert calls == [FRANCE]  # the same ids either way, so computed once
    with pytest.raises(LlmdynError, match="cut_long_prompts must be True or False"):
        cached_per_prompt(store, "lengths", llama, {}, [FRANCE], compute, cut_long_prompts=None)
