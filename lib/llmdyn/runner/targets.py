"""The targets ``llmdyn workflow`` hands Snakemake, checked so nothing typed is something else.

Positional targets go to Snakemake unchanged, so each must be a rule of the Snakefile that takes
no wildcards or a file one of its rules writes; a flag (``llmdyn workflow -- --delete-all-output``
lands here too) is refused. What users need from Snakemake has a named option instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.core.paths import results_root
from llmdyn.runner.build import chapters
from llmdyn.runner.workflow import SNAKEFILE

_RULE = re.compile(r"^rule (\w+):", re.MULTILINE)
_OUTPUT = re.compile(r'^\s*output:\s*(RESULTS \+ )?"([^"]+)"', re.MULTILINE)
# What a wildcard of a target may hold: a name (a chapter, a run, a grid, a data set, a model's
# safe name), as the Snakefile's wildcard_constraints demand. Nothing a shell reads as syntax
# ($(...), `...`, ;, quotes, spaces, newlines) can pass.
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


def rerun_targets(names: Sequence[str]) -> list[str]:
    """Names to run again (``--rerun``) as Snakemake targets: a chapter means its notebook.

    Raises:
        LlmdynError: a name that is neither a rule, a chapter nor a file a rule writes.
    """
    known, rules = chapters(), _RULE.findall(SNAKEFILE.read_text())  # any rule: --forcerun
    files = [f"book/executed/{n}.ipynb" if n in known else n for n in names]
    check_targets([f for f in files if f not in rules])
    return files

