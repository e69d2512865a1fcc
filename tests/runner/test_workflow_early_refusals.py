"""`llmdyn workflow` refuses a bad resource value or suite in one line, before Snakemake starts."""

from __future__ import annotations

import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.runner import workflow
from llmdyn.runner.slurm import check_resource_number


@pytest.fixture
def no_snakemake(monkeypatch):
    """Fail the test if Snakemake would start."""
    def never(*args, **kwargs):
        raise AssertionError("Snakemake started before the refusal")

    monkeypatch.setattr(workflow, "_run_snakemake", never)


@pytest.mark.parametrize(("argv", "said"), [
    (["--set-resources", "chapter:mem_mb=abc"],
     "--set-resources 'chapter:mem_mb=abc': mem_mb takes whole MB, e.g. chapter:mem_mb=8000"),
    (["--set-resources", "chapter:mem_mb=os"], "'chapter:mem_mb=os': mem_mb takes whole MB"),
    (["--set-resources", "measure:runtime=soon"], "runtime takes whole minutes or a duration"),
    (["--config", "suite=nonexistent"],
     "workflow config suite: unknown suite 'nonexistent'; suites: default"),
    (["--config", "suite=tinny"], "did you mean suite=tiny?"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_refused_in_one_line_before_snakemake(argv, said, no_snakemake, capsys):
    assert main(["workflow", "--model", "tiny-llama", "--only", "05_depth_coupling", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llmdyn workflow: error: ") and said in err and err.count("\n") == 1, err


@pytest.mark.parametrize(("name", "value"), [("mem_mb", "8000"), ("mem", "8GB"),
                                             ("runtime", "2h"), ("cpus_per_task", "2"),
                                             ("slurm_partition", "gpu")])
def test_numbers_sizes_durations_and_words_where_they_belong_pass(name, value):
    check_resource_number(f"chapter:{name}={value}", name, value)


@pytest.mark.parametrize("value", ["8GB", "1.5", "-3", "abc"])
def test_mem_mb_takes_a_whole_number(value):
    with pytest.raises(LlmdynError, match="mem_mb takes whole MB"):
        check_resource_number(f"chapter:mem_mb={value}", "mem_mb", value)
