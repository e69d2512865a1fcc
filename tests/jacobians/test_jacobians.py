import pytest
import torch
from torch.func import vmap

from llmdyn import LlmdynError
from llmdyn.jacobians import attention, block_jacobians, block_residual, capture_block_calls, full
from llmdyn.jacobians.svd import svd_sorted
from llmdyn.trace import encode
from tests.conftest import FRANCE
from tests.helpers import route_rtol

SHORT = "Hi, you there"  # 13 byte tokens on the tiny models
PAIRS = [(0, 0), (2, 5), (5, 5), (1, 12), (-1, -1)]


def _finite_difference(f, x, t1, h):
    """Central differences of f(X) in x_{t1}, all input coordinates batched: [tok, d_out, d_in].

    Richardson-extrapolated: (4 D(h/2) - D(h)) / 3 cancels the O(h^2) truncation term.
    """

    def central(step):
        steps = torch.zeros(x.shape[1], *x.shape, dtype=x.dtype)  # (d_in, tok, d)
        steps[:, t1, :] = step * torch.eye(x.shape[1], dtype=x.dtype)
        with torch.no_grad():
            diff = vmap(f)(x + steps) - vmap(f)(x - steps)  # (d_in, tok, d_out)
        return (diff / (2 * step)).permute(1, 2, 0)

    return (4 * central(h / 2) - central(h)) / 3


def _fd_step_and_tolerance(model):
    """GPT-2 runs in float64 throughout: h = 1e-4 leaves truncation O(h^4) ~ 1e-16 and rounding
    O(eps64 / h) ~ 1e-12. HF's RMSNorm (Llama, Gemma) and NeoX's attention softmax compute in
    float32 whatever the model dtype, so there rounding is O(eps32 / h): h = 2e-2 gives ~1e-5
    times the size of f (up to ~10 in tiny Gemma 3), truncation O(h^4) ~ 1e-7: we allow 1e-3."""
    if model.hf.config.model_type == "gpt2":
        return 1e-4, 1e-8
    return 2e-2, 1e-3


def test_matches_finite_differences(tiny64):
    J = block_jacobians(tiny64, SHORT, layers=[0, 2], pairs=PAIRS, method="exact")
    assert J.shape == (2, len(PAIRS), 32, 32)
    calls = capture_block_calls(tiny64, encode(tiny64, SHORT))
    n = calls[0].hidden.shape[0]
    h, tol = _fd_step_and_tolerance(tiny64)
    for i, b in enumerate([0, 2]):
        f = block_residual(tiny64, b, calls[b])
        fd = {t1: _finite_difference(f, calls[b].hidden, t1, h) for t1 in {t % n for t, _ in PAIRS}}
        for p, (t1, t2) in enumerate(PAIRS):
            ref = fd[t1 % n][t2 % n]
            if ref.norm() == 0:  # e.g. outside Gemma 3's sliding window
                assert torch.count_nonzero(J[i, p]) == 0
                continue
            err = (J[i, p] - ref).norm() / ref.norm()
            assert err < tol, (b, t1, t2, float(err))


def test_forward_products_for_one_input_token_equal_reverse_products(tiny64):
    # Pairs with one input token take d forward products (jvp); adding every diagonal pair
    # makes inputs as many as outputs, so the same pairs come from reverse products (vjp).
    n = encode(tiny64, SHORT).shape[1]
    pairs = [(1, t2) for t2 in range(1, n)]
    forward = block_jacobians(tiny64, SHORT, [0, 2], pairs=pairs, method="exact")
    both = block_jacobians(tiny64, SHORT, [0, 2], pairs=pairs + [(t, t) for t in range(n)],
                           method="exact")
    # Different products, so equal only up to rounding: HF's RMSNorm and NeoX's softmax
    # compute in float32 whatever the model dtype (see _fd_step_and_tolerance), so 1e-6 of
    # the largest entry (about 10 float32 epsilons).
    err = (forward - both[:, : len(pairs)]).abs().max()
    assert err <= 1e-6 * both.abs().max()


