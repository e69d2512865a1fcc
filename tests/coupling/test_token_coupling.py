"""Coupling across tokens: tile pairs, cross-coupling known answers, summaries, caching."""

import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.book.params import TokenCouplingParams
from llmdyn.core.store import ResultStore
from llmdyn.coupling.matrix import coupling_matrices, coupling_matrix, cross_matrices_checked
from llmdyn.coupling.tokens import (
    KINDS,
    CouplingSummary,
    TokenCoupling,
    cross_coupling,
    kind_pairs,
    kind_shares,
    prompt_shares,
    summarize,
    summarize_kinds,
    tile_shares,
    token_coupling,
    token_coupling_with_control,
)
from llmdyn.jacobians.full import block_jacobians
from llmdyn.jacobians.svd import svd_sorted
from llmdyn.models.loading import load_model

PROMPT = "The capital is"  # 14 tokens with the tiny byte tokenizer


def _orthogonal(d: int, gen: torch.Generator) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
    return q


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-llama", seed=0, dtype=torch.float64)


# ----------------------------------------------------------------------------- kind_pairs


def test_kind_pairs_known_answers():
    assert kind_pairs("self", 3) == [(0, 0), (1, 1), (2, 2)]
    assert kind_pairs("fixed_input", 4, input_token=1) == [(1, 1), (1, 2), (1, 3)]
    assert kind_pairs("fixed_output", 4, output_token=-2) == [(0, 2), (1, 2), (2, 2)]
    assert kind_pairs("fixed_input", 4, input_token=-1) == [(3, 3)]  # one tile, no context


def test_kind_pairs_are_causal():
    for kind in KINDS:
        assert all(t1 <= t2 for t1, t2 in kind_pairs(kind, 6, input_token=2, output_token=4))


@pytest.mark.parametrize("kwargs, match", [
    (dict(kind="diagonal", n_tok=3), "kind"),
    (dict(kind="self", n_tok=0), "n_tok"),
    (dict(kind="fixed_input", n_tok=3, input_token=3), "input_token"),
    (dict(kind="fixed_output", n_tok=3, output_token=-4), "output_token"),
    (dict(kind="self", n_tok=3, input_token=1.0), "input_token"),
])
def test_kind_pairs_rejects_bad_input(kwargs, match):
    with pytest.raises(LlmdynError, match=match):
        kind_pairs(**kwargs)


# ----------------------------------------------------------------------------- cross_coupling


