"""``llmdyn workflow``: its options, and the checks that nothing typed is silently something else.

Positional targets go to Snakemake unchanged, so each must be a rule of the Snakefile that takes
no wildcards or a file one of its rules writes; a flag (``llmdyn workflow -- --delete-all-output``
lands here too) is refused. What users need from Snakemake has a named option instead.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmdyn import LlmdynError
from llmdyn.core.paths import REPO, results_root
from llmdyn.runner.runlock import unlock
from llmdyn.runner.workflow import SNAKEFILE, run_workflow

EXAMPLE = """\
examples:
  llmdyn workflow --model gemma3-270m                   # the whole book on another model
  llmdyn workflow --only 05_depth_coupling -n           # what one chapter would run
  llmdyn workflow --profile slurm                       # the same jobs on a SLURM cluster
  llmdyn workflow measure_all                           # only the measurement jobs
  llmdyn workflow --rerun 05_depth_coupling             # run a chapter again although current
After an interruption (Ctrl-C, kill, a power loss), the same command continues: finished
outputs are kept, cut-off ones are run again, and a stale lock is cleared.
"""
_RULE = re.compile(r"^rule (\w+):", re.MULTILINE)
_OUTPUT = re.compile(r'^\s*output:\s*(RESULTS \+ )?"([^"]+)"', re.MULTILINE)
# What a wildcard of a target may hold: a name (a chapter, a run, a grid, a data set, a model's
# safe name), as the Snakefile's wildcard_constraints demand. Nothing a shell reads as syntax
# ($(...), `...`, ;, quotes, spaces, newlines) can pass (issue 45, item 1).
_WILDCARD = "[A-Za-z0-9][A-Za-z0-9._-]*"
_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]")


def snakefile_targets(snakefile: Path = SNAKEFILE) -> tuple[list[str], list[re.Pattern]]:
    """Rule names that can be targets (no wildcards) and the patterns of the files rules write.

    An output under ``RESULTS`` (the results root) matches as ``results/…`` (the default, in
    the workflow's directory) and under ``$LLMDYN_RESULTS``.
    """
    text = snakefile.read_text()
    roots = list(dict.fromkeys(["results", results_root().as_posix()]))
    outputs = [root + out for under, out in _OUTPUT.findall(text)
               for root in (roots if under else [""])]
    patterns = [re.compile("^" + re.sub(r"\\\{\w+\\\}", _WILDCARD, re.escape(out)) + r"\Z")
                for out in outputs]
    wildcard_rules = set()
    for block in re.split(r"\n(?=rule \w+:)", text):
        found = _RULE.search(block)
        if found and re.search(r'output:\s*(RESULTS \+ )?"[^"]*\{', block):
            wildcard_rules.add(found.group(1))
    return [r for r in _RULE.findall(text) if r not in wildcard_rules], patterns


def check_targets(targets: Sequence[str], snakefile: Path = SNAKEFILE) -> list[str]:
    """Return ``targets`` if each is a target rule or a file a rule writes; else refuse it.

    Raises:
        LlmdynError: naming the target, the rules that can be targets, and for a flag the
            named options that do what users need.
    """
    rules, patterns = snakefile_targets(snakefile)
    for target in targets:
        if target.startswith("-"):
            raise LlmdynError(
                f"{target!r} is a flag, not a target: what comes after -- is passed to Snakemake "
                "as target names. Use the named options (--keep-going, --rerun, --dry-run, "
                "--cores, --set-resources, --resources, --config; see llmdyn workflow --help); "
                "an interrupted run needs none: the same command resumes it")
        if target not in rules and not any(p.match(target) for p in patterns):
            names = ("; each name in a file's path (chapter, model, run, grid, data set) is "
                     "letters, digits and ._- only" if _UNSAFE.search(target) else "")
            raise LlmdynError(
                f"target {target!r} is neither a rule nor a file the workflow writes{names}; "
                f"rules: {', '.join(rules)}; files such as book/executed/<chapter>.ipynb, "
                "results/measure/<model>.json (chapters: use --only)")
    return list(targets)


def add_parser(sub: Any) -> None:
    """Add ``workflow`` to the ``llmdyn`` command's subparsers."""
    p = sub.add_parser("workflow", help="build the book with Snakemake (local or a profile)",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None,
                   help="model for every chapter; wins over a chapter params file's model: "
                        "(default: that, else smollm2-135m); a path is made absolute")
    p.add_argument("--profile", default=None, help="e.g. slurm (default: local executor)")
    p.add_argument("--only", nargs="+", default=(), metavar="CHAPTER",
                   help="only these chapters (no HTML)")
    p.add_argument("--cores", type=int, default=None)
    p.add_argument("--directory", type=Path, default=None,
                   help="write outputs here instead of the repository")
    p.add_argument("--config", nargs="+", default=(), metavar="KEY=VALUE",
                   help="more config values, e.g. chapter_params=tests/smoke")
    p.add_argument("--set-resources", nargs="+", default=(), metavar="RULE:NAME=VALUE",
                   help="a rule's resources over the profile's, e.g. chapter:mem_mb=8000 "
                        "chapter:cpus_per_task=2 measure:slurm_partition=gpu (rules: chapter, "
                        "measure, train_run, vit_run, suite_data, convert, html)")
    p.add_argument("--resources", nargs="+", default=(), metavar="NAME=INTEGER",
                   help="limits of all running jobs together, e.g. gpu=1 mem_mb=16000")
    p.add_argument("-k", "--keep-going", action="store_true",
                   help="when a job fails, go on with the jobs that do not need it")
    p.add_argument("--rerun", nargs="+", default=(), metavar="CHAPTER|RULE|FILE",
                   help="run these again (and what depends on them) although up to date")
    p.add_argument("-n", "--dry-run", action="store_true")
    p.add_argument("--unlock", action="store_true",
                   help="only remove Snakemake's locks in --directory (or the repository), e.g. "
                        "those of a run on another host that has ended; a run alive on this "
                        "machine is still refused")
    p.add_argument("targets", nargs="*", help="other targets: a rule (e.g. measure_all) or a "
                                              "file the workflow writes")


def _config(items: Sequence[str]) -> dict[str, Any]:
    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise LlmdynError(f"--config takes KEY=VALUE, got {item!r}")
        try:
            config[key] = json.loads(value)
        except json.JSONDecodeError:
            config[key] = value
    return config


def _rerun(names: Sequence[str]) -> list[str]:
    """``--rerun`` names as Snakemake targets: a chapter name means its executed notebook."""
    from llmdyn.runner.build import chapters

    known, rules = chapters(), _RULE.findall(SNAKEFILE.read_text())  # any rule: --forcerun
    files = [f"book/executed/{n}.ipynb" if n in known else n for n in names]
    check_targets([f for f in files if f not in rules])
    return files


def run_cli(args: argparse.Namespace) -> int:
    """Run ``llmdyn workflow`` from parsed arguments (`llmdyn.cli.main` prints refusals)."""
    if args.unlock:
        where = Path(args.directory or REPO)
        removed = unlock(where)
        print(f"llmdyn workflow: removed {len(removed)} Snakemake lock file(s) in {where}")
        return 0
    extra = []
    if args.keep_going:
        extra.append("--keep-going")
    if args.rerun:
        extra += ["--forcerun", *_rerun(args.rerun)]
    run_workflow(model=args.model, profile=args.profile, chapters=args.only,
                 targets=check_targets(args.targets), cores=args.cores,
                 config=_config(args.config), directory=args.directory,
                 dry_run=args.dry_run, set_resources=args.set_resources,
                 resources=args.resources, extra=extra)
    return 0
