"""A bad workflow config is refused before any job, and a stopped `llmdyn workflow` stops its
Snakemake."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.runner import workflow
from llmdyn.runner.build import REPO
from llmdyn.runner.workflow import CONFIG_SCHEMA, SNAKEFILE, check_config, merged_config


def _refused(overrides: dict, match: str) -> None:
    with pytest.raises(LlmdynError, match=match):
        check_config(merged_config(overrides))


def test_the_default_config_and_the_tests_config_pass():
    config = check_config(merged_config())
    assert config["measure_models"] == []  # the schema's default
    assert CONFIG_SCHEMA.is_file()
    assert config["model"] is None  # each params file's model, else smollm2-135m
    tiny = check_config(merged_config({"chapter_params": "tests/smoke",
                                       "measure_models": ["tiny-llama"]}))
    assert tiny["chapter_params"] == "tests/smoke"


def test_schema_refuses_what_was_silently_accepted():
    """Each refusal names the key and the schema's rule it breaks (jsonschema words the rest)."""
    # a text where a list belongs would be one job per character ("t", "i", "n", ...)
    _refused({"measure_models": "tiny-llama"},
             r"workflow config measure_models: .*; give a list, e\.g\. "
             r"--config 'measure_models=\[\"tiny-llama\"\]' \(the schema's 'type' rule; the "
             r"keys and their types: workflow/schemas/")
    _refused({"sweep_models": "EleutherAI/pythia-70m"},
             r"workflow config sweep_models: .*; give a list, .*\(the schema's 'type' rule")
    _refused({"chapter_param": "tests/smoke"},  # misspelt
             r"workflow config \(top level\): .*'chapter_param'.*'additionalProperties' rule")
    _refused({"measure": {"k": 0}}, r"workflow config measure\.k: .*'minimum' rule")
    _refused({"measure": {"tasks": ["squad"]}},
             r"workflow config measure\.tasks\.0: .*'squad'.*'enum' rule")
    _refused({"device": "gpu"}, r"workflow config device: .*'gpu'.*'pattern' rule")
    _refused({"model": ""}, r"workflow config model: .*'minLength' rule")
    _refused({"model": 3}, r"workflow config model: .*'type' rule")


def test_a_chapter_params_typo_is_refused():
    # a typo ran full-size chapters before
    _refused({"chapter_params": "tests/smokee"},
             r"chapter_params: 'tests/smokee' is not a directory .*tests/smokee does not exist")
    _refused({"chapter_params": "/no/such/params"}, "is not a directory")


def test_snakemake_command_line_scalars_are_typed_again():
    # Snakemake reads --config measure={"k": 4} with YAML's base loader: every value a string
    config = check_config(merged_config({"measure": {"k": "4", "n_per_task": "1",
                                                     "max_chars": "40"},
                                         "suite": "null", "chapter_params": None}))
    assert config["measure"]["k"] == 4 and config["measure"]["max_chars"] == 40
    assert config["suite"] is None and config["chapter_params"] == ""


def test_the_snakefile_itself_validates(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(SNAKEFILE),
         "--directory", str(tmp_path), "--cores", "1", "--workflow-profile", "none",
         "--config", "measure_models=tiny-llama"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO / "lib")})
    assert out.returncode != 0
    assert re.search(r"workflow config measure_models: .*; give a list, .* \(the schema's 'type' "
                     "rule", out.stdout + out.stderr)


