"""The `llmdyn` command: an example in every --help, `llmdyn chapters`, a local checkpoint."""

import re

import nbformat
import pytest
import yaml

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.runner import build as book_module
from llmdyn.runner.build import REPO, chapter_list, chapters, run_chapter


def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_every_subcommand_help_shows_an_example(capsys):
    top = _help(capsys)
    assert "examples:" in top and "llmdyn chapters" in top
    names = re.search(r"\{([a-z,-]+)\}", top).group(1).split(",")
    assert {"models", "chapters", "book", "lab", "measure", "workflow"} <= set(names)
    for argv in [[n] for n in names] + [["measure", "coupling"]]:
        text = _help(capsys, *argv)
        assert "example" in text.lower() and f"llmdyn {argv[0]}" in text, argv


def test_chapters_lists_every_chapter_with_its_paper_sections(capsys):
    assert main(["chapters"]) == 0
    out = capsys.readouterr().out
    listed = chapter_list()
    assert [c.name for c in listed] == chapters()
    assert all(c.covers.startswith("Paper") and c.title for c in listed)
    depth = next(c for c in listed if c.name == "05_depth_coupling")
    assert depth.title == "Coupling across depth"
    assert depth.covers.startswith("Paper A §3.1 and §5.1, Fig 3 and Fig 20")
    assert "05_depth_coupling" in out and "Paper A §3.1 and §5.1" in out


def _tiny_book(root, first_markdown):
    (root / "notebooks").mkdir()
    (root / "_toc.yml").write_text(yaml.safe_dump(
        {"root": "book/intro", "parts": [{"chapters": [{"file": "book/executed/01_x"}]}]}))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(first_markdown), nbformat.v4.new_code_cell("1")]
    nbformat.write(nb, root / "notebooks" / "01_x.ipynb")
    return root


def test_chapter_sections_come_from_the_italic_line(tmp_path):
    root = _tiny_book(tmp_path, "# A title\n\n*Paper B §4.1–4.3,\nFigs 2 and 3.*\n\nProse *here*.")
    assert chapter_list(root) == [("01_x", "A title", "Paper B §4.1–4.3, Figs 2 and 3")]


def test_chapter_without_a_paper_line_is_named(tmp_path):
    root = _tiny_book(tmp_path, "# A title\n\nNo sections named.")
    with pytest.raises(LlmdynError, match="chapter 01_x: .*italic"):
        chapter_list(root)


@pytest.fixture
def my_checkpoint(tmp_path, monkeypatch):
    """A tiny Llama saved with save_pretrained in ./my-checkpoint (the cwd is tmp_path)."""
    from llmdyn.models.loading import load_model

    monkeypatch.setenv("LLMDYN_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    m = load_model("tiny-llama")
    m.hf.save_pretrained(tmp_path / "my-checkpoint")
    m.tokenizer.save_pretrained(tmp_path / "my-checkpoint")
    return tmp_path / "my-checkpoint"


def test_book_resolves_a_relative_checkpoint_path(my_checkpoint):
    resolve = getattr(book_module, "resolve_model", None)
    if resolve is None:
        pytest.skip("llmdyn.runner.build.resolve_model comes with main's book.py (h-reliability)")
    assert resolve("./my-checkpoint") == str(my_checkpoint.resolve())
    assert resolve("smollm2-135m") == "smollm2-135m"


@pytest.mark.slow
def test_a_chapter_runs_on_a_local_checkpoint_directory(my_checkpoint, tmp_path):
    params = yaml.safe_load((REPO / "tests" / "smoke" / "01_trajectories.yaml").read_text())
    params.update(model=str(my_checkpoint.resolve()), compare_models=[])
    out = run_chapter("01_trajectories", tmp_path / "executed", params, cwd=tmp_path)
    nb = nbformat.read(out, as_version=4)
    assert nb.metadata.papermill.parameters["model"] == str(my_checkpoint.resolve())
    assert not nb.metadata.papermill.get("exception")
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
