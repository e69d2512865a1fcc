"""The library code a stored result depends on, and the hash the results store keeps of it.

A result's code is the import closure (:func:`llmdyn.core.closure.module_closure`) of the
module that computes it: that module, and every library module it imports, directly,
inside a function or through a package's lazy table, transitively. A module outside the
closure cannot run in the computation, so editing it keeps the result; editing one inside
changes the hash, and the store computes the result again. The computation must reach the
code it runs through its module's imports, as every computation stored today does: a function
handed to it from a module it does not import would be outside the hash.

A package ``__init__`` that is an index only is left out of the hash, so that adding a name
to a package's table keeps every result: one whose statements are a docstring, ``import
lazy_loader`` and the lazy table (in the top package also ``__version__``, recorded apart, and
the ``LlmdynError`` class with a docstring only). The lazy table still decides the closure, so
pointing a name at another module changes the hash through that module's file. An
``__init__`` holding anything else is hashed like any module.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Callable
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.core.closure import PACKAGE, module_closure

LIB = Path(__file__).resolve().parents[1]  # lib/llmdyn
_HASHES: dict[str | None, str] = {}


def computing_module(compute: Callable) -> str | None:
    """The ``llmdyn`` module that defines ``compute``, or None when the library does not.

    ``compute`` may be a function, a lambda, a nested function, a bound method, a callable
    object or a ``functools.partial`` of these. None means defined outside the library: in a
    notebook's cell, a test or a script.
    """
    while isinstance(compute, functools.partial):
        compute = compute.func
    module = getattr(compute, "__module__", None)
    if isinstance(module, str) and (module == PACKAGE or module.startswith(PACKAGE + ".")):
        return module
    return None


def code_hash(module: str | None = None) -> str:
    """First 12 hex digits of sha256 over the library source a result of ``module`` runs.

    ``module`` is the computing module (``"llmdyn.coupling.depth"``): its import closure is
    hashed. None (a computation outside the library, which may call any of it) hashes every
    module. Computed once per process and module.
    """
    if module not in _HASHES:
        _HASHES[module] = source_hash(LIB, module)
    return _HASHES[module]


def hashed_files(lib: Path, module: str | None = None) -> list[Path]:
    """The files under ``lib`` (a ``llmdyn`` tree, a copy works too) the hash of ``module`` reads.

    Raises:
        LlmdynError: ``module`` is not a module of ``lib``.
    """
    if module is not None and not (module == PACKAGE or module.startswith(PACKAGE + ".")):
        raise LlmdynError(f"module {module!r} is not in the library; name an llmdyn module, or "
                          "None for code outside it")
    files = (module_closure(lib, module) if module is not None else
             [p for p in lib.rglob("*.py") if "__pycache__" not in p.relative_to(lib).parts])
    return sorted(p for p in files if not is_index(p))


def is_index(path: Path) -> bool:
    """Whether ``path`` is a package ``__init__`` holding only an index (see the module doc)."""
    if path.name != "__init__.py":
        return False
    try:
        body = ast.parse(path.read_bytes()).body
    except SyntaxError:
        return False
    return bool(body) and _is_docstring(body[0]) and all(_is_index_line(n) for n in body[1:])


def _is_docstring(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _is_index_line(node: ast.stmt) -> bool:
    """``import lazy_loader``, the lazy table, ``__version__ = "…"`` or a bare error class."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names] == ["lazy_loader"] and not node.names[0].asname
    if isinstance(node, ast.Assign):
        names = [t.id for t in ast.walk(node.targets[0]) if isinstance(t, ast.Name)]
        if names == ["__version__"]:
            return isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        call = node.value
        return (names == ["__getattr__", "__dir__", "__all__"] and isinstance(call, ast.Call)
                and ast.unparse(call.func) == "lazy_loader.attach"
                and all(isinstance(k.value, (ast.List, ast.Dict)) for k in call.keywords))
    return (isinstance(node, ast.ClassDef) and node.name == "LlmdynError"
            and [ast.unparse(b) for b in node.bases] == ["ValueError"]
            and not node.decorator_list and all(_is_docstring(b) for b in node.body))


def source_hash(lib: Path, module: str | None = None) -> str:
    """The code hash of ``module`` in the ``llmdyn`` tree at ``lib`` (see :func:`code_hash`)."""
    digest = hashlib.sha256()
    for path in hashed_files(lib, module):
        digest.update(path.relative_to(lib).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
