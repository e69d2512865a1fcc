import json

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.coupling.depth import depth_coupling
from llmdyn.coupling.scores import diagonal_share, offdiagonal_mean
from llmdyn.data.prompts import sample_leaderboard
from llmdyn.models.loading import load_model
from llmdyn.sweep.job import (
    FORMAT,
    MeasureParams,
    measure_coupling,
    read_result,
    read_results,
    result_path,
    write_result,
)

SMALL = MeasureParams(k=4, n_per_task=2, tasks=("gsm8k", "arc_challenge"), max_chars=40)


@pytest.fixture(scope="module", params=["tiny-llama", "tiny-neox"])
def measured(request, tmp_path_factory):
    result = measure_coupling(request.param, SMALL, cache=False)
    path = write_result(result, tmp_path_factory.mktemp("m") / "r.json")
    return request.param, result, path


def test_result_is_self_describing(measured):
    name, result, path = measured
    raw = json.loads(path.read_text())
    assert raw["format"] == FORMAT and raw["model"]["name"] == name
    assert raw["params"] == SMALL.as_dict() and raw["params"]["k"] == 4
    assert raw["versions"]["torch"] and raw["created"]
    assert [p["task"] for p in raw["prompts"]] == ["gsm8k"] * 2 + ["arc_challenge"] * 2


def test_per_prompt_values_are_depth_coupling_of_the_same_prompts(measured):
    name, result, _ = measured
    prompts = sample_leaderboard(2, tasks=("gsm8k", "arc_challenge"))
    couplings = depth_coupling(load_model(name), [p.text[-40:] for p in prompts], k=4)
    expect = [offdiagonal_mean(c.miscoupling) for c in couplings]
    got = [p["miscoupling"] for p in result["prompts"]]
    np.testing.assert_allclose(got, expect, rtol=1e-6)
    share = [offdiagonal_mean(diagonal_share(c.miscoupling)) for c in couplings]
    np.testing.assert_allclose([p["diagonal_share"] for p in result["prompts"]], share,
                               rtol=1e-6)
    # the aggregate over prompt-mean maps equals the mean over prompts (both are linear)
    assert result["aggregate"]["miscoupling"] == pytest.approx(np.mean(got), rel=1e-6)
    assert 0 < result["aggregate"]["diagonal_share"] <= 1


def test_read_back_and_check_parameters(measured):
    _, result, path = measured
    [r] = read_results([path], SMALL)
    assert r.miscoupling == result["aggregate"]["miscoupling"]
    assert r.prompt_miscoupling.shape == (4,) and r.prompt_ids[0].startswith("gsm8k/")
    with pytest.raises(LlmdynError, match="other parameters.*'k': \\(4, 30\\)"):
        read_results([path], MeasureParams(k=30, n_per_task=2, tasks=("gsm8k", "arc_challenge"),
                                           max_chars=40))
    with pytest.raises(LlmdynError, match="appears twice"):
        read_results([path, path], SMALL)


