"""One book directory, built for one model, then another, then the first again.

`make book MODEL=gemma3-270m` after a SmolLM2 build kept SmolLM2's comparison figure and the
gallery linked a label no page had, so the HTML failed under -W. At smoke size, each build here
is the whole workflow, HTML included, with warnings as errors; after each, every executed
notebook ran on that build's model and every figure file is the one its notebook names; after
the last, a dry run lists nothing.

To stay cheap for `make test`, the book has two of the chapters, 04 and 05 (05 reads 04's
Jacobians and draws the comparison that went stale), and every other page, the gallery
included: a copy of the sources with the other chapters left out of ``_toc.yml`` (the gallery
lists their figures as not in this book) and out of the scorecard. The models are tiny-llama
and tiny-gemma3: the smoke files compare with tiny-gemma3, so the tiny-gemma3 build draws no
comparison, as the Gemma book did before compare models became relative. ``make
test-book-models`` runs the same sequence at default size on the packaged models and the
training suite's 6-block checkpoint (``DEFAULT_SEQUENCE``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from llmdyn.book.figure_files import chapter_figures
from llmdyn.runner.build import REPO

CHAPTERS = ["04_jacobian_alignment", "05_depth_coupling"]
TINY_SEQUENCE = ["tiny-llama", "tiny-gemma3", "tiny-llama"]


def partial_sources(copy: Path, chapters: list[str]) -> Path:
    """A copy of the book's sources whose ``_toc.yml`` has only ``chapters`` of the chapters."""
    for name in ("workflow", "notebooks", "lib", "data", "book"):
        shutil.copytree(REPO / name, copy / name, symlinks=True,
                        ignore=shutil.ignore_patterns("executed", "generated", "__pycache__"))
    (copy / "tests" / "smoke").mkdir(parents=True)
    for chapter in chapters:  # a params file naming a chapter not in the book is refused
        shutil.copy2(REPO / "tests" / "smoke" / f"{chapter}.yaml", copy / "tests" / "smoke")
    shutil.copy2(REPO / "_config.yml", copy / "_config.yml")
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    for part in toc["parts"]:
        part["chapters"] = [c for c in part["chapters"] if not c["file"].startswith(
            "book/executed/") or c["file"].rsplit("/", 1)[-1] in chapters]
    (copy / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    for part in (copy / "book" / "scorecard_parts").glob("[0-9]*.md"):  # the scorecard pastes
        if part.stem not in chapters:  # each chapter's table: not those of the others
            part.write_text(f"Chapter {part.stem} is not in this book.\n")
    return copy


def workflow(sources: Path, model: str, *extra: str) -> str:
    """``llmdyn workflow`` of the copy (its own library, so its ``_toc.yml``), in place."""
    env = {**os.environ, "PYTHONPATH": str(sources / "lib")}
    cmd = [sys.executable, "-m", "llmdyn", "workflow", "--model", model, "--cores", "2",
           "--config", "chapter_params=tests/smoke", *extra]
    done = subprocess.run(cmd, cwd=sources, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def check_build(root: Path, model: str, chapters: list[str]) -> None:
    """Every chapter ran on ``model``; the figure files and the HTML hold that run's figures."""
    executed, html = root / "book" / "executed", root / "_build" / "html"
    for chapter in chapters:
        nb = json.loads((executed / f"{chapter}.ipynb").read_text())
        assert nb["metadata"]["papermill"]["parameters"]["model"] == model, chapter
        stems = [s for stems in chapter_figures(executed / f"{chapter}.ipynb").drawn.values()
                 for s in stems]
        files = sorted(p.name for p in (executed / "figures" / chapter).iterdir())
        assert files == sorted(f"{s}.{ext}" for s in stems for ext in ("png", "svg")), chapter
        # the bytes are the notebook's own image: checked by the HTML job (named_figure_files)
        svgs = sorted(p.name for p in (html / "figures" / chapter).iterdir())
        assert svgs == sorted(f"{s}.svg" for s in stems), chapter
    pages = "".join(p.read_text() for p in html.rglob("*.html"))
    images = {p.name for p in (html / "_images").iterdir()}
    assert images and all(name in pages for name in images)  # no earlier build's image left


def compare_card(html: Path) -> str:
    """The gallery card of paper A's Fig 20 (the comparison across models)."""
    gallery = (html / "book" / "gallery.html").read_text()
    start = gallery.index("Paper A, Fig 20")
    return gallery[gallery.rindex('<div class="sd-card', 0, start):
                   gallery.index("Paper A, Fig 21", start)]


@pytest.mark.slow
def test_one_directory_builds_the_book_for_each_model_in_turn(tmp_path):
    root = partial_sources(tmp_path / "book", CHAPTERS)
    for model in TINY_SEQUENCE:
        out = workflow(root, model)
        assert "Building the HTML book" in out
        check_build(root, model, CHAPTERS)
        card = compare_card(root / "_build" / "html")
        drawn = "coupling-compare" in chapter_figures(
            root / "book" / "executed" / "05_depth_coupling.ipynb").drawn
        assert drawn == (model != "tiny-gemma3")  # the smoke files compare with tiny-gemma3
        assert ("#fig-coupling-compare" in card) == drawn
        assert ("Not drawn for this model" in card) == (not drawn), card
        page = (root / "_build" / "html" / "book" / "executed" / "05_depth_coupling.html")
        assert ("is not drawn for this model: no compare model other than tiny-gemma3"
                in page.read_text()) == (not drawn)
    again = workflow(root, TINY_SEQUENCE[-1], "--dry-run")
    assert "Nothing to be done" in again and not re.search(r"Chapter \S+ with model", again)


SUITE_CHECKPOINT = "results/suite/m-seed0/step512"  # the default suite's 6-block model
DEFAULT_SEQUENCE = ["smollm2-135m", "gemma3-270m", SUITE_CHECKPOINT, "smollm2-135m"]


@pytest.mark.slow
def test_default_size_book_for_each_model_in_turn(tmp_path, request):
    """``make test-book-models``: the same at default size, hours on 2 cores (not in make test).

    The directory's ``results/`` starts empty (the first build trains the suite whose
    checkpoint the third build runs on). Prints each build's wall time.
    """
    if not request.config.getoption("--book-models"):
        pytest.skip("the default-size sequence of models: make test-book-models")
    from llmdyn.runner.build import chapters
    from llmdyn.runner.workflow import run_workflow

    names, first, times = chapters(), {}, []
    for spec in DEFAULT_SEQUENCE:
        model = str(tmp_path / spec) if spec == SUITE_CHECKPOINT else spec
        start = time.perf_counter()
        run_workflow(model=model, directory=tmp_path, cores=os.cpu_count())
        times.append((spec, time.perf_counter() - start))
        print(f"\nbook for {spec}: {times[-1][1] / 60:.1f} min wall", flush=True)
        check_build(tmp_path, model, names)
        executed = tmp_path / "book" / "executed"
        for chapter in names:  # the default book's figures, or the page says why not
            shown = chapter_figures(executed / f"{chapter}.ipynb")
            first.setdefault(chapter, set(shown.drawn))
            absent = first[chapter] - set(shown.drawn)
            assert absent <= set(shown.not_drawn), (spec, chapter, absent)
        assert "coupling-compare" in chapter_figures(
            executed / "05_depth_coupling.ipynb").drawn, spec  # compare models are relative
    again = run_workflow(model=DEFAULT_SEQUENCE[-1], directory=tmp_path, dry_run=True)
    assert "Nothing to be done" in again, again
    print("\n".join(f"{spec}\t{seconds:.0f} s" for spec, seconds in times))
