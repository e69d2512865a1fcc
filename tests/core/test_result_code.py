import functools
import shutil
from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.core.closure import module_closure
from llmdyn.core.result_code import (
    LIB,
    code_hash,
    computing_module,
    hashed_files,
    is_index,
    source_hash,
)
from llmdyn.coupling.depth import depth_coupling


class Compute:
    def __call__(self) -> dict:
        return {}


def test_the_computing_module_is_where_the_function_is_defined():
    assert computing_module(depth_coupling) == "llmdyn.coupling.depth"
    assert computing_module(functools.partial(depth_coupling, k=2)) == "llmdyn.coupling.depth"
    assert computing_module(lambda: {}) is None  # a test's, a notebook's: outside the library
    assert computing_module(Compute()) is None


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    lib = tmp_path_factory.mktemp("tree") / "llmdyn"
    shutil.copytree(LIB, lib, ignore=shutil.ignore_patterns("__pycache__"))
    return lib


def edited_hash(lib: Path, relative: str, module: str | None) -> str:
    """``module``'s code hash in ``lib`` with ``relative`` edited; the file is restored after."""
    path = lib / relative
    original = path.read_text()
    path.write_text(original + "\n# an edit\n")
    try:
        return source_hash(lib, module)
    finally:
        path.write_text(original)


def test_the_code_hash_of_the_tree_is_the_libraries():
    assert len(code_hash()) == 12 and code_hash() == source_hash(LIB)
    assert code_hash("llmdyn.coupling.depth") == source_hash(LIB, "llmdyn.coupling.depth")


@pytest.mark.parametrize("relative", ["plots/depth.py", "claims/render.py", "claims/claim.py",
                                      "book/params/base.py", "runner/build.py",
                                      "training/loop.py", "stats/bootstrap.py",
                                      "coupling/__init__.py"])
def test_an_edit_outside_the_closure_keeps_the_hash(copy, relative):
    before = source_hash(copy, "llmdyn.coupling.depth")
    assert edited_hash(copy, relative, "llmdyn.coupling.depth") == before


@pytest.mark.parametrize(("module", "relative"), [
    ("llmdyn.coupling.depth", "coupling/depth.py"),  # the computing module itself
    ("llmdyn.coupling.depth", "coupling/matrix.py"),
    ("llmdyn.coupling.depth", "jacobians/blocks.py"),
    ("llmdyn.coupling.depth", "trace.py"),
    ("llmdyn.coupling.depth", "core/arrays.py"),
    ("llmdyn.vision.coupling", "training/loop.py"),  # was marked outside, yet computes ViTs
    ("llmdyn.stats.power", "stats/bootstrap.py"),  # imported inside a function only
    (None, "plots/depth.py"),  # code outside the library may call any module
])
def test_an_edit_inside_the_closure_changes_the_hash(copy, module, relative):
    assert edited_hash(copy, relative, module) != source_hash(copy, module)


def test_a_module_outside_the_library_has_no_code_hash():
    for module in ("numpy", "llmdyn.gone"):
        with pytest.raises(LlmdynError):
            source_hash(LIB, module)


INDEX = ('"""A package."""\n\nimport lazy_loader\n\n__getattr__, __dir__, __all__ = '
         'lazy_loader.attach(\n    __name__, submodules=["a"], submod_attrs={"a": ["f"]})\n')


@pytest.mark.parametrize(("text", "index"), [
    (INDEX, True),
    ('"""Docstring only."""\n', True),
    ('"""Top."""\n\n__version__ = "0.1.0"\n\n\nclass LlmdynError(ValueError):\n    """Bad."""\n',
     True),
    (INDEX + "X = 1\n", False),  # code beside the table
    (INDEX + "from llmdyn.a import f\n", False),  # an eager import runs a.py's code
    ('"""Top."""\n\n\nclass LlmdynError(ValueError):\n    code = 2\n', False),
    ("import lazy_loader\n", False),  # no docstring: not the shape of an index
])
def test_a_package_init_is_left_out_only_when_it_is_an_index(tmp_path, text, index):
    init = tmp_path / "__init__.py"
    init.write_text(text)
    assert is_index(init) is index
    assert not is_index(tmp_path / "module.py")


def test_the_library_index_files_route_the_closure_but_are_not_hashed():
    hashed = set(hashed_files(LIB))
    assert LIB / "cli" / "__init__.py" in hashed  # it holds the command's code
    assert LIB / "__init__.py" not in hashed and LIB / "core" / "__init__.py" not in hashed
    closure = module_closure(LIB, "llmdyn.coupling.depth")
    assert LIB / "coupling" / "__init__.py" in closure  # read for its lazy table
    assert LIB / "coupling" / "__init__.py" not in hashed_files(LIB, "llmdyn.coupling.depth")


def test_no_module_carries_the_retired_outside_the_code_hash_marker():
    # the closure decides what a result's hash covers; a leftover marker would mislead a reader
    lib = Path(__file__).resolve().parents[2] / "lib" / "llmdyn"
    marked = [p.name for p in lib.rglob("*.py") if "llmdyn: outside the code hash" in p.read_text()]
    assert not marked, marked