def test_bad_files_and_parameters(tmp_path):
    with pytest.raises(LlmdynError, match="no result file"):
        read_result(tmp_path / "none.json")
    (tmp_path / "x.json").write_text('{"format": "other"}')
    with pytest.raises(LlmdynError, match="format 'other'"):
        read_result(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("not json")
    with pytest.raises(LlmdynError, match="not JSON"):
        read_result(tmp_path / "y.json")
    with pytest.raises(LlmdynError, match="paths must be a non-empty list"):
        read_results([], SMALL)
    with pytest.raises(LlmdynError, match="^k must be >= 2, got 0$"):
        MeasureParams(k=0)
    with pytest.raises(LlmdynError, match="tasks must be a list of values, each one of 'arc_"):
        MeasureParams(tasks=("squad",))
    with pytest.raises(LlmdynError, match="tasks must be a non-empty list of names"):
        MeasureParams(tasks=())
    with pytest.raises(LlmdynError, match="max_chars"):
        MeasureParams(max_chars=0)


def test_paper_counts_are_the_default():
    p = MeasureParams()
    assert (p.k, p.n_per_task, len(p.tasks)) == (30, 200, 6)
    assert result_path("EleutherAI/pythia-70m", "r").as_posix() == "r/EleutherAI_pythia-70m.json"


def test_command_line_writes_one_file(tmp_path, capsys):
    out = tmp_path / "tiny.json"
    assert main(["measure", "coupling", "--model", "tiny-llama", "--out", str(out), "--k", "4",
                 "--n-per-task", "1", "--tasks", "mmlu", "--max-chars", "40"]) == 0
    assert "tiny-llama: m̃ = " in capsys.readouterr().out
    r = read_result(out)
    assert r.params["tasks"] == ["mmlu"] and len(r.prompt_ids) == 1


def test_a_task_named_twice_is_refused_before_any_work(tmp_path, capsys):
    # `--tasks gsm8k gsm8k` exited 0, then read_results refused its own file.
    with pytest.raises(LlmdynError, match=r"^tasks must be distinct task names \(gsm8k named more "
                                          r"than once; name each task once\), got \('gsm8k', "):
        MeasureParams(tasks=("gsm8k", "mmlu", "gsm8k"))
    out = tmp_path / "c.json"
    assert main(["measure", "coupling", "--model", "tiny-llama", "--tasks", "gsm8k", "gsm8k",
                 "--out", str(out)]) == 2
    assert "name each task once" in capsys.readouterr().err and not out.exists()


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="needs /proc")
def test_an_out_where_no_file_can_be_made_is_refused_before_the_measurement(capsys,
                                                                             monkeypatch):
    # `--out /proc/llmdyn.json` failed with a traceback after the whole run.
    import llmdyn.sweep.job as job

    monkeypatch.setattr(job, "measure_coupling", lambda *a, **k: pytest.fail("measured"))
    assert main(["measure", "coupling", "--model", "tiny-llama", "--out",
                 "/proc/llmdyn.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llmdyn measure coupling: error: --out /proc/llmdyn.json: cannot "
                          "use /proc: ") and err.count("\n") == 1


def test_a_full_disk_when_the_result_is_written_is_one_line(tmp_path, capsys, monkeypatch):
    import errno

    import llmdyn.sweep.job as job

    def full(path, write):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(job, "atomic_write", full)
    out = tmp_path / "c.json"
    assert main(["measure", "coupling", "--model", "tiny-llama", "--out", str(out), "--k", "4",
                 "--n-per-task", "1", "--tasks", "gsm8k", "--max-chars", "40"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]  # after the progress bar
    assert err == (f"llmdyn measure coupling: error: cannot write {out}: no space left on the "
                   "device; free space or write elsewhere: --out, --root, LLMDYN_RESULTS "
                   "(results cache) or LLMDYN_CACHE (converted models)")


@pytest.mark.parametrize("n_ctx", [8, 1])
def test_the_advised_max_chars_makes_every_prompt_fit(n_ctx):
    # `--max-chars 10` was advised (and looped) on a 1-token context.
    import re

    from llmdyn.sweep.job import _check_lengths

    loaded = load_model("tiny-llama")
    loaded.hf.config.max_position_embeddings = n_ctx  # what n_ctx reads
    prompts = sample_leaderboard(2, tasks=("gsm8k", "mmlu"), seed=0)
    texts = [p.text for p in prompts]
    with pytest.raises(LlmdynError) as refused:
        _check_lengths(loaded, prompts, texts, None)
    advised = re.search(r"--max-chars (\d+)", str(refused.value))
    if advised is None:  # nothing fits: said so, with no advice to loop on
        assert "holds no character of the prompts" in str(refused.value)
        return
    cut = int(advised.group(1))
    _check_lengths(loaded, prompts, [t[-cut:] for t in texts], cut)  # followed: fits
    assert MeasureParams(max_chars=cut).max_chars == cut
