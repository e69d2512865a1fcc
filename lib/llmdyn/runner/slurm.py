"""The workflow on SLURM: is a controller there, resource overrides, and jobs that never start.

A job whose request no node of its partition can hold does not fail in SLURM: it pends, with a
reason such as ``PartitionConfig``, and Snakemake waits for it forever. :class:`PendingWatch`
follows the jobs of one run with ``squeue``, cancels a job that pends for a reason that cannot
clear by waiting, and words what ``squeue`` said with the nodes' sizes (``sinfo``) and the
``--set-resources`` that would fit.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from llmdyn import LlmdynError

# Pending reasons that waiting cannot clear (squeue(1), JOB REASON CODES); `Resources` and
# `Priority` clear when other jobs end, so they are not here.
NEVER_STARTS = {
    "PartitionConfig": "it asks for more CPUs, memory or GPUs than a node of its partition has",
    "PartitionNodeLimit": "it asks for more nodes than its partition allows",
    "PartitionTimeLimit": "its time limit (runtime) is above its partition's",
    "BadConstraints": "its constraints cannot be met by any node",
    "DependencyNeverSatisfied": "a job it depends on failed",
    "InvalidAccount": "its account is not valid (set slurm-account in the profile)",
    "InvalidQOS": "its QOS is not valid",
}
PER_JOB_LIMIT = re.compile(r"^(QOS|Assoc)\w*PerJob\w*$")  # e.g. QOSMaxCpuPerJobLimit
SUBMITTED = re.compile(r"submitted with SLURM jobid (\d+)")
_RESOURCE = re.compile(r"^([A-Za-z_]\w*):([A-Za-z_]\w*)=(\S+)$")
_LIMIT = re.compile(r"^([A-Za-z_]\w*)=(\d+)$")
# A resource value that may reach a shell or Python: the SLURM plugin pastes `slurm_extra` (and
# others) into its sbatch line, run by a shell, and Snakemake eval()s a value that is not a
# number. An integer or a word of these characters is neither code nor shell syntax (no
# parentheses, quotes, $, ;, `, spaces or newlines), e.g. 8000, gpu, --qos=high, 2:00:00.
SAFE_RESOURCE = re.compile(r"^[A-Za-z0-9_.,:@%+/=-]+$")


def check_slurm(timeout: float = 10) -> None:
    """Raise a message that says what to do if no SLURM controller answers ``sinfo``."""
    how = ("Start a one-node SLURM on this machine as root with `tools/slurm_local.sh start`, "
           "or run locally: `make book` without PROFILE=slurm.")
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        raise LlmdynError(f"no SLURM client here (sinfo/sbatch not found). {how}")
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LlmdynError(f"SLURM did not answer sinfo within {timeout:.0f} s. {how}") from None
    states = out.stdout.split()
    if out.returncode != 0 or not any(s.rstrip("*") in ("idle", "mixed", "allocated")
                                      for s in states):
        raise LlmdynError(f"SLURM is unreachable or has no usable node (sinfo said: "
                          f"{(out.stderr or out.stdout).strip()[:300]!r}). {how}")


def resource_arguments(set_resources: Sequence[str], resources: Sequence[str],
                       snakefile: Path) -> list[str]:
    """Snakemake's ``--set-resources`` and ``--resources`` arguments, checked.

    Args:
        set_resources: ``RULE:NAME=VALUE`` items (one rule's request, e.g.
            ``chapter:mem_mb=8000``, ``chapter:cpus_per_task=2``, ``measure:slurm_partition=gpu``).
        resources: ``NAME=INTEGER`` items: what all running jobs may use together (local runs).
        snakefile: the workflow, whose ``rule`` names ``RULE`` must be one of.

    Raises:
        LlmdynError: an item of another form, or a rule the workflow does not have (Snakemake
            would ignore it and the job would keep its old request).
    """
    rules = re.findall(r"^rule (\w+):", snakefile.read_text(), flags=re.MULTILINE)
    for item in set_resources:
        match = _RESOURCE.match(item)
        if not match:
            raise LlmdynError(f"--set-resources takes RULE:NAME=VALUE, e.g. chapter:mem_mb=8000, "
                              f"got {item!r}")
        if match.group(1) not in rules:
            raise LlmdynError(f"--set-resources {item!r}: the workflow has no rule "
                              f"{match.group(1)!r}; rules: {', '.join(rules)}")
        check_resource_value(match.group(1), match.group(2), match.group(3))
        check_resource_number(item, match.group(2), match.group(3))
    for item in resources:
        if not _LIMIT.match(item):
            raise LlmdynError(f"--resources takes NAME=INTEGER, e.g. gpu=1, got {item!r}")
    return ([*(["--set-resources", *set_resources] if set_resources else []),
             *(["--resources", *resources] if resources else [])])


# Snakemake's resources that must come to a number; mem, disk and runtime may be sizes and
# durations ("8GB", "2h"), which Snakemake converts when it parses them.
NUMBER_RESOURCES = frozenset({"mem", "mem_mb", "mem_mib", "disk", "disk_mb", "disk_mib",
                              "runtime", "cpus_per_task", "threads", "nodes", "tasks", "gpu"})


def check_resource_number(item: str, name: str, value: str) -> None:
    """Refuse a numeric resource whose value is a word, before Snakemake starts.

    Snakemake evaluates ``chapter:mem_mb=abc`` (or ``=os``, a module) only when it plans the
    job, and stops then with a ``ResourceConversionError`` report.

    Raises:
        LlmdynError: naming the item and what the resource takes.
    """
    if name not in NUMBER_RESOURCES:
        return
    # Snakemake's parser (imported here: a heavy import only --set-resources needs) turns a
    # number, a size or a duration into a constant, and anything else into an expression
    from snakemake.resources import Resources

    try:
        parsed = Resources.parse([f"{name}={value}"], allow_expressions=True)
        constant = not any(res.is_evaluable() for res in parsed._data.values())
    except Exception:  # noqa: BLE001 - any refusal of Snakemake's parser is the same refusal
        constant = False
    if not constant:
        kind = name.split("_")[0]
        takes = ({"mem": "a size, e.g. chapter:mem=8GB", "disk": "a size, e.g. chapter:disk=8GB",
                  "runtime": "whole minutes or a duration, e.g. chapter:runtime=2h"}.get(name)
                 or (f"whole MB, e.g. chapter:{name}=8000 (or a size: chapter:{kind}=8GB)"
                     if kind in ("mem", "disk") else f"a whole number, e.g. chapter:{name}=2"))
        raise LlmdynError(f"--set-resources {item!r}: {name} takes {takes}")


def check_resource_value(rule: str, name: str, value: object) -> None:
    """Refuse a resource value that could run code: anything but an integer or a plain word.

    Raises:
        LlmdynError: naming the rule, the resource and the value, and what may be given.
    """
    if isinstance(value, bool) or value is None or isinstance(value, int | float):
        return
    if not (isinstance(value, str) and SAFE_RESOURCE.match(value)):
        raise LlmdynError(
            f"resource {rule}:{name}={value!r} is refused: a resource value reaches the SLURM "
            "submission's shell line and Snakemake's eval(), so it must be an integer or a "
            "word of letters, digits and _.,:@%+/=- (e.g. chapter:slurm_extra=--qos=high); "
            "no spaces, quotes, $, ;, `, parentheses or newlines")


def check_resource_settings(settings: object) -> None:
    """Check every resource of a Snakemake run with :func:`check_resource_value`.

    That is ``--set-resources``, a profile's ``set-resources`` and ``default-resources``.
    Called by the Snakefile, so a plain ``snakemake --set-resources ...`` is checked as
    ``llmdyn workflow`` is. ``settings`` is Snakemake's ``workflow.resource_settings``.
    """
    def raw(resource: object) -> object:
        return getattr(resource, "raw", resource)  # Snakemake's Resource keeps what was typed

    for rule, values in dict(getattr(settings, "overwrite_resources", None) or {}).items():
        for name in values:
            check_resource_value(rule, name, raw(values[name]))
    defaults = getattr(settings, "default_resources", None)
    for name in (defaults or {}):
        check_resource_value("default", name, raw(defaults[name]))


@dataclass(frozen=True)
class Stuck:
    """A job SLURM will never start, as ``squeue`` described it."""

    jobid: str
    rule: str  # the workflow rule, e.g. "chapter"
    wildcards: str  # e.g. "05_depth_coupling"
    reason: str  # squeue's %r, e.g. "PartitionConfig"
    cpus: int  # CPUs it asked for
    memory: str  # memory it asked for (squeue's %m, e.g. "16000M")
    partition: str


def never_starts(reason: str) -> bool:
    """Whether a pending job with this ``squeue`` reason can never start by waiting."""
    return reason in NEVER_STARTS or bool(PER_JOB_LIMIT.match(reason))


def _rule_of(comment: str) -> tuple[str, str]:
    """Rule and wildcards from the comment the SLURM plugin gives each job."""
    match = re.match(r"^rule_(.+?)(?:_wildcards_(.*))?$", comment)
    return (match.group(1), match.group(2) or "") if match else (comment, "")


def _megabytes(memory: str) -> float:
    """Memory as squeue writes it (``16000M``, ``2G``) in MB."""
    match = re.match(r"^([\d.]+)([KMGT]?)", memory)
    if not match:
        return 0.0
    return float(match.group(1)) * {"K": 1 / 1024, "": 1, "M": 1, "G": 1024,
                                     "T": 1024 ** 2}[match.group(2)]


def nodes(partition: str) -> list[tuple[str, int, int]]:
    """``(node, CPUs, memory MB)`` of each node of ``partition`` (empty if sinfo fails)."""
    out = subprocess.run(["sinfo", "-h", "-N", "-p", partition, "-o", "%N %c %m"],
                         capture_output=True, text=True, timeout=30)
    rows = [line.split() for line in out.stdout.splitlines()]
    return [(r[0], int(r[1]), int(r[2].rstrip("+"))) for r in rows
            if len(r) == 3 and r[1].isdigit() and r[2].rstrip("+").isdigit()]


def explain(job: Stuck) -> str:
    """One stuck job in words: squeue's reason, the request, the nodes, what would fit."""
    why = NEVER_STARTS.get(job.reason, "it is above a per-job limit of its account or QOS")
    sizes = nodes(job.partition)
    fits = []
    if sizes:
        cpus, mem = max(n[1] for n in sizes), max(n[2] for n in sizes)
        if job.cpus > cpus:
            fits.append(f"{job.rule}:cpus_per_task={cpus}")
        if _megabytes(job.memory) > mem:
            fits.append(f"{job.rule}:mem_mb={mem}")
    have = ", ".join(f"{n} {c} CPUs {m} MB" for n, c, m in sizes) or "unknown (sinfo failed)"
    ask = (f"--set-resources {' '.join(fits)}" if fits else
           f"--set-resources {job.rule}:NAME=VALUE with a smaller request")
    return (f"SLURM job {job.jobid} (rule {job.rule} {job.wildcards}) can never start: squeue "
            f"gives the reason {job.reason} ({why}). It asked for {job.cpus} CPUs and "
            f"{job.memory} memory on partition {job.partition}, whose nodes have: {have}. "
            f"It was cancelled. Ask for less with `llmdyn workflow ... {ask}` (or edit "
            "workflow/profiles/slurm/config.yaml).")


