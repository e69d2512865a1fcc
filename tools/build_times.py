"""Where a build's time went: CPU seconds per job kind and each chapter's hot cells.

Reads the build's own records (Snakemake's benchmark files under logs/benchmarks, papermill's
cell durations in book/executed, the training runs' run.json) and prints a Markdown table; the
HTML build writes the same table to book/generated/build_times.md for the Performance page.

    python tools/build_times.py            # this checkout's last build
    python tools/build_times.py /work/base # another checkout's
    python tools/build_times.py --compare /work/before /work/after   # two builds side by side
    make build-times
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from llmdyn.book import buildtimes


def main(argv: list[str] | None = None) -> int:
    """Print the report of the build under the given root (default: the current directory)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path("."),
                        help="checkout whose build is read (default: .)")
    parser.add_argument("--out", type=Path, help="also write the Markdown to this file")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                        help="two checkouts' builds side by side, CPU by job kind and chapter")
    args = parser.parse_args(argv)
    text = (buildtimes.compare(*args.compare) if args.compare
            else buildtimes.report(args.root))
    if args.out:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
