"""The book as a Snakemake workflow: what each chapter depends on, and `llmdyn workflow`.

``workflow/Snakefile`` holds the rules (train one suite run, measure one model, execute one
chapter, build the HTML); this module gives it each chapter's source files and runs Snakemake
with the local executor or a profile (``workflow/profiles/<name>``, e.g. ``slurm``), turning the
usual ways a run goes wrong into messages that say what to do.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from llmdyn import LlmdynError
from llmdyn.core.paths import REPO
from llmdyn.runner import sources
from llmdyn.runner.build import build_html, chapters, resolve_model, run_chapter, stage
from llmdyn.runner.config_checks import (
    INVOKED_FROM,
    check_measure_models,
    check_params_files,
    check_suite,
    stale_measurements,
)
from llmdyn.runner.records import write_record
from llmdyn.runner.refusals import planning_refusal
from llmdyn.runner.runlock import WorkflowLock, workflow_lock
from llmdyn.runner.signals import PARENT_DIED_ENV, forwarding_signals, stoppable_child
from llmdyn.runner.slurm import PendingWatch, check_slurm, resource_arguments, sbatch_refusal

SNAKEFILE = REPO / "workflow" / "Snakefile"
PROFILES = REPO / "workflow" / "profiles"
CONFIG = REPO / "workflow" / "config.yaml"
CONFIG_SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def chapter_sources(name: str, root: Path = REPO) -> list[Path]:
    """Every source file chapter ``name``'s result depends on: notebook, library files, data.

    Library files are found by reading the notebook's ``llmdyn`` imports and the attributes it
    uses of imported packages, then following the imports between modules (see
    :mod:`llmdyn.runner.sources`), so editing ``plots/depth.py`` reruns the chapters that draw with
    it and no other. A file under ``data/`` counts where one of those modules names it.
    """
    notebook = root / "notebooks" / f"{name}.ipynb"
    check_chapters([name], root)
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    files = sources.library_closure(code, root / "lib" / "llmdyn")
    return [notebook, *files, *sources.named_data(files, root / "data")]


def notebook_parameter(name: str, parameter: str, root: Path = REPO, default: Any = None) -> Any:
    """The default of ``parameter`` in chapter ``name``'s ``parameters`` cell (else ``default``)."""
    path = root / "notebooks" / f"{name}.ipynb"
    st = path.stat()
    return _parameters_cell(path, (st.st_size, st.st_mtime_ns)).get(parameter, default)


@functools.lru_cache(maxsize=64)
def _parameters_cell(path: Path, stamp: tuple[int, int]) -> dict[str, Any]:
    # read once per notebook version: the workflow asks in every scheduling round
    cells = json.loads(path.read_text())["cells"]
    found: dict[str, Any] = {}
    for cell in cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            for node in ast.parse("".join(cell["source"])).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    name = getattr(node.targets[0], "id", None)
                    if name is not None:
                        with contextlib.suppress(ValueError, SyntaxError):
                            found.setdefault(name, ast.literal_eval(node.value))
    return found


def check_chapters(names: Sequence[str], root: Path = REPO) -> list[str]:
    """Return ``names`` if every one is a chapter of ``_toc.yml``; else raise naming the others."""
    known = chapters(root)
    bad = [n for n in names if n not in known]
    if bad:
        raise LlmdynError(f"chapter {', '.join(map(repr, bad))} is not in _toc.yml; chapters: "
                          f"{', '.join(known)}")
    return list(names)


def profile_dir(profile: str) -> Path:
    """``workflow/profiles/<profile>``, or an error listing the profiles there are."""
    path = PROFILES / profile
    if not (path / "config.yaml").exists():
        known = sorted(p.name for p in PROFILES.iterdir() if (p / "config.yaml").exists())
        raise LlmdynError(f"unknown profile {profile!r}; profiles: {', '.join(known) or 'none'} "
                          f"(each is a directory with config.yaml under {PROFILES}). Leave "
                          "PROFILE empty to run locally.")
    return path


def _typed(value: Any) -> Any:
    """A config value with the scalars Snakemake's ``--config`` left as text typed again.

    Snakemake reads ``--config measure={"k": 4}`` with YAML's base loader, which keeps every
    nested scalar a string ("4"); ``key=`` gives None. Strings that YAML reads as a number,
    a bool or null become that, so the schema sees what the user typed.
    """
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, str) and value.strip():
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        return parsed if parsed is None or isinstance(parsed, bool | int | float) else value
    return value


