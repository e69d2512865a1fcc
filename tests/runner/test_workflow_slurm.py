"""The workflow on SLURM: resource overrides from the CLI, and a job that can never start fails
with squeue's reason instead of pending forever."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.runner import slurm, workflow
from llmdyn.runner.build import REPO
from llmdyn.runner.slurm import PendingWatch, resource_arguments, sbatch_refusal
from llmdyn.runner.workflow import SNAKEFILE, run_workflow
from tests.runner.test_workflow import SLURM_SKIP, readme_slurm_command


def test_resource_overrides_are_checked_and_passed_to_snakemake():
    assert resource_arguments(["chapter:mem_mb=8000", "measure:slurm_partition=gpu"],
                              ["gpu=1"], SNAKEFILE) == [
        "--set-resources", "chapter:mem_mb=8000", "measure:slurm_partition=gpu",
        "--resources", "gpu=1"]
    assert resource_arguments([], [], SNAKEFILE) == []
    with pytest.raises(LlmdynError, match="--set-resources takes RULE:NAME=VALUE"):
        resource_arguments(["mem_mb=8000"], [], SNAKEFILE)
    # Snakemake ignores an unknown rule: the job would keep its request without a word
    with pytest.raises(LlmdynError, match="no rule 'chapters'; rules: .*chapter, measure"):
        resource_arguments(["chapters:mem_mb=8000"], [], SNAKEFILE)
    with pytest.raises(LlmdynError, match="--resources takes NAME=INTEGER"):
        resource_arguments([], ["gpu=one"], SNAKEFILE)


def test_the_cli_documents_and_passes_resource_overrides(monkeypatch):
    out = subprocess.run([sys.executable, "-m", "llmdyn", "workflow", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert "--set-resources RULE:NAME=VALUE" in out.stdout and "--resources" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "llmdyn", "workflow", "-n", "--set-resources",
                          "chapter=4"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "--set-resources takes RULE:NAME=VALUE" in bad.stderr
    started = []

    class Stop(Exception):
        pass

    real_popen = workflow.subprocess.Popen

    def popen(cmd, **kwargs):
        # the patch reaches every Popen (ctypes' ldconfig lookup too): stop at Snakemake's
        if not any("snakemake" in str(part) for part in cmd):
            return real_popen(cmd, **kwargs)
        started.append(cmd)
        raise Stop

    monkeypatch.setattr(workflow.subprocess, "Popen", popen)
    with pytest.raises(Stop):
        main(["workflow", "-n", "--set-resources", "chapter:mem_mb=1234",
              "chapter:cpus_per_task=2", "--resources", "gpu=1"])
    cmd = started[0]
    at = cmd.index("--set-resources")
    assert cmd[at:at + 5] == ["--set-resources", "chapter:mem_mb=1234", "chapter:cpus_per_task=2",
                              "--resources", "gpu=1"]


def _fake_slurm(tmp_path, monkeypatch, squeue_line: str) -> None:
    """squeue, scancel and sinfo stand-ins on PATH; scancel records its argument."""
    bins = tmp_path / "bin"
    bins.mkdir()
    scripts = {"squeue": f"echo '{squeue_line}'",
               "scancel": f"echo \"$1\" >> {tmp_path}/cancelled",
               "sinfo": "echo 'vm 2 19284'"}
    for name, body in scripts.items():
        (bins / name).write_text(f"#!/bin/sh\n{body}\n")
        (bins / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bins}{os.pathsep}{os.environ['PATH']}")


def test_a_job_pending_for_partitionconfig_is_cancelled_with_squeue_reason(tmp_path,
                                                                           monkeypatch):
    _fake_slurm(tmp_path, monkeypatch,
                "41|PENDING|PartitionConfig|4|16000M|cpu|rule_chapter_wildcards_05_depth_coupling")
    watch = PendingWatch(polls=2)
    watch.see("Job 0 has been submitted with SLURM jobid 41 (log: x/41.log).")
    watch.check()
    assert watch.stuck == []  # once could be a moment's state: twice in a row cancels
    watch.check()
    assert (tmp_path / "cancelled").read_text().split() == ["41"]
    message = watch.message()
    for part in ("SLURM job 41 (rule chapter 05_depth_coupling) can never start",
                 "squeue gives the reason PartitionConfig", "asked for 4 CPUs and 16000M",
                 "vm 2 CPUs 19284 MB", "--set-resources chapter:cpus_per_task=2`"):
        assert part in message, message


def test_waiting_reasons_are_left_alone(tmp_path, monkeypatch):
    _fake_slurm(tmp_path, monkeypatch, "42|PENDING|Resources|1|6000M|cpu|rule_measure_wildcards_m")
    watch = PendingWatch(polls=1)
    watch.see("submitted with SLURM jobid 42 (log")
    watch.check()
    assert watch.stuck == [] and not (tmp_path / "cancelled").exists()
    assert slurm.never_starts("QOSMaxCpuPerJobLimit") and not slurm.never_starts("Priority")


def test_a_request_sbatch_refuses_is_a_message():
    output = ("SLURM sbatch failed. The error message was 'sbatch: error: Memory specification "
              "can not be satisfied\nsbatch: error: Batch job submission failed'.\n")
    err = sbatch_refusal(output)
    assert err is not None and "Memory specification can not be satisfied" in str(err)
    assert "--set-resources RULE:mem_mb=N" in str(err)
    assert sbatch_refusal("Nothing to be done") is None


@pytest.mark.slow
@pytest.mark.skipif(SLURM_SKIP is not None, reason=f"no SLURM reachable: {SLURM_SKIP}")
def test_a_job_no_node_can_hold_fails_with_squeue_reason(tmp_path):
    # The documented command with a request above the node (64 CPUs) fails instead of pending.
    out = subprocess.run([*readme_slurm_command(), "--directory", str(tmp_path),
                          "--set-resources", "chapter:cpus_per_task=64"],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert out.returncode == 2, out.stdout[-3000:] + out.stderr[-3000:]
    assert "can never start: squeue gives the reason PartitionConfig" in out.stderr
    assert "--set-resources chapter:cpus_per_task=" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
@pytest.mark.skipif(SLURM_SKIP is not None, reason=f"no SLURM reachable: {SLURM_SKIP}")
def test_a_request_sbatch_refuses_fails_with_its_error(tmp_path):
    with pytest.raises(LlmdynError, match="SLURM refused a job at submission: .*Memory"):
        run_workflow(profile="slurm", chapters=["05_depth_coupling"], directory=tmp_path,
                     config={"chapter_params": "tests/smoke"},
                     set_resources=["chapter:mem_mb=10000000"])
