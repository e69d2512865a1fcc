"""No shell from data. A target, a `--config` value or a `--set-resources`
value holding shell syntax is refused in one line, through `llmdyn workflow` and through plain
`snakemake` (the README shows both), and nothing it names ever runs."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.runner import workflow
from llmdyn.runner.build import REPO
from llmdyn.runner.slurm import check_resource_value, resource_arguments
from llmdyn.runner.workflow import SNAKEFILE

MARKER = "PWNED"
# Each would create MARKER (in the directory the job runs in) if a shell read it as syntax.
PAYLOADS = {
    "command substitution": f"$(touch {MARKER})",
    "cd then command": f"$(cd ..;touch {MARKER})",
    "backticks": f"`touch {MARKER}`",
    "semicolon": f"x;touch {MARKER}",
    "single quote": f"x';touch {MARKER};'",
    "double quote": f'x";touch {MARKER};"',
    "space": f"x touch {MARKER}",
    "newline": f"x\ntouch {MARKER}",
}
# A known name for every wildcard, so each target differs from a valid one in one place.
VALID = {"chapter": "05_depth_coupling", "model": "tiny-llama", "packaged": "smollm2-135m",
         "run": "t1-seed0", "grid": "tiny", "dataset": "digits"}


def wildcard_outputs() -> list[str]:
    """The output patterns of the Snakefile's rules that have wildcards (every one)."""
    # outputs under the results root are written RESULTS + "/…" (LLMDYN_RESULTS, else results/)
    found = [("results" if under else "") + out for under, out in re.findall(
        r'^\s*output:\s*(RESULTS \+ )?"([^"]*\{[^"]+)"', SNAKEFILE.read_text(), re.MULTILINE)]
    assert {"book/executed/{chapter}.ipynb", "results/measure/{model}.json",
            "results/suite/{run}/run.json", "results/vit/{grid}/{dataset}/{run}/run.json",
            "results/vit/{grid}/{dataset}/grid.json",
            "results/models/{packaged}.json"} <= set(found)
    return found


def bad_targets(payloads) -> list[str]:
    """Every rule's output with each payload in each of its wildcards in turn."""
    targets = []
    for pattern in wildcard_outputs():
        names = re.findall(r"\{(\w+)\}", pattern)
        for bad in names:
            for payload in payloads:
                targets.append(pattern.format(**{n: payload if n == bad else VALID[n]
                                                 for n in names}))
    return targets


@pytest.fixture
def no_snakemake(monkeypatch):
    """Fail the test if Snakemake would be started (the refusal must come first)."""
    def popen(cmd, **kwargs):
        raise AssertionError(f"started {cmd}")

    monkeypatch.setattr(workflow.subprocess, "Popen", popen)


def one_line_refusal(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("llmdyn workflow: error: ") and err.count("\n") == 1, err
    return err


def test_a_target_with_shell_syntax_is_refused_in_one_line_before_snakemake(
        tmp_path, monkeypatch, capsys, no_snakemake):
    # `llmdyn workflow 'results/vit/$(cd ..;touch PWNED3)/digits/r0/run.json'` created PWNED3.
    monkeypatch.chdir(tmp_path)
    targets = bad_targets(PAYLOADS.values())
    assert len(targets) == 10 * len(PAYLOADS)  # 10 wildcards over 7 rules
    for target in targets:
        for args in ([target], ["--rerun", target]):
            assert main(["workflow", "--directory", str(tmp_path), "-n", *args]) == 2, target
            assert "is neither a rule nor a file the workflow writes; each name in a file's " \
                   "path (chapter, model, run, grid, data set) is letters, digits and ._- only" \
                in one_line_refusal(capsys)
    assert not list(tmp_path.rglob(f"*{MARKER}*")) and not (tmp_path.parent / MARKER).exists()


def test_config_and_resource_values_with_shell_syntax_are_refused_in_one_line(
        tmp_path, monkeypatch, capsys, no_snakemake):
    monkeypatch.chdir(tmp_path)
    for payload in PAYLOADS.values():
        for item in (f"suite={payload}", f"device=cpu{payload}",
                     f"only_chapters=[{json.dumps(payload)}]",
                     f'measure={{"k": 4, "n_per_task": 1, "tasks": [{json.dumps(payload)}], '
                     '"seed": 0}'):
            assert main(["workflow", "--directory", str(tmp_path), "-n", "--config", item]) == 2
            assert "workflow config" in one_line_refusal(capsys)
        for item in (f"chapter:slurm_extra={payload}", f"measure:slurm_partition={payload}",
                     f"chapter:mem_mb={payload}"):
            assert main(["workflow", "--directory", str(tmp_path), "-n", "--set-resources",
                         item]) == 2, item
            err = one_line_refusal(capsys)
            assert "is refused" in err or "takes RULE:NAME=VALUE" in err, err
    # Snakemake eval()s a value that is not a number: Python is refused as well as shell
    with pytest.raises(LlmdynError, match="chapter:mem_mb=.*is refused"):
        resource_arguments(["chapter:mem_mb=__import__('os').system('touch${IFS}X')"], [],
                           SNAKEFILE)
    assert resource_arguments(["chapter:slurm_extra=--qos=high", "chapter:runtime=2h",
                               "measure:slurm_partition=gpu", "chapter:mem_mb=8000"], [],
                              SNAKEFILE)[0] == "--set-resources"
    check_resource_value("chapter", "mem_mb", 8000)
    assert not list(tmp_path.rglob(f"*{MARKER}*"))


def snakemake(directory: Path, *args: str) -> subprocess.Popen:
    """Plain `snakemake -s workflow/Snakefile --directory W -c1 ...`, as the README shows."""
    return subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE),
                             "--directory", str(directory), "-c1", *args], cwd=directory,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO / "lib")})


