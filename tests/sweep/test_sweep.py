import json

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.sweep.job import FORMAT, FORMAT_1, MeasureParams, read_results, result_path
from llmdyn.sweep.join import check_regression, leaderboard, leaderboard_score, sweep_table

PARAMS = MeasureParams(k=4, n_per_task=1, tasks=("gsm8k",), max_chars=40)
MODELS = ["EleutherAI/pythia-70m-deduped", "EleutherAI/pythia-160m-deduped",
          "EleutherAI/pythia-410m-deduped"]


def fake_result(root, model, mis, params=PARAMS):
    """A result file as `llmdyn measure coupling` writes it (values made up, tmp only)."""
    raw = {"format": FORMAT, "model": {"name": model, "key": model.replace("/", "--")},
           "params": params.as_dict(), "versions": {},
           "aggregate": {"miscoupling": mis, "diagonal_share": 1 - mis**2,
                         "coupling_authors": mis},
           "prompts": [{"id": "gsm8k/1", "task": "gsm8k", "miscoupling": mis,
                        "diagonal_share": 1 - mis**2}]}
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
    np.testing.assert_allclose(t.miscoupling, [0.9, 0.8, 0.7])
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


def _edited(root, change):
    """A consistent result file of 2 tasks × 2 prompts, then ``change(raw)`` applied to it."""
    params = MeasureParams(k=4, n_per_task=2, tasks=("gsm8k", "arc_challenge"), max_chars=40)
    mis = {"gsm8k/1": 0.8, "gsm8k/2": 0.86, "arc_challenge/1": 0.82, "arc_challenge/2": 0.84}
    prompts = [{"id": i, "task": i.split("/")[0], "miscoupling": m, "diagonal_share": 1 - m}
               for i, m in mis.items()]
    per_task = {t: {"miscoupling": float(np.mean([m for i, m in mis.items() if i.startswith(t)])),
                    "diagonal_share": float(np.mean([1 - m for i, m in mis.items()
                                                     if i.startswith(t)]))}
                for t in params.tasks}
    raw = {"format": FORMAT, "model": {"name": MODELS[0], "key": "m"}, "params": params.as_dict(),
           "versions": {}, "prompts": prompts,
           "aggregate": {"miscoupling": 0.83, "diagonal_share": 0.17, "coupling_authors": 0.9,
                         "per_task": per_task}}
    change(raw)
    path = root / "r.json"
    path.write_text(json.dumps(raw))
    return path, params


def _set_aggregate(value):
    return lambda raw: raw["aggregate"].__setitem__("miscoupling", value)


@pytest.mark.parametrize("change, match", [
    (_set_aggregate(0.1), r"aggregate miscoupling is 0.1, but the mean of its 4 per-prompt "
                          r"values is 0.83"),
    (lambda raw: raw["aggregate"]["per_task"]["gsm8k"].__setitem__("diagonal_share", 0.5),
     r"aggregate diagonal_share for gsm8k is 0.5, but the mean of its 2"),
    (lambda raw: raw.__setitem__("prompts", raw["prompts"][:3]),
     r"holds 3 prompts .* but its parameters ask for 2 from each of .* \(4\)"),
    (lambda raw: raw["prompts"][1].__setitem__("miscoupling", "NaN"),
     r"1 of 4 values of miscoupling of every prompt are NaN or infinite"),
    (_set_aggregate("NaN"), r"values of the aggregate miscoupling of every prompt are NaN"),
    (lambda raw: raw["prompts"][1].__setitem__("id", "gsm8k/1"), r"lists a prompt twice"),
])
def test_read_results_checks_each_file_against_its_own_prompts(tmp_path, change, match):
    # The probe: an aggregate of 0.1 over per-prompt values averaging 0.83, a file with 3 of its
    # prompts and "NaN" were all accepted by chapter 09's join.
    path, params = _edited(tmp_path, lambda raw: None)
    assert read_results([path], params)[0].miscoupling == 0.83  # the honest file reads
    path, params = _edited(tmp_path, change)
    with pytest.raises(LlmdynError, match=match + r".*rerun its measurement: `llmdyn measure "
                                                  r"coupling --model EleutherAI/pythia-70m"):
        read_results([path], params)


def test_format_1_files_read_with_their_old_score_names(tmp_path):
    # Format 1 named m̃ "coupling_mis" and 1 − m̃² "coupling_share"; a file
    # measured then reads with the same values under the new names, and a wrong value still fails.
    old = {"miscoupling": "coupling_mis", "diagonal_share": "coupling_share"}

    def to_format_1(raw):
        raw["format"] = FORMAT_1
        for scores in [raw["aggregate"], *raw["aggregate"]["per_task"].values(), *raw["prompts"]]:
            for new, name in old.items():
                scores[name] = scores.pop(new)

    path, params = _edited(tmp_path, to_format_1)
    assert json.loads(path.read_text())["aggregate"]["coupling_mis"] == 0.83
    got = read_results([path], params)[0]
    assert got.miscoupling == 0.83 and got.diagonal_share == 0.17
    np.testing.assert_array_equal(got.prompt_miscoupling, [0.8, 0.86, 0.82, 0.84])
    def wrong(raw):
        to_format_1(raw)
        raw["aggregate"]["coupling_mis"] = 0.1

    path, params = _edited(tmp_path, wrong)
    with pytest.raises(LlmdynError, match="aggregate miscoupling is 0.1"):
        read_results([path], params)
