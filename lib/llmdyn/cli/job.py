"""The workflow's own jobs: ``python -m llmdyn.cli.job chapter|html|pdf|convert|vit-grid …``.

The Snakefile's chapter, html, convert and vit_grid rules run these in the job's working
directory (the repository or ``llmdyn workflow --directory``); ``make pdf`` runs ``pdf``, which
no rule does. A refusal, or the OS's (a full disk), is one line in the job's log,
``llmdyn job: error: …``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from llmdyn.cli.report import one_line
from llmdyn.runner.conversion import convert_packaged
from llmdyn.runner.pdf import build_pdf
from llmdyn.runner.records import write_grid_record
from llmdyn.runner.workflow import chapter_job, html_job


def build_parser() -> argparse.ArgumentParser:
    """The jobs' parser: ``chapter``, ``html``, ``pdf``, ``convert`` and ``vit-grid``."""
    parser = argparse.ArgumentParser(prog="python -m llmdyn.cli.job", description=__doc__)
    sub = parser.add_subparsers(dest="job", required=True)
    chapter = sub.add_parser("chapter", help="execute one chapter and write its record")
    chapter.add_argument("name")
    chapter.add_argument("--parameters", required=True, help="JSON dict of notebook parameters")
    sub.add_parser("html", help="build the HTML book from the executed chapters")
    sub.add_parser("pdf", help="build the book as one PDF (xelatex) from the executed chapters")
    convert = sub.add_parser("convert", help="convert a packaged model once; write its stamp")
    convert.add_argument("model")
    convert.add_argument("stamp", type=Path)
    vit = sub.add_parser("vit-grid", help="train every ViT of a grid in one process; write its "
                                          "record")
    vit.add_argument("grid")
    vit.add_argument("dataset")
    vit.add_argument("root", type=Path)
    vit.add_argument("record", type=Path)
    vit.add_argument("--device", default=None)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the job that ``args`` name, in the current directory."""
    here = Path.cwd()
    if args.job == "convert":
        convert_packaged(args.model, args.stamp)
    elif args.job == "vit-grid":  # the grid's runs share this process and its imports
        from llmdyn.vision.grids import train_grid  # imports torch: only this job

        results = train_grid(args.grid, args.root, dataset=args.dataset, device=args.device)
        write_grid_record(args.record, args.grid, args.dataset, [r.directory for r in results])
    elif args.job == "chapter":
        chapter_job(args.name, json.loads(args.parameters), here)
    elif args.job == "pdf":
        print(f"the PDF: {build_pdf(here)}")
    else:
        html_job(here)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's) and run the job, a refusal as one line."""
    args = build_parser().parse_args(argv)
    return one_line("job", lambda: run(args))


if __name__ == "__main__":
    raise SystemExit(main())
