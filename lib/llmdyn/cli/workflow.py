"""``llmdyn workflow``: the book as a Snakemake run, locally or on a cluster profile."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmdyn import LlmdynError
from llmdyn.cli.parsers import add_command
from llmdyn.core.paths import REPO
from llmdyn.runner.runlock import unlock
from llmdyn.runner.targets import check_targets, rerun_targets
from llmdyn.runner.workflow import run_workflow

EXAMPLES = [
    "llmdyn workflow --model gemma3-270m                   # the whole book on another model",
    "llmdyn workflow --only 05_depth_coupling -n           # what one chapter would run",
    "llmdyn workflow --profile slurm                       # the same jobs on a SLURM cluster",
    "llmdyn workflow measure_all                           # only the measurement jobs",
    "llmdyn workflow --rerun 05_depth_coupling             # run a chapter again although "
    "current",
]
RESUMING = """\
After an interruption (Ctrl-C, kill, a power loss), the same command continues: finished
outputs are kept, cut-off ones are run again, and a stale lock is cleared.
"""


def add_parser(sub: Any) -> None:
    """Add ``workflow`` to the ``llmdyn`` command's subparsers."""
    p = add_command(sub, "workflow", help="build the book with Snakemake (local or a profile)",
                    examples=EXAMPLES, note=RESUMING)
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


def config_values(items: Sequence[str]) -> dict[str, Any]:
    """``--config`` items ``KEY=VALUE`` as a dict; a VALUE that reads as JSON is that value."""
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


def run(args: argparse.Namespace) -> int:
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
        extra += ["--forcerun", *rerun_targets(args.rerun)]
    run_workflow(model=args.model, profile=args.profile, chapters=args.only,
                 targets=check_targets(args.targets), cores=args.cores,
                 config=config_values(args.config), directory=args.directory,
                 dry_run=args.dry_run, set_resources=args.set_resources,
                 resources=args.resources, extra=extra)
    return 0
