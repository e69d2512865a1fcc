import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.coupling.depth import depth_coupling
from llmdyn.jacobians.full import block_jacobians
from llmdyn.jacobians.last_token import FrozenPrefix, last_token_jacobians
from llmdyn.jacobians.mlp_start import route_params
from tests.conftest import FRANCE
from tests.helpers import route_rtol

# Longer than tiny Gemma 3's sliding window (4), so the window trimming is exercised.
PROMPTS = ["Hi, you there", "x", FRANCE]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_equals_the_full_prompt_route(tiny64, prompt):
    fast = last_token_jacobians(tiny64, prompt)
    exact = block_jacobians(tiny64, prompt, pairs="last", method="exact", progress=False)[:, 0]
    assert fast.shape == (tiny64.n_layers, tiny64.d_model, tiny64.d_model)
    # Float64 models, but Gemma's norms compute in float32 and the prefix run batches its
    # float32 steps differently from the full run: agreement to float32 rounding.
    scale = exact.abs().max()
    assert torch.allclose(fast, exact, rtol=0, atol=1e-6 * scale)


def test_layer_subset_and_negative_index(tiny64):
    all_layers = last_token_jacobians(tiny64, FRANCE)
    some = last_token_jacobians(tiny64, FRANCE, layers=[-1, 0])
    assert torch.equal(some[0], all_layers[-1]) and torch.equal(some[1], all_layers[0])


def test_bad_layer_raises(tiny64):
    with pytest.raises(LlmdynError, match="out of range"):
        last_token_jacobians(tiny64, FRANCE, layers=[7])


def test_frozen_prefix_never_grows():
    k0, v0 = torch.zeros(1, 2, 3, 4), torch.ones(1, 2, 3, 4)
    cache = FrozenPrefix({0: (k0, v0)})
    for _ in range(3):
        k, v = cache.update(torch.full((1, 2, 1, 4), 5.0), torch.full((1, 2, 1, 4), 6.0), 0)
        assert k.shape == v.shape == (1, 2, 4, 4)
    assert torch.equal(k[:, :, :3], k0) and float(v[0, 0, 3, 0]) == 6.0


def test_depth_coupling_last_token_matches_exact_jacobians(tiny64):
    from llmdyn.coupling.depth import coupling_from_jacobians

    (fast,) = depth_coupling(tiny64, ["Hi, you there"], k=4)
    J = block_jacobians(tiny64, "Hi, you there", pairs="last", method="exact", progress=False)
    exact = coupling_from_jacobians(J[:, 0], 4)
    assert abs(fast.S - exact.S).max() < max(1e-9, route_rtol(tiny64)) * abs(exact.S).max()
    assert abs(fast.miscoupling - exact.miscoupling).max() < 1e-7


# Different lengths (1, 13 and 45 tokens on the tiny models), one twice: padding, masks and
# rows that coincide all occur in one batch.
BATCH = ["Hi, you there", "x", FRANCE, "Hi, you there"]


@pytest.mark.parametrize("per", [1, 3, 4])
def test_batched_equals_one_prompt_at_a_time(tiny64, per):
    from llmdyn.jacobians.last_token import last_token_jacobians_batched

    one = torch.stack([last_token_jacobians(tiny64, p) for p in BATCH])
    many = last_token_jacobians_batched(tiny64, BATCH, prompts_per_batch=per)
    assert many.shape == (len(BATCH), tiny64.n_layers, tiny64.d_model, tiny64.d_model)
    scale = one.abs().amax(dim=(1, 2, 3), keepdim=True)  # per prompt
    assert ((many - one).abs() <= 1e-6 * scale).all()


def test_batched_float32_within_1e6():
    from llmdyn.jacobians.last_token import last_token_jacobians_batched
    from llmdyn.models.loading import load_model

    model = load_model("tiny-llama", seed=0)
    assert model.hf.dtype == torch.float32
    one = torch.stack([last_token_jacobians(model, p) for p in BATCH])
    many = last_token_jacobians_batched(model, BATCH, layers=[0, -1], prompts_per_batch=4)
    assert torch.allclose(many, one[:, [0, -1]], rtol=0, atol=1e-6 * float(one.abs().max()))


def test_batched_bad_arguments_raise(tiny64):
    from llmdyn.jacobians.last_token import last_token_jacobians_batched

    with pytest.raises(LlmdynError, match="prompts must be"):
        last_token_jacobians_batched(tiny64, FRANCE)
    with pytest.raises(LlmdynError, match="prompts_per_batch"):
        last_token_jacobians_batched(tiny64, [FRANCE], prompts_per_batch=0)


