"""Input checks: every bad input of the reliability probes is a clear LlmdynError, early."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from llmdyn import LlmdynError, trace
from llmdyn.core.checks import choice, k_value, layer_indices, prompt_texts
from llmdyn.coupling import depth as coupling
from llmdyn.coupling import tokens as token_coupling
from llmdyn.data.named import Prompt
from llmdyn.jacobians.full import block_jacobians
from llmdyn.jacobians.last_token import last_token_jacobians
from llmdyn.models.loading import load_model
from llmdyn.trajectories import lens, regularity
from llmdyn.trajectories.geometry import token_states


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-llama")


def test_layer_indices_resolve_negatives_once():
    assert layer_indices([-1, 0], 3) == [2, 0]
    assert layer_indices(None, 3) == [0, 1, 2]
    assert layer_indices(np.array([1, 2]), 3) == [1, 2]


@pytest.mark.parametrize("layers, match", [
    ([1.7], "integer block indices, got 1.7"),
    (["1"], "integer block indices, got '1'"),
    ([True], "integer block indices"),
    ("12", "list of block indices"),
    ([], r"\[\] out of range"),
    ([3], r"\[3\] out of range.*0..2"),
    ([-4], r"\[-4\] out of range"),
    ([2, -1], "name a block twice"),
])
def test_layer_indices_refuse_what_int_would_silently_accept(layers, match):
    with pytest.raises(LlmdynError, match=match):
        layer_indices(layers, 3)


def test_prompt_texts():
    assert prompt_texts(["a", Prompt("id", "b", "named")]) == ["a", "b"]
    for bad, match in [("hello", "got one str"), ([], "non-empty list"), ([""], r"prompts\[0\]"),
                       (["ok", "  "], r"prompts\[1\]"), ([3], r"prompts\[0\].*int"),
                       (Prompt("id", "x", "named"), "got one Prompt"), (None, "non-empty list")]:
        with pytest.raises(LlmdynError, match=match):
            prompt_texts(bad)


def test_k_and_choice():
    assert k_value(2, 8, minimum=2) == 2
    for bad in (1, 9, 2.0, True, "3"):
        with pytest.raises(LlmdynError, match="k: got"):
            k_value(bad, 8, minimum=2)
    with pytest.raises(LlmdynError, match="method: got 'exactt'.*'exact'"):
        choice("exactt", ("auto", "exact"), "method")


# Probes each of which was a silently wrong result or a late failure.

def test_string_prompts_are_not_split_into_characters(tiny):
    for call in (lambda: coupling.depth_coupling(tiny, "hello", k=2),
                 lambda: token_coupling.token_coupling(tiny, "hello", layer=0, ref_layer=1, k=2),
                 lambda: regularity.regularity(tiny, "hello"),
                 lambda: token_states(tiny, "hello"),
                 lambda: lens.lens_readouts(tiny, "hello")):
        with pytest.raises(LlmdynError, match="got one str"):
            call()


@pytest.mark.parametrize("layers", [[1.7], ["1"]])
def test_non_integer_layers_are_refused_not_truncated(tiny, layers):
    with pytest.raises(LlmdynError, match="integer block indices"):
        coupling.depth_coupling(tiny, ["hello"], k=2, layers=layers)
    with pytest.raises(LlmdynError, match="integer block indices"):
        block_jacobians(tiny, "hello", layers)
    with pytest.raises(LlmdynError, match="integer block indices"):
        last_token_jacobians(tiny, "hello", layers)


def test_unknown_method_is_refused(tiny):
    with pytest.raises(LlmdynError, match="method: got 'exactt'"):
        block_jacobians(tiny, "hello", [0], method="exactt")


def test_k_one_is_refused_before_any_jacobian(tiny, monkeypatch):
    from llmdyn.jacobians import last_token as step_jacobians

    monkeypatch.setattr(step_jacobians, "capture_last_step",
                        lambda *a: pytest.fail("Jacobians computed before the k check"))
    for call in (lambda: coupling.depth_coupling(tiny, ["hello"], k=1),
                 lambda: coupling.depth_coupling(tiny, ["hello"], k=1, layers=[0, 1])):
        with pytest.raises(LlmdynError, match="k: got 1.*2 <= k"):
            call()


def test_negative_layers_give_the_same_result_and_cache_entry(tiny):
    from llmdyn.core.store import ResultStore

    store = ResultStore(tiny.model_id, provenance=tiny.identity)
    neg = coupling.depth_coupling(tiny, ["hello there"], k=2, layers=[-1, -2], store=store)
    assert store.missing("depth_coupling", {"k": 2, "layers": [2, 1], "token": -1,
                                            "dtype": "float32", "last_point": "final_norm"},
                         ["hello there"]) == []
    pos = coupling.depth_coupling(tiny, ["hello there"], k=2, layers=[2, 1])
    np.testing.assert_array_equal(neg[0].A, pos[0].A)


# A non-finite weight gives an error, not inf values.

def test_inf_weight_raises_in_trajectory_and_logit_lens():
    m = load_model("tiny-llama")
    with torch.no_grad():
        m.final_norm.weight[0] = float("inf")
        m.blocks[1].mlp.down_proj.weight[0, 0] = float("inf")
    with pytest.raises(LlmdynError, match="non-finite values in the hidden states"):
        trace.trajectory(m, "hello")
    with pytest.raises(LlmdynError, match="non-finite values in the logit-lens logits"):
        trace.logit_lens(m, torch.ones(2, m.d_model), lens="normed")  # reads the bad norm


# The bad inputs that already answered clearly stay clear.

@pytest.mark.parametrize("call, match", [
    (lambda m: load_model("no-such-model"), "Known names: .*tiny-llama"),
    (lambda m: block_jacobians(m, "hello", [5]), r"layers \[5\] out of range"),
    (lambda m: trace.trajectory(m, ""), "non-empty string"),
    (lambda m: trace.trajectory(m, "   "), "non-empty string"),
    (lambda m: trace.trajectory(m, "x" * 200), "accepts at most 64"),
    (lambda m: coupling.depth_coupling(m, ["hi"], k=100), "k: got 100"),
    (lambda m: coupling.depth_coupling(m, ["hi"], k=0), "k: got 0"),
    (lambda m: coupling.coupling_from_jacobians(torch.full((2, 32, 32), float("nan")), 3),
     "NaN"),
    (lambda m: regularity.trajectory_regularity(np.zeros((2, 2, 4))), "zero-length step"),
    (lambda m: load_model(""), "non-empty string"),
])
def test_clear_errors_stay_clear(tiny, call, match):
    with pytest.raises(LlmdynError, match=match):
        call(tiny)


def test_topk_refuses_non_integer_layers(tiny):
    from llmdyn.jacobians.truncated import truncated_block_svd, truncated_coupling_matrices

    with pytest.raises(LlmdynError, match="integer block indices, got 1.7"):
        truncated_block_svd(tiny, "hello", [1.7], k=2)
    with pytest.raises(LlmdynError, match="integer block indices"):
        truncated_coupling_matrices(tiny, "hello", ["1"], k=2)


def test_nonfinite_rows_is_isfinite_per_row_even_where_the_sum_overflows():
    from llmdyn.core.checks import nonfinite_rows

    x = torch.ones(5, 3, 4)
    x[1, 2, 3] = float("nan")
    x[2, 0, 0], x[2, 1, 1] = float("inf"), -float("inf")  # their sum is NaN
    x[3] = 3e38  # finite entries whose float32 sum overflows
    x[4, 0, 1] = -float("inf")
    assert nonfinite_rows(x).tolist() == [False, True, True, False, True]
    assert nonfinite_rows(x).tolist() == (~torch.isfinite(x.flatten(1)).all(1)).tolist()
    assert not nonfinite_rows(torch.zeros(2, 2, dtype=torch.float64)).any()


@pytest.mark.parametrize("module", ["torch", "numpy"])
def test_all_finite_is_isfinite_all_even_where_the_sum_overflows(module):
    from llmdyn.core.checks import all_finite

    cases = {
        "ones": torch.ones(3, 4),
        "nan": torch.tensor([1.0, float("nan")]),
        "inf": torch.tensor([1.0, float("inf")]),
        "-inf": torch.tensor([-float("inf"), 2.0]),
        "inf and -inf (their sum is NaN)": torch.tensor([float("inf"), -float("inf")]),
        "finite, the float32 sum overflows": torch.full((4,), 3e38),
        "float16, the sum overflows": torch.full((3,), 6e4, dtype=torch.float16),
        "empty": torch.zeros(0, 5),
        "integers": torch.arange(6).reshape(2, 3),
        "complex with an inf part": torch.tensor([1 + 1j, complex(1, float("inf"))]),
    }
    for name, x in cases.items():
        expected = bool(torch.isfinite(x).all())
        value = x if module == "torch" else x.numpy()
        assert all_finite(value) is expected, name
    with_grad = torch.tensor([1.0, float("nan")], requires_grad=True)
    assert all_finite(with_grad) is False
    assert all_finite(torch.full((4,), 3e38)) and all_finite(np.full(4, 1e308))


def test_the_checks_built_on_all_finite_still_count_the_bad_entries():
    from llmdyn.core.arrays import checked_array, checked_tensor

    x = torch.full((2, 3), 3e38)  # finite: the fast sum overflows and the entry check clears it
    assert checked_tensor(x, "x", 2, "[a, b]") is x
    x[0, 1], x[1, 2] = float("nan"), -float("inf")
    for check in (checked_tensor, checked_array):
        with pytest.raises(LlmdynError, match="has 2 NaN/inf value"):
            check(x, "x", 2, "[a, b]")
