"""The xdist units of `make test` (tests/conftest.py): a module per worker, SLURM modules shared."""

from tests.conftest import worker_unit


def test_a_module_is_one_unit_and_the_slurm_modules_share_one():
    assert worker_unit("tests/test_book.py::test_x[a-b]") == "test_book"
    assert worker_unit("tests/test_book.py::test_y") == worker_unit("tests/test_book.py::test_x")
    assert worker_unit("tests/test_workflow.py::test_a") == "slurm"
    assert worker_unit("tests/test_workflow_slurm.py::test_b") == "slurm"
    assert worker_unit("tests/test_workflow_resume.py::test_c") == "test_workflow_resume"
