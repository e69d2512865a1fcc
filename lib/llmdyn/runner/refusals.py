"""A run that Snakemake refused while planning, in one line: its reason, not its report.

Snakemake words a refusal of the Snakefile's own checks (a ViT target whose data set or run
does not exist, a config value the Snakefile refuses) as a block of several lines, an
``InputFunctionException`` with a short ``Traceback:``; a target no rule writes is a
``MissingRuleException``. :func:`planning_refusal` finds the reason in that report, so the
run's last line says it.
"""

from __future__ import annotations

import os
import re

from llmdyn import LlmdynError
from llmdyn.core.paths import RESULTS_ENV, results_root

__all__ = ["planning_refusal"]

# A refusal of the Snakefile's checks: these exception types are the Snakefile's own words;
# any other type (a bug) keeps Snakemake's report.
_INPUT = re.compile(r"^InputFunctionException in rule (\w+)[^\n]*\n\s*Error:\s*\n\s*"
                    r"(?:ValueError|LlmdynError): ([^\n]+)", re.MULTILINE)
_SNAKEFILE = re.compile(r"^LlmdynError in file [^\n]*Snakefile[^\n]*:\s*\n([^\n]+)",
                        re.MULTILINE)
_NO_RULE = re.compile(r"^MissingRuleException:\s*\nNo rule to produce (.+?) \(if you use",
                      re.MULTILINE)


def planning_refusal(output: str) -> LlmdynError | None:
    """The reason Snakemake stopped before any job ran, from its output (None if not that)."""
    found = _INPUT.search(output)
    if found:
        return LlmdynError(f"rule {found.group(1)} refused the target: {found.group(2).strip()}")
    found = _SNAKEFILE.search(output)
    if found:
        return LlmdynError(found.group(1).strip())
    found = _NO_RULE.search(output)
    if found:
        return LlmdynError(f"no rule of the workflow writes {found.group(1)}{_elsewhere(found[1])}")
    return None


def _elsewhere(target: str) -> str:
    """Where a ``results/…`` target is written when ``$LLMDYN_RESULTS`` moves the results."""
    if not target.startswith("results/") or not os.environ.get(RESULTS_ENV):
        return ""
    moved = f"{results_root().as_posix().rstrip('/')}/{target.removeprefix('results/')}"
    return (f"; {RESULTS_ENV} is set, so the workflow writes its results under "
            f"{results_root()}: ask for {moved}")