def test_depth_coupling_caches_each_prompt(tiny64, tmp_path):
    from llmdyn.core.store import ResultStore
    from llmdyn.coupling.depth import coupling_from_jacobians

    prompts = ["x", FRANCE, "Hi, you there", FRANCE]  # a repeated prompt
    store = ResultStore(tiny64.model_id, root=tmp_path)
    got = depth_coupling(tiny64, prompts, k=4, store=store)
    for prompt, res in zip(prompts, got, strict=True):
        ref = coupling_from_jacobians(last_token_jacobians(tiny64, prompt), 4)
        assert abs(res.S - ref.S).max() <= 1e-6 * abs(ref.S).max()
        assert abs(res.A - ref.A).max() <= 1e-6 * abs(ref.A).max()
    params = {"k": 4, "layers": list(range(tiny64.n_layers)), "token": -1, "dtype": "float32",
              "last_point": "final_norm", **route_params(tiny64)}
    assert store.missing("depth_coupling", params, prompts) == []
    again = depth_coupling(tiny64, prompts, k=4, store=store)  # all from the cache
    assert all(abs(a.A - b.A).max() <= 1e-6 * abs(b.A).max()
               for a, b in zip(again, got, strict=True))


def test_constant_matmul_batches_into_rows_and_differentiates():
    from torch.func import vjp, vmap

    from llmdyn.jacobians.attention import _ConstantMatmul

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 1, 5, dtype=torch.float64, generator=g)  # (P, h, 1, tok)
    w = torch.randn(2, 3, 5, 4, dtype=torch.float64, generator=g)  # constant (P, h, tok, hd)
    xs = torch.randn(7, *x.shape, dtype=torch.float64, generator=g)
    assert torch.allclose(vmap(lambda a: _ConstantMatmul.apply(a, w))(xs), xs @ w)
    cot = torch.randn(7, 2, 3, 1, 4, dtype=torch.float64, generator=g)
    (rows,) = vmap(vjp(lambda a: _ConstantMatmul.apply(a, w), x)[1])(cot)
    assert torch.allclose(rows, cot @ w.transpose(-1, -2))
    ws = torch.randn(7, *w.shape, dtype=torch.float64, generator=g)  # batched weight
    assert torch.allclose(vmap(lambda b: _ConstantMatmul.apply(x, b))(ws), x @ ws)


def test_frozen_prefix_attention_equals_the_concatenated_cache(tiny64, monkeypatch):
    from llmdyn.jacobians import last_token as step_jacobians

    if not step_jacobians.supports_frozen_prefix(tiny64):
        pytest.skip("this architecture keeps the concatenated cache")
    fast = step_jacobians.last_token_jacobians_batched(tiny64, BATCH, prompts_per_batch=4)
    monkeypatch.setattr(step_jacobians, "supports_frozen_prefix", lambda model: False)
    slow = step_jacobians.last_token_jacobians_batched(tiny64, BATCH, prompts_per_batch=4)
    assert torch.allclose(fast, slow, rtol=0, atol=1e-12 * float(slow.abs().max()))


def test_a_cached_value_does_not_depend_on_the_prompts_computed_with_it(tmp_path):
    # Prompts shared a batch of 4, padded to the longest, so an item deleted
    # from the cache and recomputed alone came back different (4.8e-5 in A on SmolLM2). Each
    # prompt is now computed on its own: the same bits, whatever came with it. Bitwise (not a
    # tolerance): the same code runs on the same shapes in one process.
    import numpy as np

    from llmdyn.core.store import ResultStore
    from llmdyn.models.loading import load_model

    model = load_model("tiny-llama", seed=0)  # float32, as the chapters run
    together = ["x", FRANCE, "Hi, you there", "A much longer prompt, with more tokens in it"]
    with_others = depth_coupling(model, together, k=4,
                                 store=ResultStore(model.model_id, root=tmp_path / "a"))
    for i in (1, 3):  # the longest prompt and a shorter one, each recomputed alone
        alone = depth_coupling(model, [together[i]], k=4,
                               store=ResultStore(model.model_id, root=tmp_path / f"b{i}"))[0]
        for name, value in alone.as_arrays().items():
            assert np.array_equal(value, getattr(with_others[i], name)), (together[i], name)


