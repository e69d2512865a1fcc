"""The xdist units of `make test` (tests/conftest.py): a module per worker, SLURM modules shared."""

from tests.conftest import worker_unit


def test_a_module_is_one_unit_and_the_slurm_modules_share_one():
    assert worker_unit("tests/runner/test_book.py::test_x[a-b]") == "test_book"
    book = "tests/runner/test_book.py"
    assert worker_unit(f"{book}::test_y") == worker_unit(f"{book}::test_x")
    assert worker_unit("tests/runner/test_workflow.py::test_a") == "slurm"
    assert worker_unit("tests/runner/test_workflow_slurm.py::test_b") == "slurm"
    assert worker_unit("tests/runner/test_workflow_resume.py::test_c") == "test_workflow_resume"


def test_tests_mirror_the_package_and_module_names_stay_unique():
    # tests/<subpackage>/ for each llmdyn subpackage; bench/ and tools/ test
    # the scripts of those folders, and a few tests of the whole package stay at the top.
    # worker_unit keys on a module's file name, so two test files may not share one.
    from llmdyn.core.paths import REPO

    tests, package = REPO / "tests", REPO / "lib" / "llmdyn"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    subpackages = {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    assert folders - {"bench", "tools"} <= subpackages | {"trace", "cli"}, folders - subpackages
    names = [p.stem for p in tests.rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