def test_own_position_route_equals_exact_route(tiny64):
    fast = block_jacobians(tiny64, SHORT, pairs="diagonal", method="own_position")
    exact = block_jacobians(tiny64, SHORT, pairs="diagonal", method="exact")
    # Same products with exact zeros added: equal up to float64 rounding.
    assert torch.allclose(fast, exact, rtol=0, atol=1e-12)


def test_direct_and_copies_routes_agree(tiny64, monkeypatch):
    """Llama and Gemma 3 use the O(T^2) direct route; forcing the T-copies route must agree."""
    direct = block_jacobians(tiny64, SHORT, pairs="diagonal", method="own_position")
    monkeypatch.setattr(attention, "STANDARD_EAGER", frozenset())
    copies = block_jacobians(tiny64, SHORT, pairs="diagonal", method="own_position")
    assert torch.allclose(direct, copies, rtol=0, atol=1e-12)


def test_causal_zero_for_later_inputs(tiny64):
    J = block_jacobians(tiny64, SHORT, layers=[1], pairs=[(5, 2), (12, 0)])
    assert torch.count_nonzero(J) == 0


def test_last_pair_is_the_final_diagonal_block(tiny64):
    last = block_jacobians(tiny64, SHORT, pairs="last")
    diag = block_jacobians(tiny64, SHORT, pairs="diagonal")
    scale = diag[:, -1].abs().max()
    assert torch.allclose(last[:, 0], diag[:, -1], rtol=0, atol=route_rtol(tiny64) * scale)


def test_svd_is_sorted_and_rebuilds(tiny64):
    J = block_jacobians(tiny64, SHORT, layers=[1], pairs="last")[0, 0]
    U, S, Vh = svd_sorted(J)
    assert torch.all(S[:-1] >= S[1:])
    assert torch.allclose(U @ torch.diag(S) @ Vh, J, atol=1e-12)


@pytest.mark.parametrize("layers", [[3], [-4], [0, 99]])
def test_layer_out_of_range(tiny64, layers):
    with pytest.raises(LlmdynError, match=r"out of range.*blocks 0\.\.2"):
        block_jacobians(tiny64, SHORT, layers=layers)


def test_token_out_of_range(tiny64):
    with pytest.raises(LlmdynError, match="token index 13"):
        block_jacobians(tiny64, SHORT, pairs=[(0, 13)])


def test_own_position_refuses_off_diagonal_pairs(tiny64):
    with pytest.raises(LlmdynError, match="diagonal pairs"):
        block_jacobians(tiny64, SHORT, pairs=[(0, 3)], method="own_position")


def test_non_finite_jacobian_is_refused():
    from llmdyn.models.loading import load_model

    model = load_model("tiny-llama")
    with torch.no_grad():
        model.blocks[1].mlp.down_proj.weight[0, 0] = float("nan")
    with pytest.raises(LlmdynError, match="non-finite"):
        block_jacobians(model, SHORT, layers=[1], pairs="last")


def _hf_route(model, prompt, b, t):
    """The authors' route: differentiate HF output_hidden_states[b+1] w.r.t. block b's input."""
    ids = encode(model, prompt)
    x0 = capture_block_calls(model, ids)[b].hidden

    def f(x):
        def swap(_module, args, kwargs):
            return (x[None], *args[1:]), kwargs

        handle = model.blocks[b].register_forward_pre_hook(swap, with_kwargs=True)
        try:
            hs = model.hf(ids, output_hidden_states=True, use_cache=False).hidden_states
        finally:
            handle.remove()
        return hs[b + 1][0, t] - x[t]

    rows = torch.autograd.functional.jacobian(f, x0, vectorize=True)  # (d, tok, d)
    return rows[:, t, :]


