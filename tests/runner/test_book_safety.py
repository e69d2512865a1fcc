"""`llmdyn book` refuses, before any work, what would destroy files or render a stale chapter."""

from __future__ import annotations

import nbformat
import pytest

from llmdyn import LlmdynError
from llmdyn.cli import main
from llmdyn.runner import build as book
from llmdyn.runner import cells_digest
from llmdyn.runner.build import MARKER, REPO, build_book, chapters


@pytest.fixture
def runs(monkeypatch):
    """Record chapter runs instead of executing them; write what papermill would."""
    calls = []

    def fake_run(name, out_dir, parameters, *, root=REPO, cwd=None):
        calls.append((name, dict(parameters)))
        if out_dir.resolve().is_relative_to(REPO):  # never write into the real book
            return
        out_dir.mkdir(parents=True, exist_ok=True)
        _executed(out_dir / f"{name}.ipynb", parameters)

    monkeypatch.setattr(book, "run_chapter", fake_run)
    monkeypatch.setattr(book, "build_html", lambda root, strict=True: root / "_build" / "html")
    return calls


def _executed(path, parameters, exception=None, ran=2, cells=2):
    """A notebook as papermill leaves it: ``ran`` of ``cells`` code cells completed."""
    nb = nbformat.v4.new_notebook()
    for i in range(cells):
        cell = nbformat.v4.new_code_cell("x = 1")
        cell.metadata["papermill"] = {"status": "completed" if i < ran else "pending"}
        nb.cells.append(cell)
    nb.metadata["papermill"] = {"parameters": dict(parameters), "exception": exception,
                                "end_time": "2026-01-01T00:00:00" if ran == cells else None}
    nbformat.write(nb, path)
    if ran == cells and not exception:  # run_chapter records a finished run's cells
        cells_digest.record(path, path)


def test_out_refuses_a_users_directory_and_touches_nothing(tmp_path, runs):
    (tmp_path / "_config.yml").write_text("mine")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.md").write_text("my notes")
    with pytest.raises(LlmdynError, match="not an llmdyn book build.*--force"):
        build_book("tiny-llama", out=tmp_path)
    assert (tmp_path / "_config.yml").read_text() == "mine"
    assert (tmp_path / "book" / "intro.md").read_text() == "my notes"
    assert runs == []


def test_out_force_and_previous_builds_are_allowed(tmp_path, runs):
    (tmp_path / "notes.txt").write_text("mine")
    build_book("tiny-llama", out=tmp_path, force=True)
    assert (tmp_path / MARKER).exists() and (tmp_path / "notes.txt").read_text() == "mine"
    build_book("tiny-llama", out=tmp_path)  # a previous llmdyn build: updated without --force
    assert len(runs) == 2 * len(chapters())


def test_out_dot_in_the_repository_builds_in_place(runs, monkeypatch):
    monkeypatch.chdir(REPO)
    assert build_book("tiny-llama", out=book.Path(".")) == REPO / "_build" / "html"
    assert not (REPO / MARKER).exists()


@pytest.mark.parametrize("only, match", [([], "name one or more chapters"),
                                         (["99_nope"], "99_nope.*05_depth_coupling")])
def test_only_must_name_chapters(tmp_path, runs, only, match):
    with pytest.raises(LlmdynError, match=match):
        build_book("tiny-llama", out=tmp_path / "new", only=only)
    assert runs == []


def test_cli_only_without_names_is_an_error(capsys):
    with pytest.raises(SystemExit):
        main(["book", "--only"])
    assert "expected at least one argument" in capsys.readouterr().err


def test_local_model_path_is_resolved_before_the_run(tmp_path, runs, monkeypatch):
    (tmp_path / "mine").mkdir()
    monkeypatch.chdir(tmp_path)
    build_book("./mine", out=tmp_path / "out")
    assert {params["model"] for _, params in runs} == {str(tmp_path / "mine")}
    with pytest.raises(LlmdynError, match="does not exist"):
        build_book("./typo", out=tmp_path / "out2")
    with pytest.raises(LlmdynError, match="does not exist"):
        build_book("mine/typo", out=tmp_path / "out3")  # shaped like a hub id


def test_stale_chapter_from_another_model_is_never_rendered(tmp_path, runs, monkeypatch):
    monkeypatch.setattr(book, "in_place_executed", lambda: tmp_path / "nothing")
    out = tmp_path / "out"
    build_book("tiny-gpt2", out=out)  # every chapter for another model
    first, *rest = chapters()
    runs.clear()
    with pytest.raises(LlmdynError, match=f"{rest[0]} \\(executed with .*tiny-gpt2"):
        build_book("tiny-llama", out=out, only=[first], strict=False)
    assert runs == []  # refused before running anything


def test_failed_chapter_is_not_rendered_by_a_later_run(tmp_path, runs, monkeypatch):
    monkeypatch.setattr(book, "in_place_executed", lambda: tmp_path / "nothing")
    out = tmp_path / "out"
    build_book("tiny-llama", out=out)
    first, second, *_ = chapters()
    _executed(out / "book" / "executed" / f"{second}.ipynb", {"model": "tiny-llama"},
              exception=True)
    with pytest.raises(LlmdynError, match=f"{second} \\(failed\\)"):
        build_book("tiny-llama", out=out, only=[first], strict=False)


def test_out_new_only_reuses_matching_chapters_from_the_in_place_book(tmp_path, runs,
                                                                      monkeypatch):
    first, *rest = chapters()
    in_place = tmp_path / "in_place"
    in_place.mkdir()
    for name in rest:
        _executed(in_place / f"{name}.ipynb", {"model": "tiny-llama"})
    monkeypatch.setattr(book, "in_place_executed", lambda: in_place)
    build_book("tiny-llama", out=tmp_path / "new", only=[first])
    assert [name for name, _ in runs] == [first]
    assert {p.stem for p in (tmp_path / "new" / "book" / "executed").glob("*.ipynb")} \
        == set(chapters())
    with pytest.raises(LlmdynError, match="not executed"):  # no match for another model
        build_book("tiny-gpt2", out=tmp_path / "new2", only=[first])


