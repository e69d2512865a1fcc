import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.jacobians.linearization import cosine, linearization_check, propagate
from llmdyn.jacobians.perturbed import perturbed_last_states, relative_noise
from llmdyn.trace import encode, trajectory
from tests.conftest import FRANCE


def test_propagate_known_answer():
    J = np.stack([np.diag([1.0, 0.0]), np.diag([0.5, -1.0])])  # (layer=2, d=2, d=2)
    out = propagate(J, np.array([1.0, 3.0]))
    assert out.tolist() == [[1.0, 3.0], [2.0, 3.0], [3.0, 0.0]]
    assert propagate(J, np.ones((4, 2))).shape == (4, 3, 2)
    with pytest.raises(LlmdynError):
        propagate(J, np.ones(3))


def test_cosine():
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, -3.0]) == pytest.approx(0.0)
    with pytest.raises(LlmdynError):
        cosine([0.0, 0.0], [1.0, 0.0])


def test_relative_noise_has_the_asked_size():
    x0 = torch.randn(5, 8, dtype=torch.float64) * torch.arange(1, 6)[:, None]
    gen = torch.Generator().manual_seed(0)
    noise = relative_noise(x0, 0.1, 3, gen)
    assert noise.shape == (3, 5, 8)
    assert torch.allclose(noise.norm(dim=-1), 0.1 * x0.norm(dim=-1).expand(3, 5))
    last = relative_noise(x0, 0.1, 2, gen, tokens="last")
    assert torch.count_nonzero(last[:, :-1]) == 0 and torch.count_nonzero(last[:, -1]) > 0


def test_clean_run_reproduces_the_trajectory(tiny64):
    x0, states = perturbed_last_states(tiny64, encode(tiny64, FRANCE))
    traj = trajectory(tiny64, FRANCE)
    assert torch.allclose(x0, traj.states[0].to(x0.dtype))
    assert torch.allclose(states[0], traj.states[:, -1].to(states.dtype), atol=1e-10)
    _, raw = perturbed_last_states(tiny64, encode(tiny64, FRANCE), last_point="block_output")
    block = trajectory(tiny64, FRANCE, last_point="block_output").states[:, -1]
    assert torch.allclose(raw[0], block.to(raw.dtype), atol=1e-10)  # x^L before the norm
    assert torch.equal(raw[0, :-1], states[0, :-1])  # only the last point differs


def test_first_order_check_holds_under_both_end_points(tiny64):
    """The last block's Jacobian and x^L follow the same convention, so small perturbations
    follow the Jacobians through the last block under either (cos > 0.999 at 1e-5)."""
    for last_point in ("final_norm", "block_output"):
        check = linearization_check(tiny64, "Hi, you there", [1e-5], n_draws=2,
                                    last_point=last_point)
        assert np.all(check.cos_delta[0, :, -1] > 0.999), last_point


def test_first_order_check_tends_to_one(tiny64):
    check = linearization_check(tiny64, "Hi, you there", [1e-5, 0.3], n_draws=2)
    assert check.cos_state.shape == check.cos_delta.shape == (2, 2, tiny64.n_layers + 1)
    assert check.cos_clean[0] == pytest.approx(1.0)  # x-hat^0 = x^0
    assert np.all(check.cos_delta[0] > 0.999)  # small perturbations follow the Jacobians
    assert np.all(check.cos_state[:, :, 0] > 0.9)  # layer 0: x0 + delta vs x0 + delta


def test_bad_levels(tiny64):
    with pytest.raises(LlmdynError, match="levels"):
        linearization_check(tiny64, FRANCE, [0.0])


def test_one_step_check_at_the_first_block_equals_the_product(tiny64):
    check = linearization_check(tiny64, FRANCE, [0.01], n_draws=2)
    # layer 1: the product and the one-step prediction both are (I + J^1)(x^0 + delta)
    assert np.allclose(check.cos_step[..., 1], check.cos_state[..., 1])
    assert np.all(check.cos_step[..., 0] == 1.0)


def test_precomputed_jacobians_give_the_same_result(tiny64):
    from llmdyn.jacobians.last_token import last_token_jacobians

    J = last_token_jacobians(tiny64, FRANCE)
    a = linearization_check(tiny64, FRANCE, [0.1], n_draws=2, seed=3)
    b = linearization_check(tiny64, FRANCE, [0.1], n_draws=2, seed=3, jacobians=J.numpy())
    assert np.allclose(a.cos_state, b.cos_state) and np.allclose(a.cos_step, b.cos_step)
    with pytest.raises(LlmdynError, match="every block"):
        linearization_check(tiny64, FRANCE, [0.1], jacobians=J[:1])


def test_check_with_mismatched_fields_raises():
    import numpy as np

    from llmdyn import LlmdynError
    from llmdyn.jacobians.linearization import LinearizationCheck

    z = np.zeros((2, 3, 4))
    with pytest.raises(LlmdynError, match="LinearizationCheck fields disagree"):
        LinearizationCheck(levels=np.zeros(2), cos_clean=np.zeros(5), cos_state=z, cos_step=z,
                           cos_delta=z)


def test_checks_of_several_prompts_and_the_variant_equal_the_one_prompt_route(tiny64, tmp_path):
    from llmdyn.core.store import ResultStore
    from llmdyn.jacobians.linearization import linearization_checks

    prompts, run = [FRANCE, "United States of"], dict(n_draws=2, seed=3)
    store = ResultStore(tiny64.model_id, root=tmp_path)
    main, variant = linearization_checks(tiny64, prompts, [0.01, 0.1], block_output=True,
                                         store=store, **run)
    for prompt, got, got_variant in zip(prompts, main, variant, strict=True):
        for want, have in ((linearization_check(tiny64, prompt, [0.01, 0.1], **run), got),
                           (linearization_check(tiny64, prompt, [0.01, 0.1],
                                                last_point="block_output", **run), got_variant)):
            for name, value in want.as_arrays().items():  # the last block alone differs: reused
                np.testing.assert_array_equal(have.as_arrays()[name], value, err_msg=name)
    cached, none = linearization_checks(tiny64, prompts[:1], [0.01, 0.1], store=store, **run)
    assert none is None and len(list(tmp_path.rglob("*.npz"))) == 4  # 2 prompts × 2 variants
    np.testing.assert_array_equal(cached[0].cos_state, main[0].cos_state)
    want = main[0].cos_state[1, :, -1].mean()  # the mean over the draws
    assert main[0].draw_mean("cos_state", 1, -1) == pytest.approx(want)
