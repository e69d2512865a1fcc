"""Which library files a piece of Python reaches through its imports: its import closure.

The closure is read from source text, never by importing, so it can be computed for any copy of
the tree (``lib`` is that copy's ``lib/llmdyn``). It follows what Python would execute:

- ``from llmdyn.a.b import x`` reaches ``a/__init__.py``, ``a/b.py`` and, where ``x`` is a
  submodule or a lazy attribute of package ``a.b``, the file that defines ``x``;
- ``from llmdyn import plots`` followed by ``plots.band(...)`` reaches ``plots/depth.py``
  through the package's lazy table (``lazy_loader.attach(..., submod_attrs=...)``), and no
  other family of ``plots``;
- every module reached is read in turn, function-level imports included.

A chapter's workflow inputs (:mod:`llmdyn.runner.sources`) and a stored result's code hash
(:mod:`llmdyn.core.result_code`) are both such closures.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from llmdyn import LlmdynError

PACKAGE = "llmdyn"


def _parse(source: str) -> ast.Module | None:
    # IPython magics and shell escapes are not Python
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                       for line in source.splitlines())
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def module_file(lib: Path, dotted: str) -> Path | None:
    """The file of module ``dotted`` (``llmdyn.a.b``) under ``lib``, or None if there is none."""
    parts = dotted.split(".")
    if parts[0] != PACKAGE or not all(p.isidentifier() for p in parts):
        return None
    base = lib.joinpath(*parts[1:])
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _with_parents(lib: Path, dotted: str) -> set[Path]:
    """The file of ``dotted`` and the ``__init__.py`` of every package above it."""
    parts = dotted.split(".")
    files = {module_file(lib, ".".join(parts[:i])) for i in range(1, len(parts) + 1)}
    return {f for f in files if f is not None}


def stamp(path: Path) -> tuple[int, int, int]:
    """``(size, mtime_ns, inode)`` of ``path``: a new value for each version of the file."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


@functools.lru_cache(maxsize=4096)
def _parsed(path: Path, version: tuple[int, int, int]) -> ast.Module | None:
    # One parse per file version: the closures of eleven chapters share most files, and the
    # workflow asks again in every scheduling round
    del version  # part of the cache key only
    return _parse(path.read_text(encoding="utf-8"))  # source is UTF-8 whatever the locale


def lazy_exports(init: Path) -> dict[str, str]:
    """``{attribute: submodule}`` from a package's ``lazy_loader.attach`` call (empty if none)."""
    tree = _parsed(init, stamp(init))
    exports: dict[str, str] = {}
    for node in ast.walk(tree) if tree else ():
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "attach"):
            continue
        for keyword in node.keywords:
            value = ast.literal_eval(keyword.value)
            if keyword.arg == "submodules":
                exports.update({name: name for name in value})
            elif keyword.arg == "submod_attrs":
                exports.update({a: sub for sub, attrs in value.items() for a in attrs})
    return exports


def _attribute_files(lib: Path, package: str, name: str) -> set[Path]:
    """Files reached by ``package.name``: a submodule, or a lazy attribute's submodule."""
    direct = module_file(lib, f"{package}.{name}")
    if direct is not None:
        return _with_parents(lib, f"{package}.{name}")
    init = module_file(lib, package)
    if init is None or init.name != "__init__.py":
        return set()
    sub = lazy_exports(init).get(name)
    return _with_parents(lib, f"{package}.{sub}") if sub else set()


def _absolute(node: ast.ImportFrom, here: str) -> str | None:
    """The absolute module name of ``from <module> import …`` written in package ``here``."""
    if node.level == 0:
        return node.module
    base = here.split(".")[: len(here.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imported_files(source: str, lib: Path, here: str = PACKAGE) -> set[Path]:
    """Library files that Python ``source`` (a module of package ``here``) imports or uses."""
    return _imported(_parse(source), lib, here)


@functools.lru_cache(maxsize=4096)
def _imported_by_file(path: Path, version: tuple[int, int, int], lib: Path) -> frozenset[Path]:
    return frozenset(_imported(_parsed(path, version), lib, _package_of(lib, path)))


def _imported(tree: ast.Module | None, lib: Path, here: str) -> set[Path]:
    if tree is None:
        return set()
    files: set[Path] = set()
    aliases: dict[str, str] = {}  # local name -> llmdyn package or module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node, here)
            if not module or module.split(".")[0] != PACKAGE:
                continue
            files |= _with_parents(lib, module)
            for a in node.names:
                files |= _attribute_files(lib, module, a.name)
                if module_file(lib, f"{module}.{a.name}"):
                    aliases[a.asname or a.name] = f"{module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == PACKAGE:
                    files |= _with_parents(lib, a.name)
                    # `import llmdyn.a.b` binds `llmdyn`, through which the facade's names are used
                    aliases[a.asname or PACKAGE] = a.name if a.asname else PACKAGE
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases):
            files |= _attribute_files(lib, aliases[node.value.id], node.attr)
    return files


def _package_of(lib: Path, path: Path) -> str:
    """``llmdyn.a`` for ``lib/a/b.py`` and for ``lib/a/__init__.py``."""
    parts = path.relative_to(lib).parts[:-1]
    return ".".join((PACKAGE, *parts))


def _reached(start: set[Path], lib: Path) -> list[Path]:
    """``start`` and every library file its files import, transitively, sorted."""
    todo = list(start)
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo += _imported_by_file(path, stamp(path), lib) - seen
    return sorted(seen)


def library_closure(source: str, lib: Path) -> list[Path]:
    """Every library file that ``source`` (a notebook's code, a script) reaches, sorted."""
    return _reached(imported_files(source, lib), lib)


def module_closure(lib: Path, dotted: str) -> list[Path]:
    """The file of module ``dotted`` (``llmdyn.a.b``), its packages' and all it reaches, sorted.

    Raises:
        LlmdynError: ``lib`` holds no module ``dotted``.
    """
    if module_file(lib, dotted) is None:
        raise LlmdynError(f"no module {dotted} under {lib}; name a module of the library")
    return _reached(_with_parents(lib, dotted), lib)
