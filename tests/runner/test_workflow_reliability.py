"""What `llmdyn workflow` refuses, locks and
digests, checked without running a chapter (the interruptions are in test_workflow_resume.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.runner import lab, workflow
from llmdyn.runner.digest import MISSING, file_digest, files_digest
from llmdyn.runner.runlock import LOCK_NAME, workflow_lock
from llmdyn.runner.targets import check_targets, snakefile_targets
from llmdyn.runner.workflow import check_config, merged_config, run_workflow


def test_a_flag_after_double_dash_or_an_unknown_target_is_refused(capsys):
    # `llmdyn workflow -- --delete-all-output` passed anything to Snakemake.
    assert check_targets(["measure_all", "book/executed/05_depth_coupling.ipynb",
                          "results/models/smollm2-135m.json"]) == [
        "measure_all", "book/executed/05_depth_coupling.ipynb",
        "results/models/smollm2-135m.json"]
    with pytest.raises(LlmdynError, match="'--delete-all-output' is a flag, not a target.*"
                                          "--keep-going, --rerun"):
        check_targets(["--delete-all-output"])
    with pytest.raises(LlmdynError, match="'chapter' is neither a rule nor a file.*measure_all"):
        check_targets(["chapter"])  # a rule with wildcards cannot be a target
    assert main(["workflow", "-n", "--", "--delete-all-output"]) == 2
    assert "is a flag, not a target" in capsys.readouterr().err
    rules, _ = snakefile_targets()
    assert {"all", "html", "measure_all"} <= set(rules) and "train_run" not in rules


def test_an_empty_only_is_refused(capsys):
    # `llmdyn workflow --only` with no names planned the whole book (77 jobs).
    with pytest.raises(SystemExit) as stop:
        main(["workflow", "--only", "-n"])
    assert stop.value.code == 2 and "--only: expected at least one" in capsys.readouterr().err


def test_a_misspelt_chapter_params_file_is_refused_with_the_closest_name(tmp_path):
    # 05_depth_couplng.yaml was ignored and chapter 05 ran at full size.
    (tmp_path / "05_depth_couplng.yaml").write_text("n_prompts: 2\n")
    with pytest.raises(LlmdynError, match="05_depth_couplng.yaml names no chapter.*did you "
                                          "mean 05_depth_coupling.yaml"):
        check_config(merged_config({"chapter_params": str(tmp_path)}))


def test_a_relative_model_path_is_made_absolute_before_the_workflow_starts(tmp_path,
                                                                          monkeypatch):
    # `--model m/good --directory D` was resolved under D and sent to the hub.
    (tmp_path / "m" / "good").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    seen = []
    monkeypatch.setattr(workflow, "_run_snakemake",
                        lambda cmd, *a, **k: (seen.append(cmd), ("", 0, ""))[1])
    (tmp_path / "D").mkdir()
    run_workflow(model="m/good", directory=tmp_path / "D", dry_run=True)
    assert f'model="{tmp_path / "m" / "good"}"' in seen[0]
    assert "--rerun-incomplete" in seen[0]  # an interrupted run's outputs are redone
    with pytest.raises(LlmdynError, match="m/typo.*does not exist"):
        run_workflow(model="m/typo", directory=tmp_path / "D", dry_run=True)


def test_lab_starts_on_a_free_port_it_prints_and_never_moves(tmp_path, monkeypatch, capsys):
    # On a busy port Jupyter moved to the next one and llmdyn printed the busy one's tunnel.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert lab.free_port("127.0.0.1", port) > port
        started = []
        monkeypatch.setattr(os, "execv", lambda path, argv: started.append(argv))
        pytest.importorskip("jupyterlab")
        assert main(["lab", "--port", str(port), "--root", str(tmp_path)]) == 0
    argv = started[0]
    chosen = int(next(a for a in argv if a.startswith("--ServerApp.port=")).split("=")[1])
    assert chosen != port and "--ServerApp.port_retries=0" in argv
    out = capsys.readouterr().out
    assert f"at port {chosen} (port {port} is in use)" in out
    assert f"ssh -L {chosen}:127.0.0.1:{chosen}" in out


def test_a_live_run_is_refused_by_pid_and_a_stale_snakemake_lock_is_cleared(tmp_path):
    hold = ("import sys, time; from pathlib import Path; "
            "from llmdyn.runner.runlock import workflow_lock\n"
            "with workflow_lock(Path(sys.argv[1])):\n    print('held', flush=True); "
            "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(LlmdynError, match=f"another llmdyn workflow is running in .*PID "
                                              f"{proc.pid} on host {socket.gethostname()}.*"
                                              rf"stop it \(kill {proc.pid}\)"):
            with workflow_lock(tmp_path):
                pass
    finally:
        proc.kill()  # as kill -9 or a power loss would: the kernel drops the flock
        proc.wait()
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("results/x\n")  # what a killed Snakemake leaves
    with workflow_lock(tmp_path) as held:
        assert not list(locks.iterdir())  # cleared: its owner is gone
        assert f'"pid": {os.getpid()}' in (tmp_path / ".snakemake" / LOCK_NAME).read_text()
        assert held.fd >= 0


def test_the_digest_follows_content_not_file_times(tmp_path):
    # An edit whose mtime is older than the output (cp -p, rsync -t, clock skew) was missed.
    a, b = tmp_path / "a.py", tmp_path / "b.json"
    a.write_text("x = 1\n")
    b.write_text("{}")
    before = files_digest([a, b], tmp_path)
    assert files_digest([b, a, a], tmp_path) == before  # order and repeats do not matter
    stat = a.stat()
    a.write_text("x = 2\n")
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**12))  # older than before
    assert files_digest([a, b], tmp_path) != before
    a.write_text("x = 1\n")
    os.utime(a, ns=(stat.st_atime_ns, time.time_ns()))  # only the time changed
    assert files_digest([a, b], tmp_path) == before
    assert file_digest(tmp_path / "none") == MISSING


def test_every_rule_writes_a_benchmark_file_and_chapters_wait_for_conversion():
    from llmdyn.runner.workflow import SNAKEFILE

    text = SNAKEFILE.read_text()
    blocks = text.split("\nrule ")[1:]
    for block in blocks:
        name = block.split(":")[0]
        if name in ("all", "measure_all"):
            continue  # no job of their own
        if name == "sources":  # an `echo` of the digest: a benchmark would cost more than it
            assert "benchmark:" not in block and 'shell: "echo {params.digest:q}' in block
            continue
        assert f'benchmark: "logs/benchmarks/{name}/' in block, name
    assert 'digest=sources_digest' in text and "convert_stamp(spec)" in text


def test_a_convert_stamp_whose_conversion_is_gone_is_removed(tmp_path):
    from llmdyn.models.convert import MANIFEST
    from llmdyn.runner.conversion import convert_stamp_valid

    stamp = tmp_path / "results" / "models" / "smollm2-135m.json"
    stamp.parent.mkdir(parents=True)
    (tmp_path / "conv").mkdir()
    stamp.write_text('{"directory": "%s"}' % (tmp_path / "conv"))
    assert not convert_stamp_valid(stamp) and stamp.exists()
    (tmp_path / "conv" / MANIFEST).write_text("{}")
    assert convert_stamp_valid(stamp)
    (tmp_path / "conv" / MANIFEST).unlink()  # the cache was emptied
    assert not convert_stamp_valid(stamp, remove=True) and not stamp.exists()


@pytest.mark.slow
def test_the_convert_job_converts_a_packaged_model_once_and_writes_its_stamp(tmp_path):
    # Conversion is a job of its own; chapters 04 and 07 both converted (or
    # waited on the same conversion) in their first cell.
    from llmdyn.models.convert import MANIFEST

    target = "results/models/smollm2-135m.json"
    out = run_workflow(targets=[target], directory=tmp_path, cores=1)
    assert "Convert packaged model smollm2-135m" in out
    record = json.loads((tmp_path / target).read_text())
    assert record["model"] == "smollm2-135m" and (Path(record["directory"]) / MANIFEST).is_file()
    assert (tmp_path / "logs/benchmarks/convert/smollm2-135m.tsv").read_text().startswith("s\t")
    assert "Nothing to be done" in run_workflow(targets=[target], directory=tmp_path, cores=1)