@pytest.mark.slow
def test_smollm2_matches_differentiating_hidden_states(smollm2):
    ours = block_jacobians(smollm2, FRANCE, layers=[4, 17], pairs="last")
    for i, b in enumerate([4, 17]):
        ref = _hf_route(smollm2, FRANCE, b, -1)
        err = float((ours[i, 0] - ref).norm() / ref.norm())
        assert err <= 1e-4, (b, err)  # float32: different op order, same math


@pytest.mark.slow
def test_smollm2_own_position_equals_exact(smollm2):
    fast = block_jacobians(smollm2, FRANCE, layers=[0, 29], pairs="diagonal")
    picked = [(2, 2), (9, 9)]
    exact = block_jacobians(smollm2, FRANCE, layers=[0, 29], pairs=picked, method="exact")
    err = float((fast[:, [2, 9]] - exact).norm() / exact.norm())
    assert err <= 1e-5, err  # float32; the routes differ only by added exact zeros


def test_last_pair_takes_the_one_step_route(tiny64, monkeypatch):
    """pairs="last" (or [(n, n)]) skips the full-prompt run and equals the exact route."""
    exact = block_jacobians(tiny64, SHORT, pairs="last", method="exact", progress=False)

    def no_full_prompt_run(*_args, **_kwargs):
        raise AssertionError("the full-prompt route ran for the last token")

    monkeypatch.setattr(full, "capture_block_calls", no_full_prompt_run)
    for pairs in ("last", [(-1, -1)]):
        fast = block_jacobians(tiny64, SHORT, pairs=pairs, progress=False)
        assert fast.shape == exact.shape == (tiny64.n_layers, 1, tiny64.d_model, tiny64.d_model)
        assert torch.allclose(fast, exact, rtol=0, atol=1e-6 * float(exact.abs().max()))


def test_last_block_includes_the_final_norm(tiny64):
    """The papers' convention: f^L(X) = norm(block_L(X)) − X. The Jacobian matches central
    differences of that function written out here (the block called directly, then the norm);
    "block_output" matches those of block_L(X) − X. Tolerances as in the test above."""
    L = tiny64.n_layers
    calls = capture_block_calls(tiny64, encode(tiny64, SHORT))
    x, call = calls[L - 1].hidden, calls[L - 1]
    h, tol = _fd_step_and_tolerance(tiny64)

    def block(x):
        out = tiny64.blocks[L - 1](x[None], *call.args[1:], **call.kwargs)
        return (out[0] if isinstance(out, tuple) else out)[0]  # (tok, d_model)

    refs = {"final_norm": lambda x: tiny64.final_norm(block(x)) - x,
            "block_output": lambda x: block(x) - x}
    pairs = [(4, 4), (2, 7), (-1, -1)]
    n = x.shape[0]
    for last_point, f in refs.items():
        J = block_jacobians(tiny64, SHORT, layers=[-1], pairs=pairs, method="exact",
                            progress=False, last_point=last_point)[0]
        for p, (t1, t2) in enumerate(pairs):
            ref = _finite_difference(f, x, t1 % n, h)[t2 % n]
            if ref.norm() == 0:  # outside Gemma 3's sliding window
                assert torch.count_nonzero(J[p]) == 0
                continue
            assert (J[p] - ref).norm() / ref.norm() < tol, (last_point, t1, t2)
    # Only the last block depends on the convention; the fast last-token route agrees.
    fast = block_jacobians(tiny64, SHORT, pairs="last", progress=False)[:, 0]
    other = block_jacobians(tiny64, SHORT, pairs="last", progress=False,
                            last_point="block_output")[:, 0]
    torch.testing.assert_close(fast[:-1], other[:-1], rtol=0, atol=0)
    exact = block_jacobians(tiny64, SHORT, pairs="last", method="exact", progress=False)[:, 0]
    torch.testing.assert_close(fast, exact, rtol=0,
                               atol=max(1e-8, route_rtol(tiny64) * float(exact.abs().max())))
    assert not torch.allclose(fast[-1], other[-1])
