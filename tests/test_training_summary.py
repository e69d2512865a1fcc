import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.training.emergence import CheckpointProfile, RunSeries, spread_steps
from llmdyn.training.summary import emergence_timing, endpoints, suite_table


def _profile(share: float, n_prompts: int = 3, layers: int = 2) -> CheckpointProfile:
    ones = np.ones(n_prompts)
    return CheckpointProfile(
        mis=np.sqrt(1 - share) * ones, share=share * ones,
        coupling_map=np.full((layers, layers), np.sqrt(1 - share)), lss=2 * ones,
        expodistance=ones, norms=np.ones((n_prompts, layers + 1)),
        window_lss=np.ones((n_prompts, layers - 1)), window_ed=np.ones((n_prompts, layers - 1)),
        centres=np.arange(1, layers))


def _run(shares, losses, steps=(0, 1, 2, 4)) -> RunSeries:
    return RunSeries(steps=np.array(steps), tokens=np.array(steps, float) * 10,
                     heldout_loss=np.array(losses, float), train_loss=np.array(losses, float),
                     params=1000, profiles=tuple(_profile(s) for s in shares))


def test_timing_known_answers():
    # coupling covers half its rise at step 1; the loss half its drop at step 2
    series = {"a": _run([0.1, 0.3, 0.4, 0.5], [8, 7, 6, 4]), "b": _run([0.1, 0.2, 0.3, 0.4],
                                                                       [8, 5, 4, 4])}
    t = emergence_timing(series)
    assert t.coupling_step[0] == pytest.approx(1.0)
    assert t.loss_step[0] == pytest.approx(2.0)
    assert t.log2_ratio[0] == pytest.approx(1.0)
    assert t.rho.tolist() == pytest.approx([1.0, 1.0])
    assert "a: 1.00" in t.detail("rho") and "| a | 1.0 | 2.0 | 0.50 |" in t.markdown()


def test_endpoints_average_runs_per_prompt():
    series = {"a": _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4]), "b": _run([0.3, 0.2, 0.3, 0.7],
                                                                       [8, 7, 6, 4])}
    first, last = endpoints(series)
    np.testing.assert_allclose(first["share"], [0.2] * 3)
    np.testing.assert_allclose(last["share"], [0.6] * 3)
    series["c"] = RunSeries(**{**series["a"].__dict__,
                               "profiles": tuple(_profile(0.5, n_prompts=2) for _ in range(4))})
    with pytest.raises(LlmdynError, match="different prompts"):
        endpoints(series)


def test_timing_needs_three_checkpoints():
    with pytest.raises(LlmdynError, match="at least 3 checkpoints"):
        emergence_timing({"a": _run([0.1, 0.2], [8, 7], steps=(0, 1))})


def test_suite_table_without_run_files():
    table = suite_table({"a": _run([0.1, 0.2, 0.3, 0.5], [8, 7, 6, 4])})
    assert "| a | 2 | ? | 0.00M | 40 |" in table and "| 4.000 | 4.000 |" in table


def test_spread_steps_is_log_spaced():
    assert spread_steps([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512], 4) == [0, 8, 64, 512]
    assert spread_steps([0, 5], 4) == [0, 5]