class PendingWatch:
    """Follow one run's SLURM jobs; cancel those that can never start and keep why.

    Feed it Snakemake's output lines (:meth:`see`); while the ``with`` block runs, a thread asks
    ``squeue`` about the submitted jobs every ``interval`` seconds. A job pending for a reason
    of :func:`never_starts` at ``polls`` checks in a row is cancelled with ``scancel`` (so
    Snakemake sees it fail and stops) and kept in :attr:`stuck`.
    """

    def __init__(self, interval: float = 5.0, polls: int = 2) -> None:
        self.interval, self.polls = interval, polls
        self.stuck: list[Stuck] = []
        self._ids: list[str] = []
        self._seen: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def see(self, line: str) -> None:
        """Note the SLURM job id of a submission line of Snakemake's output."""
        match = SUBMITTED.search(line)
        if match:
            self._ids.append(match.group(1))

    def __enter__(self) -> PendingWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except (subprocess.SubprocessError, OSError):
                pass  # squeue slow or gone for a moment: Snakemake's own checks go on; next poll

    def check(self) -> None:
        """Ask squeue once about the jobs seen so far; cancel those that can never start."""
        ids = [i for i in self._ids if i not in {s.jobid for s in self.stuck}]
        if not ids:
            return
        out = subprocess.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i|%T|%r|%C|%m|%P|%k"],
                             capture_output=True, text=True, timeout=30)
        for line in out.stdout.splitlines():
            fields = line.split("|")
            if len(fields) != 7 or fields[1] != "PENDING" or not never_starts(fields[2]):
                continue
            self._seen[fields[0]] += 1
            if self._seen[fields[0]] >= self.polls:
                subprocess.run(["scancel", fields[0]], capture_output=True, timeout=30)
                rule, wildcards = _rule_of(fields[6])
                self.stuck.append(Stuck(fields[0], rule, wildcards, fields[2],
                                        int(fields[3]) if fields[3].isdigit() else 0,
                                        fields[4], fields[5]))

    def message(self) -> str:
        """Every stuck job in words (see :func:`explain`)."""
        return "\n".join(explain(job) for job in self.stuck)


def sbatch_refusal(output: str) -> LlmdynError | None:
    """The job sbatch refused at submission, from Snakemake's output, as a message (or None)."""
    match = re.search(r"SLURM sbatch failed\. The error message was '([^']*)'", output)
    if not match:
        return None
    return LlmdynError(f"SLURM refused a job at submission: {match.group(1).strip()!r}. sbatch "
                       "refuses so a request above every node's size (memory, GPUs); ask for "
                       "less with `llmdyn workflow ... --set-resources RULE:mem_mb=N` (`sinfo "
                       "-N -l` lists the nodes) or edit workflow/profiles/slurm/config.yaml.")
