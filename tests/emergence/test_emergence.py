import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore
from llmdyn.emergence.profiles import (
    _trajectory_scores,
    half_rise_step,
    measure_checkpoint,
    measure_checkpoints,
)
from llmdyn.models.loading import load_model
from llmdyn.phases.split import window_that_fits
from llmdyn.trace import trajectory
from llmdyn.training.checkpoints import Checkpoint, by_run, suite_checkpoints
from llmdyn.training.suite import SUITES, train_suite
from llmdyn.trajectories.regularity import with_final_norm
from llmdyn.trajectories.shape import expodistance, line_shape_score, windowed
from tests.helpers import write_corpus

PROMPTS = ["the whale sailed to the harbour", "congress made a new law for the union"]


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite")
    corpus = write_corpus(tmp_path_factory.mktemp("corpus"), n_docs=12, words=400)
    train_suite("tiny", root, corpus_dir=corpus, progress=False)
    return root


def test_fit_window():
    # chapter 08's whole trajectories keep x^L: the points are x^0 … x^L
    assert window_that_fits(11, 30, include_last=True) == 11
    assert window_that_fits(11, 6, include_last=True) == 7  # 7 points of a 6-block model's 7
    assert window_that_fits(11, 5, include_last=True) == 5  # 6 points: the largest odd is 5
    assert window_that_fits(3, 10, include_last=True) == 3
    assert window_that_fits(11, 6) == 5  # x^L apart (paper B's windows): 6 points
    with pytest.raises(LlmdynError, match="n_layers >= 2"):
        window_that_fits(3, 1, include_last=True)
    with pytest.raises(LlmdynError, match="n_layers >= 3"):
        window_that_fits(3, 2)


def test_half_rise_step_interpolates():
    assert half_rise_step([0, 10, 20], [0.0, 0.4, 1.0]) == pytest.approx(10 + 10 / 6)
    assert half_rise_step([0, 10, 20], [2.0, 1.0, 0.0]) == pytest.approx(10.0)  # a falling loss
    assert np.isnan(half_rise_step([0, 1], [3.0, 3.0]))
    with pytest.raises(LlmdynError):
        half_rise_step([0], [1.0])


def test_window_scores_match_the_windowed_metric():
    m = load_model("tiny-neox")
    scores = _trajectory_scores(m, PROMPTS[0], 3, "final_norm")
    raw = trajectory(m, PROMPTS[0], last_point="block_output").states.double()
    states = with_final_norm(m, raw)  # the papers' end point, built independently
    x = states.transpose(0, 1).numpy()  # (tok, layer+1, d_model)
    ref = windowed(line_shape_score, x, 3)[:, 1:-1].mean(0)
    np.testing.assert_allclose(scores["window_lss"], ref, rtol=1e-12)
    ref_ed = np.median(windowed(expodistance, x, 3)[:, 1:-1], 0)
    np.testing.assert_allclose(scores["window_ed"], ref_ed, rtol=1e-12)
    np.testing.assert_allclose(scores["norms"], np.linalg.norm(x, axis=-1).mean(0))
    assert scores["lss"] == pytest.approx(line_shape_score(x).mean())


def test_measure_checkpoint_shapes_and_cache(tmp_path):
    m = load_model("tiny-neox")
    store = ResultStore(m.model_id, root=tmp_path)
    a = measure_checkpoint(m, PROMPTS, k=4, store=store)
    b = measure_checkpoint(m, PROMPTS, k=4, store=store)  # from the cache
    L = m.n_layers
    assert a.miscoupling.shape == (2,) and a.miscoupling_map.shape == (L, L)
    assert a.norms.shape == (2, L + 1) and a.window_lss.shape == (2, L - 1)
    assert list(a.centres) == list(range(1, L))
    assert np.all(a.diagonal_share > 0) and np.all(a.diagonal_share <= 1)
    np.testing.assert_array_equal(a.window_ed, b.window_ed)
    # mean of 1 - m² against 1 - (mean m)²
    np.testing.assert_allclose(a.diagonal_share, 1 - a.miscoupling ** 2, atol=0.2)
    # both ends of the whole trajectory in one pass: the chosen one equals the plain fields
    assert a.lss_by_end.shape == (2, 2) and a.diagonal_share_map.shape == (2, L, L)
    np.testing.assert_allclose(a.whole("lss", "final_norm"), a.lss, rtol=1e-12)
    np.testing.assert_allclose(a.whole("expodistance", "final_norm"), a.expodistance, rtol=1e-12)
    off = ~np.eye(L, dtype=bool)  # share is the mean of diagonal_share_map over pairs l ≠ l′
    np.testing.assert_allclose(a.diagonal_share_map[:, off].mean(1), a.diagonal_share,
                               rtol=1e-6)  # float32 maps
    c = measure_checkpoint(m, PROMPTS, k=4, last_point="block_output")
    np.testing.assert_allclose(c.lss, a.whole("lss", "block_output"), rtol=1e-12)
    assert not np.allclose(a.whole("lss", "block_output"), a.lss)  # the final norm moves x^L
    with pytest.raises(LlmdynError, match="non-empty list"):
        measure_checkpoint(m, "one prompt", k=4)


def test_suite_checkpoints_and_measurement(tiny_suite, tmp_path, monkeypatch):
    ckpts = suite_checkpoints("tiny", root=tiny_suite)
    runs = by_run(ckpts)
    assert list(runs) == sorted(r.name for r in SUITES["tiny"].runs)
    assert all([c.step for c in cs] == [0, 1, 2, 4, 8] for cs in runs.values())
    assert all(c.params and np.isfinite(c.heldout_loss) for c in ckpts)
    few = suite_checkpoints("tiny", root=tiny_suite, steps=[0, 8])
    assert len(few) == 2 * len(SUITES["tiny"].runs)  # steps 0 and 8 of each run
    with pytest.raises(LlmdynError, match=r"steps \[3\] are not saved"):
        suite_checkpoints("tiny", root=tiny_suite, steps=[3])
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path / "results"))
    profiles = measure_checkpoints(few[:2], ["the whale sailed"], k=4, progress=False)
    assert set(profiles) == {c.spec for c in few[:2]}
    # the list form reads the same directories
    listed = suite_checkpoints([c.spec for c in few[:2]])
    assert [(c.run, c.step) for c in listed] == [(c.run, c.step) for c in few[:2]]


def test_untrained_suite_and_hub_specs_are_explained(tmp_path):
    with pytest.raises(LlmdynError, match="llmdyn train --suite tiny"):
        suite_checkpoints("tiny", root=tmp_path)
    (c,) = suite_checkpoints(["EleutherAI/pythia-70m@step1000"])
    assert c == Checkpoint("EleutherAI/pythia-70m@step1000", "EleutherAI/pythia-70m", 1000,
                           1000 * 2048 * 1024)
    with pytest.raises(LlmdynError, match="@step<N>"):
        suite_checkpoints(["EleutherAI/pythia-70m@main"])
    with pytest.raises(LlmdynError, match="neither a directory"):
        suite_checkpoints([str(tmp_path / "absent")])
