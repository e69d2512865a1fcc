"""List the modules over 400 lines and the functions over 60 lines (docstring included).

The reading targets: a newcomer reads a module or a function in one sitting.

    python tools/unit_sizes.py lib bench
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MODULE_LINES = 400
FUNCTION_LINES = 60


def oversized(root: Path) -> list[str]:
    """One line per module or function of ``root`` (a file or a folder) over its target."""
    out = []
    for path in sorted([root] if root.is_file() else root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        n = len(source.splitlines())
        if n > MODULE_LINES:
            out.append(f"module {path}: {n} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > FUNCTION_LINES:
                    out.append(f"function {path}:{node.lineno} {node.name}: {length} lines")
    return out


def main(argv: list[str]) -> None:
    """Print the oversized units under each folder given (default: lib and bench)."""
    for root in argv or ["lib", "bench"]:
        for line in oversized(Path(root)):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