def test_plain_snakemake_refuses_shell_syntax_in_every_wildcard_and_runs_nothing(tmp_path):
    # Not a dry run: had a target matched, its job would run. Every wildcard of every rule gets
    # one payload holding all the syntax at once (the llmdyn test above tries each alone); the
    # runs go side by side, each stops when the DAG is built.
    every = f"a$(touch {MARKER}1)`touch {MARKER}2`;touch {MARKER}3;'\"b\nc d"
    targets = bad_targets([every])
    assert len(targets) == 10
    runs = {}
    for i, target in enumerate(targets):
        (tmp_path / str(i)).mkdir()
        runs[target] = snakemake(tmp_path / str(i), target)
    for target, proc in runs.items():
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode == 1, out
        assert f"No rule to produce {target}" in out, out
    assert not list(tmp_path.rglob(f"*{MARKER}*"))


def test_plain_snakemake_refuses_shell_syntax_in_config_and_resources_and_quotes_paths(
        tmp_path):
    # A suite name reached the suite_data job's shell line unquoted; --set-resources values
    # reach the SLURM plugin's sbatch line (a shell) and Snakemake's eval().
    runs = {
        "suite": snakemake(tmp_path, "-n", "results/suite/_data/prepared.txt", "--config",
                           f"suite=x;touch {MARKER}"),
        "device": snakemake(tmp_path, "-n", "measure_all", "--config",
                            f"device=cpu;touch {MARKER}"),
        "slurm_extra": snakemake(tmp_path, "-n", "book/executed/05_depth_coupling.ipynb",
                                 "--set-resources", f"chapter:slurm_extra=--qos=x;touch {MARKER}"),
    }
    for what, proc in runs.items():
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode == 1, out
        refusal = {"suite": r"workflow config suite: .*'x;touch PWNED'.*the schema's 'pattern'",
                   "device": r"workflow config device: .*'cpu;touch PWNED'.*the schema's 'pattern'",
                   "slurm_extra": r"resource chapter:slurm_extra='--qos=x;touch PWNED' is refused"}
        assert re.search(refusal[what], out), out
    # Paths with spaces and shell syntax still work: each reaches its job as one argument.
    params = tmp_path / "smoke params $(x)"
    shutil.copytree(REPO / "tests" / "smoke", params)
    model = tmp_path / f"my model;$(touch {MARKER})"
    chapter_model = f"m';$(touch {MARKER})\"x `touch {MARKER}`"
    proc = snakemake(tmp_path, "-n", "-p", "measure_all", "book/executed/01_trajectories.ipynb",
                     "--config", f"chapter_params={params}",
                     f"measure_models=[{json.dumps(str(model))}]",
                     f"model={chapter_model}")
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, out
    commands = [line for line in out.splitlines() if " -m llmdyn" in line]
    measure = shlex.split(next(c for c in commands if "measure coupling" in c))
    assert measure[measure.index("--model") + 1] == str(model)
    chapter = shlex.split(next(c for c in commands if "cli.job chapter" in c))
    assert chapter[chapter.index("chapter") + 1] == "01_trajectories"
    assert json.loads(chapter[chapter.index("--parameters") + 1])["model"] == chapter_model
    assert not list(tmp_path.rglob(f"*{MARKER}*"))