def merged_config(overrides: dict[str, Any] | None = None,
                  defaults: Path = CONFIG) -> dict[str, Any]:
    """``workflow/config.yaml`` updated by ``overrides`` (nested dicts merged, like Snakemake)."""
    def merge(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key, value in new.items():
            out[key] = (merge(out[key], value) if isinstance(value, dict)
                        and isinstance(out.get(key), dict) else value)
        return out

    return merge(yaml.safe_load(defaults.read_text()) or {}, dict(overrides or {}))


def check_config(config: dict[str, Any], root: Path = REPO,
                 base: Path | None = None) -> dict[str, Any]:
    """The workflow's config, checked once against ``workflow/schemas/config.schema.yaml``.

    The Snakefile calls this on the config Snakemake merged, and :func:`run_workflow` on the
    config it is about to pass, so a bad value stops before any job: ``measure_models`` must
    be a list (a bare name would be split into one job per character), ``chapter_params`` an
    existing directory (a typo would run full-size chapters), a misspelt key is refused.

    Returns:
        The config with Snakemake's text scalars typed (see :func:`_typed`) and the schema's
        defaults filled in.

    Raises:
        LlmdynError: naming the key, the value and what the schema expects.
    """
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    config = _typed(dict(config))
    if config.get("chapter_params") is None:  # `chapter_params=` on the command line
        config["chapter_params"] = ""
    try:
        validate(config, str(CONFIG_SCHEMA))
    except WorkflowError as err:
        cause = err.__context__  # Snakemake raises while handling jsonschema's ValidationError
        if not hasattr(cause, "absolute_path"):
            raise LlmdynError(f"workflow config: {err}") from None
        key = ".".join(map(str, cause.absolute_path)) or "(top level)"
        hint = ""
        if cause.validator == "type" and "array" in str(cause.validator_value):
            hint = (f"; give a list, e.g. --config '{key}=[{json.dumps(str(cause.instance))}]'"
                    if isinstance(cause.instance, str) and "." not in key else "; give a list")
        # the schema's keyword is ours to name; the sentence before it is jsonschema's
        raise LlmdynError(f"workflow config {key}: {cause.message}{hint} (the schema's "
                          f"{cause.validator!r} rule; the keys and their types: "
                          f"{CONFIG_SCHEMA.relative_to(REPO)})") from None
    params = config["chapter_params"]
    if params:
        path = Path(params) if Path(params).is_absolute() else Path(root) / params
        if not path.is_dir():
            raise LlmdynError(f"workflow config chapter_params: {params!r} is not a directory "
                              f"({path} does not exist); give a directory of <chapter>.yaml "
                              "notebook parameters, e.g. tests/smoke, or '' for none")
        check_params_files(path, root, base)
    check_measure_models(config)
    check_suite(config.get("suite"))
    return config


def snakemake_command(*, model: str | None = None, profile: str | None = None,
                      targets: Sequence[str] = (), cores: int | None = None,
                      directory: Path | None = None, config: dict[str, Any] | None = None,
                      dry_run: bool = False, extra: Sequence[str] = (),
                      snakefile: Path = SNAKEFILE) -> list[str]:
    """The Snakemake command line for the book's workflow (see :func:`run_workflow`)."""
    if cores is not None and (not isinstance(cores, int) or isinstance(cores, bool)
                              or cores < 1):
        raise LlmdynError(f"cores (--cores) must be an integer >= 1, got {cores!r}; leave it out "
                          "to use every core of this machine")
    # --rerun-incomplete: llmdyn's run lock (llmdyn.runner.runlock) guarantees that no other run
    # is writing here, so an incomplete output was left by an interrupted run: redo it.
    # --scheduler greedy: the default ILP scheduler builds and solves a linear program in
    # every scheduling round; with priorities set, greedy starts the same jobs first.
    # --max-jobs-per-timespan: the default rate limit, 100/1s, runs a scheduling round every
    # second while jobs run (the Snakefile cancels the last one's timer); jobs take 10 s or more.
    cmd = [sys.executable, "-m", "snakemake", *targets, "--snakefile", str(snakefile),
           "--cores", str(cores or os.cpu_count() or 1), "--printshellcmds",
           "--rerun-incomplete", "--scheduler", "greedy", "--max-jobs-per-timespan", "100/10s",
           "--workflow-profile", str(profile_dir(profile)) if profile else "none"]
    if directory is not None:
        cmd += ["--directory", str(directory)]
    settings = dict(config or {})
    if model:
        settings["model"] = model
    if settings:
        cmd += ["--config", *(f"{k}={json.dumps(v)}" for k, v in settings.items())]
    if dry_run:
        cmd += ["--dry-run"]
    return [*cmd, *extra]


_LOG = re.compile(r"(\S+\.log)\b")


def failed_logs(output: str, directory: Path) -> list[Path]:
    """Log files named in Snakemake's error report (``Error in rule …`` blocks, SLURM logs)."""
    logs: list[Path] = []
    in_error = False
    for line in output.splitlines():
        if line.startswith("Error in rule") or "failed" in line.lower():
            in_error = True
        if in_error:
            for match in _LOG.findall(line):
                path = (directory / match.strip("'\",()")).resolve()
                if path.exists() and path not in logs:
                    logs.append(path)
    return logs


def run_workflow(*, model: str | None = None, profile: str | None = None,
                 chapters: Sequence[str] = (), targets: Sequence[str] = (),
                 cores: int | None = None, directory: Path | None = None,
                 config: dict[str, Any] | None = None, dry_run: bool = False,
                 set_resources: Sequence[str] = (), resources: Sequence[str] = (),
                 extra: Sequence[str] = ()) -> str:
    """Run the book's workflow with Snakemake and return its output.

    Args:
        model: the model every chapter runs on (the ``model`` config value).
        profile: None for the local executor, or a profile under ``workflow/profiles``.
        chapters: only these chapters (and what they need), not the HTML.
        targets: other Snakemake targets (files or rule names), e.g. ``measure_all``.
        cores: local cores, at least 1 (default: all of this machine's).
        directory: where outputs go (default the repository); it must exist.
        config: more config values (see ``workflow/config.yaml``).
        dry_run: list the jobs without running them.
        set_resources: ``RULE:NAME=VALUE`` requests over the profile's (Snakemake's
            ``--set-resources``), e.g. ``chapter:mem_mb=8000``.
        resources: ``NAME=INTEGER`` limits of all running jobs together (``--resources``).
        extra: further Snakemake arguments.

    With a SLURM profile, a job that SLURM can never start (``squeue`` reason such as
    ``PartitionConfig``: it asks more than a node has) is cancelled and the run fails with
    squeue's reason, the nodes' sizes and the ``set_resources`` that would fit
    (:class:`llmdyn.runner.slurm.PendingWatch`), instead of waiting forever.

    A SIGTERM, SIGHUP or SIGINT (Ctrl-C) sent to this process stops Snakemake and its local
    jobs as Ctrl-C does, so no Snakemake is left running on its own.

    Raises:
        LlmdynError: unknown profile or chapter, a config the schema refuses (see
            :func:`check_config`), cores < 1, a missing ``directory``, SLURM unreachable, or
            a failed job (the message holds the failed jobs' log paths and the end of each
            log).
    """
    model = resolve_model(model) if model else model  # a path, not one under --directory
    checked = _check_run(model, profile, chapters, directory, config, dry_run)
    extra = [*resource_arguments(set_resources, resources, SNAKEFILE), *extra]
    stale = stale_measurements(checked, Path(directory or REPO))
    if stale:  # measured with other parameters (another directory's run): measure them again
        extra = ["--forcerun", *stale, *extra]
    targets = [*(f"book/executed/{c}.ipynb" for c in chapters), *targets]
    if chapters:  # chapters alone: 05 and 11 then do not pull in chapter 04 (see the Snakefile)
        config = {**(config or {}), "only_chapters": list(chapters)}
    cmd = snakemake_command(model=model, profile=profile, targets=targets, cores=cores,
                            directory=directory, config=config, dry_run=dry_run, extra=extra)
    where = Path(directory or REPO)
    with (contextlib.nullcontext() if dry_run else workflow_lock(where)) as lock:
        output, returncode, stuck = _run_snakemake(cmd, where, lock,
                                                   watch=_on_slurm(profile) and not dry_run)
    if stuck:
        raise LlmdynError(stuck)
    if returncode != 0:
        raise _failure(output, returncode, Path(directory or REPO))
    return output


def _run_snakemake(cmd: list[str], cwd: Path, lock: WorkflowLock | None,
                   watch: bool) -> tuple[str, int, str]:
    """Run ``cmd``, echoing its output.

    Snakemake inherits the run ``lock``'s file (so the lock lasts while it lives) and is
    stopped with its jobs if this process dies, even by SIGKILL, and even when this process was
    started with SIGINT ignored (see :func:`llmdyn.runner.signals.stoppable_child`).

    Returns its output, its exit status, and the SLURM jobs that can never start, in words
    ('' if none; followed only when ``watch``).
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=cwd, start_new_session=True, preexec_fn=stoppable_child(),
                            env={**os.environ, PARENT_DIED_ENV: "1", INVOKED_FROM: os.getcwd()},
                            pass_fds=(lock.fd,) if lock else ())
    if lock:
        lock.record(snakemake_pid=proc.pid, directory=str(Path(cwd).resolve()))
    lines: list[str] = []
    assert proc.stdout is not None
    pending = PendingWatch()
    with forwarding_signals(proc) as received, (pending if watch else contextlib.nullcontext()):
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line)
            pending.see(line)
        proc.wait()
    if received:
        raise LlmdynError(f"stopped by {received[0].name}: Snakemake and its running jobs were "
                          f"stopped too (snakemake exit {proc.returncode}); the outputs of the "
                          "jobs that finished are kept, and the same command continues from "
                          "them (what was cut off is run again)")
    return "".join(lines), proc.returncode, pending.message()


def _on_slurm(profile: str | None) -> bool:
    """Whether ``profile`` sends jobs to SLURM (its ``executor``)."""
    if not profile:
        return False
    settings = yaml.safe_load((profile_dir(profile) / "config.yaml").read_text()) or {}
    return settings.get("executor") == "slurm"


def _check_run(model: str | None, profile: str | None, chapters: Sequence[str],
               directory: Path | None, config: dict[str, Any] | None,
               dry_run: bool) -> dict[str, Any]:
    """Refuse a run that cannot start: chapters, directory, config, profile, SLURM.

    Returns the checked config (:func:`check_config`).
    """
    check_chapters(chapters)
    if directory is not None and not Path(directory).is_dir():
        what = "is a file" if Path(directory).exists() else "does not exist"
        raise LlmdynError(f"directory (--directory) {directory} {what}; create it first "
                          f"(mkdir -p {directory}) or leave it out to write into the repository")
    checked = check_config(merged_config({**(config or {}), **({"model": model} if model
                                                                 else {})}), base=Path.cwd())
    if profile:
        profile_dir(profile)
        if _on_slurm(profile) and not dry_run:
            check_slurm()
    return checked


def _failure(output: str, returncode: int, directory: Path) -> LlmdynError:
    """The failed run as one message: the failed jobs' log paths and the end of each log."""
    refused = sbatch_refusal(output) or planning_refusal(output)
    if refused:
        return refused
    logs = failed_logs(output, directory)
    tails = "".join(f"\n--- {p} (last lines) ---\n" + "".join(
        p.read_text(errors="replace").splitlines(True)[-25:]) for p in logs)
    where = (f"failed job logs: {', '.join(map(str, logs))}" if logs else
             "see Snakemake's report above")
    return LlmdynError(f"the workflow failed (snakemake exit {returncode}); {where}; "
                       f"the outputs of the jobs that finished are kept.{tails}")


def chapter_job(name: str, parameters: dict[str, Any], here: Path) -> None:
    """The workflow's chapter job: run chapter ``name`` in ``here``, then write its record.

    One chapter per job, so no preloaded fork to share (``fork=False``); the record comes
    after the notebook, as it is what the chapters that wait on this one read.
    """
    run_chapter(name, here / "book" / "executed", parameters, cwd=here, fork=False)
    write_record(name, parameters, here)


def html_job(here: Path) -> None:
    """The workflow's html job: the HTML book of ``here``, with the repository's pages."""
    build_html(here if here.resolve() == REPO else stage(here))