@pytest.fixture
def no_snakemake(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("snakemake started")

    monkeypatch.setattr(workflow.subprocess, "Popen", never)


def test_cli_refuses_bad_config_cores_and_directory_before_snakemake(no_snakemake, capsys,
                                                                      tmp_path):
    assert main(["workflow", "-n", "--config", "chapter_params=tests/smokee"]) == 2
    assert "chapter_params: 'tests/smokee' is not a directory" in capsys.readouterr().err
    assert main(["workflow", "-n", "--config", "measure_models=tiny-llama"]) == 2
    assert "measure_models" in capsys.readouterr().err
    assert main(["workflow", "-n", "--cores", "0"]) == 2  # used every core before
    assert "--cores" in capsys.readouterr().err
    missing = tmp_path / "missing"
    assert main(["workflow", "-n", "--directory", str(missing)]) == 2  # crashed in Popen before
    err = capsys.readouterr().err
    assert f"--directory) {missing} does not exist; create it first" in err
    assert not missing.exists()  # refused, not created
    (tmp_path / "file").write_text("x")
    assert main(["workflow", "-n", "--directory", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err


def _descendants(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid:
            kids += [int(stat.parent.name), *_descendants(int(stat.parent.name))]
    return kids


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_sigterm_stops_snakemake_and_its_jobs(tmp_path, sigint):
    """Before, SIGTERM ended `llmdyn workflow` and left Snakemake running under PID 1.

    "ignored": started as a non-interactive shell starts `cmd &` (a script, `make test` run
    in the background), with SIGINT ignored, which exec keeps. SIGINT is how llmdyn stops
    Snakemake's group, so Snakemake and its job ignored the stop and ran on (the resume test
    failed only when started that way).
    """
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib"),
           "LLMDYN_RESULTS": str(tmp_path / "results")}
    # enough work that the job is normally still running when the signal comes
    measure = '{"k": 4, "n_per_task": 300, "tasks": ["gsm8k", "mmlu", "arc_challenge", ' \
              '"hellaswag", "winogrande", "truthfulqa"], "seed": 0, "max_chars": 40}'
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmdyn", "workflow", "--directory", str(tmp_path), "--cores",
         "1", "measure_all", "--config", 'measure_models=["tiny-llama"]', f"measure={measure}"],
        env=env, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        preexec_fn=_ignore_sigint if sigint == "ignored" else None)
    try:
        for line in proc.stdout:
            if "Measure coupling of tiny-llama" in line:
                break
        deadline = time.time() + 60
        while time.time() < deadline:  # snakemake, its shell and the measure job
            kids = _descendants(proc.pid)
            if len(kids) >= 3:
                break
            time.sleep(0.2)
        assert len(kids) >= 3, kids
        proc.send_signal(signal.SIGTERM)
        rest = proc.stdout.read()
        # the job stops within seconds; one that ignored the stop would run about 2 minutes on
        assert proc.wait(timeout=60) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "llmdyn workflow: error: stopped by SIGTERM" in rest
    deadline = time.time() + 10
    while time.time() < deadline and any(Path(f"/proc/{k}").exists() for k in kids):
        time.sleep(0.2)
    assert not [k for k in kids if Path(f"/proc/{k}").exists()], "left running"
    # Whether the measure job got to write its file before the signal depends on the machine's
    # load; what matters is that nothing is left running and the run says it was stopped.


def test_a_yml_params_file_is_refused_by_name(tmp_path):
    # 05_depth_coupling.yml passed the typo check, and was never read.
    (tmp_path / "05_depth_coupling.yml").write_text("k: 4\n")
    with pytest.raises(LlmdynError, match=r"05_depth_coupling\.yml would be ignored: only "
                                          r"<chapter>\.yaml files are read; rename it to "
                                          r"05_depth_coupling\.yaml"):
        check_config(merged_config({"chapter_params": str(tmp_path)}))
    (tmp_path / "05_depth_coupling.yml").rename(tmp_path / "05_depth_coupling.yaml")  # advice
    assert check_config(merged_config({"chapter_params": str(tmp_path)}))


def test_measure_models_whose_result_files_collide_are_refused_with_both_names(tmp_path):
    # `a b` and `a_b` planned one job; one model was never measured.
    for name in ("a b", "a_b"):
        (tmp_path / name).mkdir()
    models = [str(tmp_path / "a b"), str(tmp_path / "a_b")]
    with pytest.raises(LlmdynError, match=r"'.*/a b' and '.*/a_b' would share one result file "
                                          r".*a_b\.json\), so one of them would not be measured"):
        check_config(merged_config({"measure_models": models}))
    link = f"{tmp_path / 'a_b'}-2"  # the advice, followed
    os.symlink(tmp_path / "a_b", link)
    assert check_config(merged_config({"measure_models": [models[0], link]}))


def _dry_run(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE),
                           "-n", "--cores", "1", "--workflow-profile", "none", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_a_vit_target_trains_on_the_data_set_it_is_stored_under(tmp_path):
    # results/vit/tiny/digits/<run> trained on Fashion-MNIST.
    from llmdyn.vision.grids import GRIDS

    run = GRIDS["tiny"].runs[0].name
    out = _dry_run(f"results/vit/tiny/digits/{run}/run.json", "--directory", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Train ViT {run} of grid tiny on digits" in out.stdout
    out = _dry_run(f"results/vit/tiny/cifar-typo/{run}/run.json", "--directory", str(tmp_path))
    assert out.returncode != 0 and "results/vit/tiny/cifar-typo: no data set is named " \
        "'cifar-typo'" in out.stdout + out.stderr


def test_a_grid_of_vits_is_one_job(tmp_path):
    # The grid's runs share one process (rule vit_grid), not one job each.
    out = _dry_run("results/vit/tiny/digits/grid.json", "--directory", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Train every ViT of grid tiny on digits" in out.stdout
    assert "vit_run" not in out.stdout
    out = _dry_run("results/vit/no-such-grid/digits/grid.json", "--directory", str(tmp_path))
    assert out.returncode != 0 and "no-such-grid" in out.stdout + out.stderr


def test_a_relative_model_in_a_params_file_is_relative_to_where_the_user_ran(tmp_path,
                                                                             monkeypatch):
    # `model: m/good` with --directory W loaded W/m/good, not ./m/good.
    here, work, params = tmp_path / "here", tmp_path / "work", tmp_path / "params"
    for d in (here / "m" / "good", work / "m" / "good", params):
        d.mkdir(parents=True)
    (params / "05_depth_coupling.yaml").write_text("model: m/good\n")
    monkeypatch.chdir(here)
    out = workflow.run_workflow(chapters=["05_depth_coupling"], directory=work, dry_run=True,
                                config={"chapter_params": str(params)})
    assert f"Chapter 05_depth_coupling with model {here / 'm' / 'good'} " in out
    (params / "05_depth_coupling.yaml").write_text("model: m/typo\n")
    with pytest.raises(LlmdynError, match=r"model in .*05_depth_coupling\.yaml m/typo: "
                                          f"directory {here / 'm' / 'typo'} does not exist"):
        workflow.run_workflow(chapters=["05_depth_coupling"], directory=work, dry_run=True,
                              config={"chapter_params": str(params)})


@pytest.mark.parametrize("text, match", [
    ("- k: 4\n", r"holds a list, not notebook parameters; write one 'name: value' per line"),
    ("k: [4\n", r"is not valid YAML \(line 2\); write one 'name: value' per line")])
def test_a_params_file_that_is_not_a_mapping_is_refused_in_one_line(tmp_path, text, match):
    # A list stopped Snakemake with "dictionary update sequence element #0".
    (tmp_path / "05_depth_coupling.yaml").write_text(text)
    with pytest.raises(LlmdynError, match=r"05_depth_coupling\.yaml " + match):
        check_config(merged_config({"chapter_params": str(tmp_path)}))