def test_cross_coupling_of_a_stack_with_itself_is_coupling_matrices():
    J = torch.randn(3, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(cross_coupling(J, J, 4), coupling_matrices(J, 4))


def _definition(J: torch.Tensor, J_ref: torch.Tensor, k: int) -> torch.Tensor:
    """Paper A eq. 10 read literally: a full SVD of each reference, one tile at a time."""
    return torch.stack([torch.stack([coupling_matrix(J[i].double(), J_ref[j].double(), k)
                                     for j in range(len(J_ref))]) for i in range(len(J))])


@pytest.mark.parametrize("dtype, tol", [
    # float64: the Gram route's error grows like (s_1/s_k)² eps, ~1e-14 for these stacks.
    (torch.float64, 1e-10),
    # float32: the products round at ~1e-7 relative; tiles are O(1) to O(10) here.
    (torch.float32, 2e-4),
])
def test_cross_coupling_is_the_full_svd_definition(dtype, tol):
    """Layer l rows against layer l′ references, different counts: every tile of eq. 10."""
    gen = torch.Generator().manual_seed(4)
    J = torch.randn(5, 24, 24, generator=gen, dtype=torch.float64)
    J_ref = torch.randn(5, 24, 24, generator=gen, dtype=torch.float64)
    got = cross_coupling(J.to(dtype), J_ref.to(dtype), 6)
    assert got.shape == (5, 5, 6, 6) and got.dtype == dtype
    torch.testing.assert_close(got.double(), _definition(J, J_ref, 6), atol=tol, rtol=tol)
    rows = cross_matrices_checked(J[:3], svd_sorted(J_ref), 6)  # 3 rows, 5 references
    torch.testing.assert_close(rows, _definition(J[:3], J_ref, 6), atol=1e-10, rtol=1e-10)


def test_shared_singular_vectors_give_diagonal_tiles():
    """J_i = U diag(s_i) V^T with one U, V for all i: every tile is diag(s_i[:k]) exactly."""
    gen = torch.Generator().manual_seed(2)
    d, k = 10, 4
    U, V = _orthogonal(d, gen), _orthogonal(d, gen)
    s = torch.sort(torch.rand(3, d, generator=gen, dtype=torch.float64) + 0.1,
                   descending=True).values  # (tok, d) distinct, same order in every row
    J = U @ torch.diag_embed(s) @ V.T  # (tok, d, d)
    J_ref = U @ torch.diag_embed(s.flip(0)) @ V.T  # other singular values, same vectors
    A = cross_coupling(J, J_ref, k)  # (tok, tok, k, k)
    for i in range(3):
        for j in range(3):
            torch.testing.assert_close(A[i, j], torch.diag(s[i, :k]))
    tc = TokenCoupling("self", np.array([(t, t) for t in range(3)]), A.numpy())
    np.testing.assert_allclose(tc.miscoupling, 0, atol=1e-12)
    np.testing.assert_allclose(tc.diagonal_share, 1)


def test_unrelated_bases_give_chance_diagonal_share():
    """Independent random Jacobians: the diagonal carries about 1/k of ||A||_F^2."""
    gen = torch.Generator().manual_seed(3)
    k = 8
    J = torch.randn(12, 64, 64, generator=gen, dtype=torch.float64)
    J_ref = torch.randn(12, 64, 64, generator=gen, dtype=torch.float64)
    tc = TokenCoupling("self", np.array([(t, t) for t in range(12)]),
                       cross_coupling(J, J_ref, k).numpy())
    assert summarize([tc]).diagonal_share == pytest.approx(1 / k, rel=0.25)


def test_cross_coupling_rejects_mismatched_shapes():
    with pytest.raises(LlmdynError, match="J_ref"):
        cross_coupling(torch.zeros(2, 4, 4), torch.zeros(2, 5, 5), 2)
    with pytest.raises(LlmdynError, match="k"):
        cross_coupling(torch.eye(4)[None], torch.eye(4)[None], 5)


# ----------------------------------------------------------------------------- scores


def _grid(tiles: list[list[np.ndarray]], kind: str = "self") -> TokenCoupling:
    n = len(tiles)
    return TokenCoupling(kind, np.array([(t, t) for t in range(n)]), np.array(tiles))


def test_normalized_and_share_known_answers():
    diag, off, zero = np.diag([3.0, 4.0]), np.array([[3.0, 4.0], [0, 0]]), np.zeros((2, 2))
    tc = _grid([[diag, off], [zero, diag]])
    assert tc.miscoupling[0, 0] == 0 and tc.miscoupling[0, 1] == pytest.approx(4 / 5)
    assert np.isnan(tc.miscoupling[1, 0])  # all-zero tile: no direction to compare
    assert tc.diagonal_share[0, 1] == pytest.approx(9 / 25)
    np.testing.assert_allclose(np.sort(tc.offdiagonal("miscoupling")), [0.8, np.nan])


def test_summarize_pools_offdiagonal_tiles_of_all_prompts():
    diag, off = np.diag([1.0, 1.0]), np.array([[1.0, 1.0], [1.0, 1.0]])  # m̃ = 1/√2
    a = _grid([[diag, diag], [diag, diag]])  # off-diagonal tiles coupled: share 1
    b = _grid([[diag, off], [off, diag]])  # share 1/2
    s = summarize([a, b])
    assert isinstance(s, CouplingSummary) and s.n_tiles == 4
    assert s.diagonal_share == pytest.approx(0.75)
    assert s.miscoupling == pytest.approx(np.sqrt(0.5) / 2)
    assert s.diagonal_share_cv == pytest.approx(0.25 / 0.75)
    assert sorted(tile_shares([a, b])) == pytest.approx([0.5, 0.5, 1.0, 1.0])


def test_summarize_kinds_pools_each_kind_over_prompts():
    diag, off = np.diag([1.0, 1.0]), np.array([[1.0, 1.0], [1.0, 1.0]])  # shares 1 and 1/2
    first = {"self": _grid([[diag, diag], [diag, diag]]),
             "fixed_input": _grid([[diag, off], [off, diag]], "fixed_input")}
    second = {"self": _grid([[diag, off], [off, diag]]),
              "fixed_input": _grid([[diag, off], [off, diag]], "fixed_input")}
    s = summarize_kinds([first, second])
    assert list(s) == ["self", "fixed_input"]
    assert s["self"].diagonal_share == pytest.approx(0.75) and s["self"].n_tiles == 4
    assert s["fixed_input"].diagonal_share == pytest.approx(0.5)
    shares = kind_shares([first, second])
    assert sorted(shares["self"]) == pytest.approx([0.5, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(shares["fixed_input"], [0.5] * 4)
    for f in (summarize_kinds, kind_shares):
        with pytest.raises(LlmdynError, match="results is empty"):
            f([])


def test_prompt_shares_are_each_prompts_mean_over_its_own_tiles():
    diag, off = np.diag([1.0, 1.0]), np.array([[1.0, 1.0], [1.0, 1.0]])  # shares 1 and 1/2
    first = {"self": _grid([[diag, diag], [off, diag]])}  # tiles 1 and 1/2: mean 0.75
    second = {"self": _grid([[diag, off, off], [off, diag, off], [off, off, diag]])}  # 6 × 1/2
    one = {"self": TokenCoupling("self", np.array([(0, 0)]), np.ones((1, 1, 2, 2)))}  # no tile
    np.testing.assert_allclose(prompt_shares([first, second, one])["self"], [0.75, 0.5, np.nan])
    # pooled over tiles the second prompt would weigh 3× the first: (1 + 0.5 + 6 × 0.5) / 8
    assert summarize_kinds([first, second])["self"].diagonal_share == pytest.approx(4.5 / 8)
    with pytest.raises(LlmdynError, match="results is empty"):
        prompt_shares([])


def test_summarize_edge_cases():
    one = TokenCoupling("fixed_input", np.array([(3, 3)]), np.ones((1, 1, 2, 2)))
    assert summarize([one]).n_tiles == 0 and np.isnan(summarize([one]).diagonal_share)
    assert tile_shares([one]).size == 0
    with pytest.raises(LlmdynError, match="mix kinds"):
        summarize([one, _grid([[np.eye(2)]])])
    with pytest.raises(LlmdynError, match="empty"):
        summarize([])


def test_token_coupling_checks_its_shapes():
    with pytest.raises(LlmdynError, match="do not match"):
        TokenCoupling("self", np.array([(0, 0), (1, 1)]), np.zeros((3, 3, 2, 2)))


# ----------------------------------------------------------------------------- on a model


def test_token_coupling_matches_direct_jacobians(tiny):
    k = 4
    (result,) = token_coupling(tiny, [PROMPT], layer=0, ref_layer=2, k=k, input_token=2,
                               output_token=-3)
    n = 14
    assert result["self"].A.shape == (n, n, k, k)
    assert result["fixed_input"].pairs.tolist() == [[2, t] for t in range(2, n)]
    assert result["fixed_output"].pairs.tolist() == [[t, 11] for t in range(12)]
    # Each kind now comes from its own cheap route (own-position, forward, reverse products);
    # the reference is the exact reverse route over the union of all three kinds' pairs. Other
    # products agree to rounding: RMSNorm computes in float32 in any dtype, so 1e-6 of the
    # largest entry (about 10 float32 epsilons).
    wanted = {kind: kind_pairs(kind, n, input_token=2, output_token=-3) for kind in KINDS}
    union = sorted({pair for pairs in wanted.values() for pair in pairs})
    J = block_jacobians(tiny, PROMPT, [0, 2], pairs=union, method="exact", progress=False)
    for kind, pairs in wanted.items():
        idx = [union.index(pair) for pair in pairs]
        want = cross_coupling(J[0, idx], J[1, idx], k).numpy()
        np.testing.assert_allclose(result[kind].A, want, rtol=0,
                                   atol=1e-6 * np.abs(want).max(), err_msg=kind)


def test_same_layer_makes_self_diagonal_tiles_trivial(tiny):
    (result,) = token_coupling(tiny, [PROMPT], layer=1, ref_layer=1, k=3, kinds=["self"])
    assert list(result) == ["self"]
    np.testing.assert_allclose(np.diagonal(result["self"].miscoupling), 0, atol=1e-9)


def test_with_control_equals_two_separate_calls(tiny, tmp_path):
    # the control's Jacobians are the main pass's rows: the same numbers to float64 round-off
    kw = dict(layer=0, k=3, input_token=1, output_token=-2)
    store = ResultStore(tiny.model_id, root=tmp_path)
    main, same = token_coupling_with_control(tiny, [PROMPT], ref_layer=2, store=store, **kw)
    for got, ref in ((main, 2), (same, 0)):
        (want,) = token_coupling(tiny, [PROMPT], ref_layer=ref, **kw)
        for kind in KINDS:
            np.testing.assert_array_equal(got[0][kind].pairs, want[kind].pairs)
            np.testing.assert_allclose(got[0][kind].A, want[kind].A, rtol=1e-9, atol=1e-12)
    (plain,) = token_coupling(tiny, [PROMPT], ref_layer=2, store=store, **kw)  # own cache key
    np.testing.assert_allclose(plain["self"].A, main[0]["self"].A, rtol=1e-9, atol=1e-12)
    with pytest.raises(LlmdynError, match="needs a different ref_layer"):
        token_coupling_with_control(tiny, [PROMPT], ref_layer=0, **kw)


def test_token_coupling_is_cached_per_prompt(tiny, monkeypatch):
    store = ResultStore(tiny.model_id)
    kw = dict(layer=0, ref_layer=1, k=3, kinds=["fixed_output"], store=store)
    first = token_coupling(tiny, [PROMPT, "Hi"], **kw)

    def fail(*args, **kwargs):
        raise AssertionError("recomputed a cached prompt")

    monkeypatch.setattr("llmdyn.coupling.tokens.block_jacobians", fail)
    again = token_coupling(tiny, [PROMPT, "Hi"], **kw)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a["fixed_output"].A, b["fixed_output"].A)


def test_token_coupling_rejects_bad_arguments(tiny):
    with pytest.raises(LlmdynError, match="kinds"):
        token_coupling(tiny, [PROMPT], layer=0, ref_layer=1, k=3, kinds=["diag"])
    with pytest.raises(LlmdynError, match="list of texts"):
        token_coupling(tiny, PROMPT, layer=0, ref_layer=1, k=3)
    with pytest.raises(LlmdynError, match=r"ref_layer \[7\] out of range"):
        token_coupling(tiny, [PROMPT], layer=0, ref_layer=7, k=3)


# ----------------------------------------------------------------------------- parameters


def test_params_defaults_and_checks():
    p = TokenCouplingParams()
    assert p.model == "smollm2-135m" and p.layer is None  # resolved once the model is known
    resolved = p.for_model(30, 576)  # SmolLM2-135M's depth and width
    assert (resolved.layer, resolved.ref_layer, resolved.k) == (11, 12, 30)
    with pytest.raises(LlmdynError, match="notebook parameter 'layer'"):
        TokenCouplingParams(layer="11")
    with pytest.raises(LlmdynError, match="'k' must be >= 2"):
        TokenCouplingParams(k=1)
    with pytest.raises(LlmdynError, match="n_prompts"):
        TokenCouplingParams(n_prompts=0)


def test_params_layer_pairs_known_answers():
    smollm2 = TokenCouplingParams().for_model(30, 576)
    assert smollm2.layer_pairs(30) == [(11, 12), (3, 4), (23, 24)]  # early, middle, late of 30
    gemma = TokenCouplingParams().for_model(18, 640)  # (23, 24) is beyond 18 blocks: left out
    assert gemma.layer_pairs(18) == [(11, 12), (3, 4)]
    assert TokenCouplingParams(extra_layer_pairs=[[-2, -1]]).for_model(30, 576) \
        .layer_pairs(30) == [(11, 12), (28, 29)]
    assert TokenCouplingParams(layer=0, ref_layer=1, extra_layer_pairs=[[3, 4], [23, 24]]) \
        .layer_pairs(3, drop_missing=True) == [(0, 1)]  # both extra pairs lie beyond 3 blocks
    assert TokenCouplingParams(layer=0, ref_layer=1, extra_layer_pairs=[[1, 2], [3, 4]]) \
        .layer_pairs(3, drop_missing=True) == [(0, 1), (1, 2)]
    assert TokenCouplingParams(extra_layer_pairs=[]).for_model(30, 576).layer_pairs(30) == \
        [(11, 12)]


@pytest.mark.parametrize("kwargs, match", [
    (dict(extra_layer_pairs=[[3, 4, 5]]), "'extra_layer_pairs' must be a list of"),
    (dict(extra_layer_pairs=[[3, 3]]), "two different 0-based blocks"),
    (dict(extra_layer_pairs=[3, 4]), "'extra_layer_pairs' must be"),  # not a list of pairs
    (dict(extra_layer_pairs=[[3.0, 4]]), "'extra_layer_pairs' must be"),
    (dict(twin_seeds=[0, 0]), "distinct seeds"),  # the base class checks
    (dict(twin_seeds=[]), "non-empty list"),
    (dict(n_pair_prompts=0), "'n_pair_prompts' must be >= 1"),
    (dict(n_seed_prompts=0), "'n_seed_prompts' must be >= 1"),
])
def test_params_reject_bad_pairs_and_seeds(kwargs, match):
    with pytest.raises(LlmdynError, match=match):
        TokenCouplingParams(**kwargs)


@pytest.mark.parametrize("kwargs, n_layers, match", [
    (dict(extra_layer_pairs=[[3, 4], [23, 24]]), 20,
     r"pairs of blocks of smollm2-135m \(20 blocks"),  # (23, 24) is beyond 20
    (dict(extra_layer_pairs=[[11, 12]]), 30, r"other than \(layer, ref_layer\) = \(11, 12\)"),
    (dict(extra_layer_pairs=[[3, 4], [3, -26]]), 30, "each once"),  # -26 is block 4
    (dict(extra_layer_pairs=[[4, -26]]), 30, "two different blocks"),  # the same block twice
])
def test_params_layer_pairs_check_the_depth(kwargs, n_layers, match):
    with pytest.raises(LlmdynError, match=match):  # explicit pairs are checked, never moved
        TokenCouplingParams(layer=11, ref_layer=12, **kwargs).layer_pairs(n_layers)


# ----------------------------------------------------------------------------- figures


def test_token_grid_and_bars_draw():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from llmdyn import plots

    A = np.zeros((2, 2, 3, 3))
    A[0, 0], A[0, 1], A[1, 1] = np.eye(3), 100 * np.eye(3), np.ones((3, 3))  # A[1, 0] zero
    fig, (ax1, ax2) = plt.subplots(1, 2)
    plots.token_coupling_grid(A, ax1, labels=["0: 'a'", "1: 'b'"], title="t", row_label="t",
                              col_label="t′")
    shown = ax1.images[0].get_array()
    assert np.nanmax(shown) == pytest.approx(1 / np.sqrt(3))  # tiles scaled to unit norm
    assert ax1.get_xlabel() == "t′" and [t.get_text() for t in ax1.get_yticklabels()] == [
        "0: 'a'", "1: 'b'"]
    plots.grouped_bars({"trained": [0.3, 0.1], "untrained, l′ = l": [0.9, 0.8]}, ax2,
                       groups=["self", "input"], ylabel="diagonal_share", title="t", reference=0.1,
                       hatched=["untrained, l′ = l"])
    assert len(ax2.patches) == 4 and ax2.patches[2].get_hatch() == "//"
    plt.close(fig)


def test_claims_use_the_prompts_complete_in_every_state_and_kind_keyed_by_id():
    from llmdyn.coupling import complete_prompts, shares_by_prompt

    shares = {"trained": {"self": np.array([0.5, np.nan, 0.7]), "fixed": np.array([1, 2, 3.0])},
              "untrained": {"self": np.array([0.1, 0.2, 0.3]), "fixed": np.array([1, 2, 3.0])}}
    kept = complete_prompts(shares)
    assert kept.tolist() == [0, 2]  # prompt 1 has no tile in one kind
    assert shares_by_prompt([9.0, 8.0, np.nan], ["a", "b", "c"], kept) == {"a": 9.0}
