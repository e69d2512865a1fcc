"""One setting moves every result llmdyn writes; an empty setting is refused."""

from pathlib import Path

import pytest

from llmdyn import LlmdynError
from llmdyn.book.params import GeneralizationParams, TrainingParams
from llmdyn.core.paths import REPO, results_root
from llmdyn.core.store import ResultStore
from llmdyn.models.files import cache_dir
from llmdyn.sweep.job import result_path
from llmdyn.training import suite
from llmdyn.vision import grids


def test_every_default_root_follows_llmdyn_results(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path))
    assert results_root() == tmp_path
    assert ResultStore("m").root == tmp_path
    assert suite.default_root() == tmp_path / "suite"
    assert grids.default_root(grids.get_grid("tiny"), "digits") == tmp_path / "vit/tiny/digits"
    assert result_path("org/name") == tmp_path / "measure" / "org_name.json"
    assert TrainingParams().suite_dir == tmp_path / "suite"
    p = GeneralizationParams()
    assert (p.suite_dir, p.table_path) == (tmp_path / "suite",
                                           tmp_path / "generalization" / "population.csv")
    given = GeneralizationParams(suite_root="s", out_dir="o")  # a chapter's own value wins
    assert (given.suite_dir, given.table_path) == (Path("s"), Path("o/population.csv"))


def test_unset_means_results_in_the_working_directory(monkeypatch):
    monkeypatch.delenv("LLMDYN_RESULTS")
    assert results_root() == Path("results")
    assert suite.default_root() == Path("results/suite")


def test_the_train_commands_root_defaults_to_the_setting(tmp_path, monkeypatch):
    from llmdyn.cli import build_parser

    assert build_parser("train").parse_args(["train"]).root is None  # -> default_root()
    assert build_parser("train-vit").parse_args(["train-vit"]).root is None


@pytest.mark.parametrize("name, read", [("LLMDYN_RESULTS", results_root),
                                        ("LLMDYN_CACHE", cache_dir)])
@pytest.mark.parametrize("value", ["", "  "])
def test_a_setting_that_is_set_but_empty_is_refused(monkeypatch, name, read, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(LlmdynError, match=f"^{name} is set but empty, which would write into "
                                          f"the working directory; unset it"):
        read()


def test_the_test_session_uses_its_own_results_and_cache():
    """tests/conftest.py's pytest_configure: no test reads or writes the user's."""
    from tests.user_files import user_cache  # the user's, as found before the session

    assert not results_root().resolve().is_relative_to(REPO)
    assert "llmdyn-test-cache-" in cache_dir().name
    assert cache_dir().resolve() != user_cache().resolve()
