"""What every Snakemake process and `llmdyn` command imports stays free of torch and scipy.stats.

Each costs about 2 CPU-s to import on this machine. Snakemake parses the Snakefile in every
process it starts (the run, a dry run, each SLURM job), and the workflow's chapter job only
drives papermill: its kernel imports what the chapter needs.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from llmdyn.runner.build import REPO

HEAVY = ("torch", "scipy.stats", "transformers")


def _imported_after(code: str) -> set[str]:
    """The HEAVY modules imported by ``code`` in a new interpreter."""
    probe = (f"{code}\nimport sys\n"
             f"print('heavy:', *(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=REPO, timeout=120, check=True)
    return set(out.stdout.splitlines()[-1].split()[1:])


def test_the_snakefile_and_the_chapter_job_import_no_torch():
    snakefile = (REPO / "workflow" / "Snakefile").read_text()
    modules = re.findall(r"^from (llmdyn[\w.]*) import", snakefile, flags=re.M)
    assert "llmdyn.runner.build" in modules and "llmdyn.book.params.base" in modules
    imports = "\n".join(f"import {m}" for m in [*modules, "llmdyn.cli.job"])
    assert _imported_after(imports) == set()


@pytest.mark.parametrize("argv", [["chapters"], ["workflow", "--help"], ["book", "--help"]])
def test_commands_that_need_no_torch_do_not_import_it(argv):
    code = (f"from llmdyn.cli import main\ntry:\n    main({argv!r})\n"
            "except SystemExit:\n    pass")
    assert _imported_after(code) == set()
