"""How thin the chapter notebooks are, and how many exported names of the library do not resolve.

Usage: ``python tools/notebook_metrics.py [NOTEBOOK ...]`` (default: ``notebooks/*.ipynb``).

Terms, counted over every code cell except the ``parameters`` cell:

- a **code line** is a line that is neither blank nor a comment;
- a **logic line** is a code line that holds a loop (``for``, ``while``), a conditional (``if``,
  a conditional expression, ``try``, ``match``), a comprehension or generator, arithmetic or
  a test (a binary, unary, augmented or boolean operator, a comparison), or a literal with
  more than one key (a dict display with at least two keys; every line it spans);
- **``Claim(``** counts every call of ``llmdyn.claims.claim.Claim`` under any name it was
  imported or bound as (``from llmdyn.claims import Claim as C``, ``claims.Claim(…)``).

An **unresolved export** is a name in a package's ``__all__`` (its lazy table) that
``getattr`` cannot resolve: it advertises something that does not exist.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
ARITHMETIC = (ast.BinOp, ast.AugAssign, ast.UnaryOp, ast.Compare, ast.BoolOp)
BRANCHES = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.IfExp, ast.ListComp, ast.SetComp,
            ast.DictComp, ast.GeneratorExp, ast.Try, ast.Match)


@dataclass(frozen=True)
class NotebookCount:
    """The counts of one notebook (the parameters cell aside)."""

    name: str
    code_lines: int
    logic_lines: int
    claim_calls: int

    @property
    def logic_share(self) -> float:
        """Logic lines as a share of code lines."""
        return self.logic_lines / self.code_lines if self.code_lines else 0.0


def _code_sources(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return ["\n".join("" if line.lstrip().startswith(("%", "!")) else line
                      for line in cell.source.splitlines())
            for cell in nb.cells
            if cell.cell_type == "code" and "parameters" not in cell.metadata.get("tags", [])]


def _code_lines(source: str) -> set[int]:
    return {i for i, line in enumerate(source.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")}


def _logic_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, BRANCHES + ARITHMETIC):
            lines.add(node.lineno)
        elif isinstance(node, ast.Dict) and len(node.keys) >= 2:
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _claim_names(tree: ast.AST, direct: set[str], modules: set[str]) -> None:
    """Add the local names bound to the Claim class, and to a module that exports it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llmdyn"):
            for a in node.names:
                if a.name == "Claim":
                    direct.add(a.asname or a.name)
                elif a.name in ("claims", "claim"):
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in ("llmdyn.claims", "llmdyn.claims.claim") and a.asname:
                    modules.add(a.asname)
        elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
              and node.value.id in direct):
            direct.update(t.id for t in node.targets if isinstance(t, ast.Name))


def _claim_calls(tree: ast.AST, direct: set[str], modules: set[str]) -> int:
    count = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in direct:
            count += 1
        elif isinstance(f, ast.Attribute) and f.attr == "Claim":
            count += 1  # claims.Claim(...), llmdyn.claims.Claim(...), any alias of the module
    return count


def count_notebook(path: Path) -> NotebookCount:
    """The counts of one notebook; a cell that does not parse counts its lines as code only."""
    sources = _code_sources(path)
    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(source))
        except SyntaxError:
            trees.append(ast.Module(body=[], type_ignores=[]))
    direct: set[str] = set()
    modules: set[str] = set()
    for tree in trees:  # a name bound in one cell is used in the next
        _claim_names(tree, direct, modules)
    code = logic = claims = 0
    for source, tree in zip(sources, trees, strict=True):
        lines = _code_lines(source)
        code += len(lines)
        logic += len(lines & _logic_lines(tree))
        claims += _claim_calls(tree, direct, modules)
    return NotebookCount(path.stem, code, logic, claims)


def unresolved_exports() -> list[str]:
    """``package.name`` for every name in a package's ``__all__`` that does not resolve."""
    import llmdyn

    missing = [f"llmdyn.{n}" for n in getattr(llmdyn, "__all__", []) if not hasattr(llmdyn, n)]
    for info in pkgutil.iter_modules(llmdyn.__path__):
        if info.ispkg:
            package = importlib.import_module(f"llmdyn.{info.name}")
            missing += [f"llmdyn.{info.name}.{n}" for n in getattr(package, "__all__", [])
                        if not hasattr(package, n)]
    return missing


def table(counts: list[NotebookCount]) -> str:
    """The counts as a Markdown table."""
    from llmdyn.core.tables import markdown_table  # after main() put lib/ on the path

    rows = [{"notebook": c.name, "code lines": c.code_lines, "logic": f"{c.logic_share:.0%}",
             "inline `Claim(`": c.claim_calls} for c in counts]
    return markdown_table(rows, align={k: "right" for k in list(rows[0])[1:]})


def main(argv: list[str] | None = None) -> int:
    """Print the notebook table and the unresolved exports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        default=sorted((REPO / "notebooks").glob("*.ipynb")))
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "lib"))
    print(table([count_notebook(p) for p in args.notebooks]))
    missing = unresolved_exports()
    print(f"\nexported names that do not resolve: {len(missing)}")
    for name in missing:
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