def _routes(monkeypatch, model, start_table):
    """Each prompt's J_nn from the given table of MLP starts, and from the generic route."""
    from llmdyn.jacobians import last_token as lt
    from llmdyn.jacobians import mlp_start

    routes = []
    for table in (start_table, {}):
        monkeypatch.setattr(mlp_start, "MLP_OUTPUT", table)
        routes.append((lt.last_token_jacobians(model, FRANCE, last_point="block_output"),
                       lt.last_token_jacobians_batched(model, PROMPTS, prompts_per_batch=3)))
    return routes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_starting_from_the_mlp_projection_rows_changes_no_bit(monkeypatch, dtype):
    # e_k W is exactly W's row k, so cotangents (e_k, W[k]) with the projection's output
    # detached give the same rows as e_k alone, bit for bit, single and batched.
    from llmdyn.jacobians import mlp_start
    from llmdyn.models.loading import load_model

    model = load_model("tiny-llama", seed=0, dtype=dtype)
    assert [mlp_start.mlp_output(model, b) is not None for b in range(model.n_layers)] == [
        True] * (model.n_layers - 1) + [False]  # the papers' last block ends in the final norm
    assert mlp_start.mlp_output(model, model.n_layers - 1, "block_output").norm is None
    start, generic = _routes(monkeypatch, model, mlp_start.MLP_OUTPUT)
    assert all(torch.equal(a, b) for a, b in zip(start, generic, strict=True))


def _keep_norms_in(dtype, model):
    """Gemma's norms compute in float32 whatever the model's dtype; make them keep ``dtype``."""
    import types

    from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm

    def forward(self, x):
        return self._norm(x) * (1.0 + self.weight.to(x.dtype))

    for module in model.hf.modules():
        if isinstance(module, Gemma3RMSNorm):  # per instance: nnsight wraps each forward
            module.forward = types.MethodType(forward, module)


def test_rms_norm_rows_are_the_norms_jacobian_times_w():
    # Known answer: autograd's Jacobian of a -> N(W a), in float64 with the norm kept in
    # float64, so the two agree to float64 rounding.
    from llmdyn.jacobians.mlp_start import rms_norm_rows
    from llmdyn.models.loading import load_model

    model = load_model("tiny-gemma3", seed=0, dtype=torch.float64)
    _keep_norms_in(torch.float64, model)
    norm = model.blocks[0].post_feedforward_layernorm
    w = model.blocks[0].mlp.down_proj.weight.detach()  # (d_model, d_mlp)
    a = torch.randn(3, w.shape[1], dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    rows = rms_norm_rows(norm, a @ w.T, w)  # (d_model, prompt, d_mlp)
    for p in range(3):
        jac = torch.autograd.functional.jacobian(lambda x: norm(x @ w.T), a[p])
        assert torch.allclose(rows[:, p], jac, rtol=0, atol=1e-13 * float(jac.abs().max()))


def test_starting_after_gemmas_mlp_norm_agrees_with_the_generic_route(monkeypatch):
    # Gemma 3 normalises the MLP's output before the residual sum, so the start is the rows of
    # J_N W, computed from N's closed form: not bit-identical to the dense product. In float64
    # with the norms kept in float64 the two routes agree to float64 rounding (1e-12 of the
    # largest entry); in float32 to float32 rounding (measured 3e-7 on tiny Gemma 3, bound 5e-6).
    from llmdyn.jacobians import mlp_start
    from llmdyn.models.loading import load_model

    model = load_model("tiny-gemma3", seed=0, dtype=torch.float64)
    assert [mlp_start.mlp_output(model, b) is not None for b in range(model.n_layers)] == [
        True] * (model.n_layers - 1) + [False]
    assert mlp_start.mlp_output(model, 0).norm is model.blocks[0].post_feedforward_layernorm
    _keep_norms_in(torch.float64, model)
    for tol, m in ((1e-12, model), (5e-6, load_model("tiny-gemma3", seed=0))):
        start, generic = _routes(monkeypatch, m, mlp_start.MLP_OUTPUT)
        for a, b in zip(start, generic, strict=True):
            assert torch.allclose(a, b, rtol=0, atol=tol * float(b.abs().max()))


def test_results_of_the_normed_start_get_their_own_cache_key(tmp_path):
    # Gemma's normed start rounds differently from the generic route, so its depth coupling is
    # cached under a new key; Llama's start changes no bit and keeps its key.
    from llmdyn.core.store import ResultStore
    from llmdyn.models.loading import load_model

    assert route_params(load_model("tiny-llama", seed=0)) == {}
    gemma = load_model("tiny-gemma3", seed=0)
    assert route_params(gemma) == {"mlp_start": "rms_norm_rows"}
    store = ResultStore(gemma.model_id, root=tmp_path)
    depth_coupling(gemma, [FRANCE], k=4, store=store)
    (sidecar,) = tmp_path.rglob("*.json")
    assert '"mlp_start": "rms_norm_rows"' in sidecar.read_text()
