from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.core.closure import library_closure, module_closure, module_file

LIB = Path(__file__).resolve().parents[2] / "lib" / "llmdyn"

MINI = {  # a library in miniature: what each import form reaches, and what it does not
    "__init__.py": '"""The package."""\n',
    "top.py": ("from llmdyn.pkg import helper\n\n\n"
               "def late():\n    import llmdyn.inside\n    return llmdyn.inside\n"),
    "pkg/__init__.py": ("import lazy_loader\n\n__getattr__, __dir__, __all__ = "
                        "lazy_loader.attach(\n    __name__, "
                        'submod_attrs={"helpers": ["helper"], "other": ["unused"]})\n'),
    "pkg/helpers.py": "from llmdyn import deep\n\n\ndef helper():\n    return deep.VALUE\n",
    "pkg/other.py": "UNUSED = 1\n",
    "deep.py": "VALUE = 1\n",
    "inside.py": "from .deep import VALUE\n",
    "unrelated.py": "from llmdyn.top import late\n",
}


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    lib = tmp_path / "llmdyn"
    for relative, text in MINI.items():
        (lib / relative).parent.mkdir(parents=True, exist_ok=True)
        (lib / relative).write_text(text)
    return lib


def names(lib: Path, files: list[Path]) -> list[str]:
    return [f.relative_to(lib).as_posix() for f in files]


def test_the_closure_of_a_module_follows_every_import_form(mini):
    # top-level import of a lazy attribute (pkg.helper -> pkg/helpers.py, not pkg/other.py),
    # an import inside a function, a relative import, and a package bound to a name
    assert names(mini, module_closure(mini, "llmdyn.top")) == [
        "__init__.py", "deep.py", "inside.py", "pkg/__init__.py", "pkg/helpers.py", "top.py"]
    assert names(mini, module_closure(mini, "llmdyn.deep")) == ["__init__.py", "deep.py"]
    # a module importing it stays out
    assert "unrelated.py" not in names(mini, module_closure(mini, "llmdyn.top"))


def test_the_closure_of_source_text_is_that_of_what_it_imports(mini):
    assert names(mini, library_closure("from llmdyn import deep\n", mini)) == [
        "__init__.py", "deep.py"]
    assert library_closure("import numpy\n", mini) == []


def test_a_facade_name_reaches_its_module_and_no_other(mini):
    facade = ('import lazy_loader\n\n__getattr__, __dir__, __all__ = lazy_loader.attach(\n'
              '    __name__, submod_attrs={"pkg.helpers": ["helper"], "deep": ["VALUE"]})\n')
    (mini / "__init__.py").write_text(facade)
    for source in ("import llmdyn as ld\nld.helper()\n", "import llmdyn\nllmdyn.helper()\n",
                   "from llmdyn import helper\n"):
        assert names(mini, library_closure(source, mini)) == [
            "__init__.py", "deep.py", "pkg/__init__.py", "pkg/helpers.py"], source
    assert names(mini, library_closure("import llmdyn\n", mini)) == ["__init__.py"]


def test_a_module_that_is_not_in_the_library_is_refused(mini):
    with pytest.raises(LlmdynError, match="no module llmdyn.gone under"):
        module_closure(mini, "llmdyn.gone")
    assert module_file(mini, "llmdyn/../x") is None and module_file(mini, "numpy") is None


def test_the_closure_of_a_library_module_holds_what_it_computes_with():
    # vision.coupling stores cls_coupling arrays computed with the training loop's model code
    closure = names(LIB, module_closure(LIB, "llmdyn.vision.coupling"))
    for reached in ("vision/coupling.py", "training/loop.py", "coupling/matrix.py", "trace.py"):
        assert reached in closure, reached
    assert not [f for f in closure if f.startswith(("plots/", "claims/", "book/", "runner/"))]
