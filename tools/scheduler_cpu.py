r"""Snakemake's own CPU seconds for one run of the book's workflow (its jobs not counted).

Runs Snakemake in this process and prints ``getrusage(RUSAGE_SELF)`` when it exits: the
scheduler's work (parsing the Snakefile, building the DAG, scheduling rounds), without the
jobs it starts, which are child processes. Arguments go to Snakemake, e.g.

    PYTHONPATH=lib .venv/bin/python tools/scheduler_cpu.py --snakefile workflow/Snakefile \\
        --cores 2 --directory /tmp/d --workflow-profile none -n
"""

import atexit
import resource
import runpy
import sys
import time

START = time.time()


def report() -> None:
    """Print this process's CPU seconds and its children's (the jobs) on stderr."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    jobs = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"snakemake CPU: {me.ru_utime + me.ru_stime:.2f} s (user {me.ru_utime:.2f}, sys "
          f"{me.ru_stime:.2f}); its jobs: {jobs.ru_utime + jobs.ru_stime:.2f} s; wall "
          f"{time.time() - START:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    atexit.register(report)
    sys.argv = ["snakemake", *sys.argv[1:]]
    runpy.run_module("snakemake", run_name="__main__")