def test_cli_prints_a_refusal_as_one_message(tmp_path, runs, capsys):
    (tmp_path / "_config.yml").write_text("mine")
    assert main(["book", "--model", "tiny-llama", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llmdyn book: error: --out") and "Traceback" not in err
    assert (tmp_path / "_config.yml").read_text() == "mine"


def test_a_chapter_cut_off_by_a_signal_is_not_reused_or_rendered(tmp_path, runs, monkeypatch):
    # 3 of 11 cells run, no exception recorded, passed the reuse check.
    monkeypatch.setattr(book, "in_place_executed", lambda: tmp_path / "nothing")
    out = tmp_path / "out"
    build_book("tiny-gpt2", out=out)
    first, second, *_ = chapters()
    run = {"model": "tiny-gpt2"}
    _executed(out / "book" / "executed" / f"{second}.ipynb", run, ran=3, cells=11)
    assert book.unfinished(out / "book" / "executed" / f"{second}.ipynb") == (
        "3 of its 11 code cells ran")
    runs.clear()
    with pytest.raises(LlmdynError, match=f"{second} \\(3 of its 11 code cells ran\\)"):
        build_book("tiny-gpt2", out=out, only=[first])
    assert runs == []  # refused before any chapter ran
    monkeypatch.undo()  # the real build_html, which refuses it too
    with pytest.raises(LlmdynError, match=f"did not finish or were edited: .*{second} \\(3 of "
                                          "its 11"):
        book.build_html(out)


def _staged_book(tmp_path):
    """A staged book whose every chapter finished, its cells recorded as run_chapter does."""
    out = book.stage(tmp_path / "out")
    (out / "book" / "executed").mkdir(parents=True)
    for name in chapters():
        _executed(out / "book" / "executed" / f"{name}.ipynb", {"model": "tiny-gpt2"})
    return out


def test_an_edited_executed_chapter_is_not_rendered_and_the_message_names_it(tmp_path):
    # A hand-edited executed notebook was rendered as if computed.
    out = _staged_book(tmp_path)
    first, second, *_ = chapters()
    path = out / "book" / "executed" / f"{second}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="a better number\n")]
    nbformat.write(nb, path)
    with pytest.raises(LlmdynError, match=f"did not finish or were edited: {second} \\(its cells "
                                          f"differ from what papermill wrote.*llmdyn workflow "
                                          f"--directory {out} --rerun {second} \\(or llmdyn "
                                          f"book --out {out} --only {second}\\)"):
        book.build_html(out)
    cells_digest.digest_path(path).unlink()  # removing the record does not help
    with pytest.raises(LlmdynError, match=f"{second} \\(no record of its cells"):
        book.build_html(out)
    assert book.not_rendered(out / "book" / "executed" / f"{first}.ipynb") is None


def test_the_figure_steps_captions_do_not_count_as_an_edit(tmp_path):
    from llmdyn.data.figures import METADATA_KEY

    path = tmp_path / "05_depth_coupling.ipynb"
    _executed(path, {})
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBO"},
                                                  metadata={METADATA_KEY: {"name": "f"}})]
    nbformat.write(nb, path)
    cells_digest.record(path, path)
    nb.cells[0].outputs[0].data.update({"text/markdown": "caption", "text/html": "<p>"})
    nbformat.write(nb, path)  # what llmdyn.book.figure_files adds
    assert cells_digest.edited(path) is None
    nb.cells[0].outputs[0].data["image/png"] = "other"  # the figure itself does count
    nbformat.write(nb, path)
    assert "differ" in cells_digest.edited(path)


def test_a_full_disk_while_the_book_is_built_is_one_line(tmp_path, capsys, monkeypatch):
    # The workflow's chapter job is checked in tests/cli/test_cli_job.py.
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))

    monkeypatch.setattr(book, "run_chapter", full)
    monkeypatch.setattr(book, "in_place_executed", lambda: tmp_path / "nothing")
    assert main(["book", "--model", "tiny-llama", "--out", str(tmp_path / "out")]) == 1
    assert "llmdyn book: error: cannot write" in capsys.readouterr().err


def test_a_chapters_own_refusal_is_one_line_naming_it_and_a_bug_keeps_its_traceback(tmp_path):
    # A cell's LlmdynError (a bad parameter, a prompt beyond the context) reached the user as
    # papermill's 45-line traceback in `llmdyn book` and in the workflow job's log.
    from papermill.exceptions import PapermillExecutionError

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "llmdyn", "language": "python",
                                                           "display_name": "Python (llmdyn)"}})
    nb.cells = [nbformat.v4.new_code_cell('error = "LlmdynError"',
                                          metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("from llmdyn import LlmdynError\n"
                                          "raise {'LlmdynError': LlmdynError, 'bug': KeyError}"
                                          "[error]('seed must be >= 0,\\n got -1')")]
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "notebooks" / "99_refuses.ipynb")
    with pytest.raises(LlmdynError) as refused:
        book.run_chapter("99_refuses", tmp_path / "out", {}, root=tmp_path, cwd=tmp_path)
    assert str(refused.value) == "chapter 99_refuses: seed must be >= 0, got -1"
    with pytest.raises(PapermillExecutionError, match="KeyError"):
        book.run_chapter("99_refuses", tmp_path / "out", {"error": "bug"}, root=tmp_path,
                         cwd=tmp_path)
    assert not list((tmp_path / "out").iterdir())  # neither left an executed notebook
