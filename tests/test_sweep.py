import json

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.sweep.join import check_regression, leaderboard, leaderboard_score, sweep_table
from llmdyn.sweep.measure import FORMAT, MeasureParams, result_path

PARAMS = MeasureParams(k=4, n_per_task=1, tasks=("gsm8k",), max_chars=40)
MODELS = ["EleutherAI/pythia-70m-deduped", "EleutherAI/pythia-160m-deduped",
          "EleutherAI/pythia-410m-deduped"]


def fake_result(root, model, mis, params=PARAMS):
    """A result file as `llmdyn measure coupling` writes it (values made up, tmp only)."""
    raw = {"format": FORMAT, "model": {"name": model, "key": model.replace("/", "--")},
           "params": params.as_dict(), "versions": {},
           "aggregate": {"coupling_mis": mis, "coupling_share": 1 - mis**2,
                         "coupling_authors": mis},
           "prompts": [{"id": "gsm8k/1", "task": "gsm8k", "coupling_mis": mis,
                        "coupling_share": 1 - mis**2}]}
    path = result_path(model, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(raw))
    return path


def test_leaderboard_average_known_answer():
    row = leaderboard()["meta-llama/Llama-2-7b-hf"]
    values = [0.4379609636092418, 0.5307167235494881, 0.7774347739494125, 0.7403314917127072,
              0.3898020280158031, 0.1448066717210007]
    assert leaderboard_score("meta-llama/Llama-2-7b-hf") == pytest.approx(np.mean(values))
    assert row.params_b == 7.0 and row.tokens_t == 2.0 and row.family == "Llama-2"
    assert len(leaderboard()) == 47


def test_model_without_score():
    with pytest.raises(LlmdynError, match="'tiny-llama' has no leaderboard score"):
        leaderboard_score("tiny-llama")
    with pytest.raises(LlmdynError, match="Did you mean.*pythia-70m-deduped"):
        leaderboard_score("EleutherAI/pythia-70m")
    with pytest.raises(LlmdynError, match="no ARC-C score"):
        leaderboard_score("meta-llama/Meta-Llama-3-8B")


def test_sweep_table_joins_files_and_scores(tmp_path):
    for m, mis in zip(MODELS, [0.9, 0.8, 0.7], strict=True):
        fake_result(tmp_path, m, mis)
    t = sweep_table(MODELS, PARAMS, root=tmp_path)
    np.testing.assert_allclose(t.coupling_mis, [0.9, 0.8, 0.7])
    np.testing.assert_allclose(t.score, [leaderboard_score(m) for m in MODELS])
    with pytest.raises(LlmdynError, match="no leaderboard score"):
        sweep_table([*MODELS, "tiny-llama"], PARAMS, root=tmp_path)
    fake_result(tmp_path, MODELS[1], 0.8, MeasureParams(k=30, n_per_task=1, tasks=("gsm8k",)))
    with pytest.raises(LlmdynError, match="other parameters"):
        sweep_table(MODELS, PARAMS, root=tmp_path)


def test_regression_refuses_meaningless_fits():
    check_regression([1, 2, 3], [1, 3, 2])
    with pytest.raises(LlmdynError, match="at least 3 points, got 2.*R² = 1"):
        check_regression([1, 2], [3, 4])
    with pytest.raises(LlmdynError, match="coupling is constant"):
        check_regression([0.5, 0.5, 0.5], [1, 2, 3], x_name="coupling")
    with pytest.raises(LlmdynError, match="score is constant"):
        check_regression([1, 2, 3], [0.4, 0.4, 0.4], y_name="score")
