"""Run the chapters with papermill for one model and build the Jupyter Book (`llmdyn` command)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from llmdyn import LlmdynError, __version__
from llmdyn.book import buildfacts, buildtimes, figure_files, gallery, static
from llmdyn.core.atomic import not_regular
from llmdyn.core.paths import REPO
from llmdyn.models.files import looks_like_path
from llmdyn.runner import cells_digest
from llmdyn.runner.executed import not_rendered, unfinished

KERNEL = "llmdyn"
BOOK_FILES = ("_config.yml", "_toc.yml", "book")
MARKER = ".llmdyn-book"  # written by stage(): this directory is an llmdyn build, safe to update


def toc_files(root: Path = REPO) -> list[str]:
    """Every page of ``_toc.yml`` in book order (e.g. ``"book/executed/05_depth_coupling"``)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    return [ch["file"] for part in toc.get("parts", []) for ch in part.get("chapters", [])]


def chapters(root: Path = REPO) -> list[str]:
    """Chapter names in book order, read from ``_toc.yml`` (e.g. ``"05_depth_coupling"``)."""
    return [Path(f).name for f in toc_files(root) if f.startswith("book/executed/")]


def refuse_unfinished(book_root: Path) -> None:
    """Refuse a book whose chapters of ``_toc.yml`` did not all finish (:func:`not_rendered`)."""
    executed = book_root / "book" / "executed"
    cut = {name: why for name in chapters(book_root)
           if (why := not_rendered(executed / f"{name}.ipynb"))}
    if cut:
        names = " ".join(cut)
        here = book_root.resolve() == REPO  # else name the build's directory: the advice
        where, out = ("", "") if here else (f" --directory {book_root}", f" --out {book_root}")
        raise LlmdynError(f"the book would render chapters that did not finish or were edited: "
                          f"{'; '.join(f'{n} ({w})' for n, w in cut.items())}. Run them again "
                          f"with your run's options: llmdyn workflow{where} --rerun {names} (or "
                          f"llmdyn book{out} --only {names})")


def _hide_injected_parameters(path: Path) -> None:
    """Papermill's injected-parameters cell is bookkeeping: keep it in the file, not the page."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    nbformat.write(nb, path)


def kernel_config(*, fork: bool = True) -> Any:
    """Kernel-manager settings that keep the kernel's sockets private, and its log quiet.

    ipykernel warns "Kernel is running over TCP without encryption" on every start. Rather than
    hide that, encrypt: jupyter_client provisions CurveZMQ keys for kernels that declare support
    (ours does). A libzmq without CURVE (pyzmq's wheels have it) keeps the plain-TCP default.
    ``fork``: fork the kernel from a process that has imported torch and transformers
    (:mod:`llmdyn.runner.kernel_fork`), which saves a process that runs several chapters most
    of each later kernel's imports.
    """
    import zmq
    from traitlets.config import Config

    config = Config({"EncryptedProvisioner": {"fork_from_preloaded": fork}})
    if zmq.has("curve"):
        config.KernelManager.transport_encryption = "auto"
    return config


# After a cell's reply, nbclient waits this long for the kernel's last output messages, and
# papermill makes running out of it an error ("Timeout waiting for IOPub output"). nbclient's
# default, 4 s, is too short on a loaded machine; a minute keeps a real hang an error.
IOPUB_TIMEOUT_S = 60


def run_chapter(name: str, out_dir: Path, parameters: dict[str, Any], *,
                root: Path = REPO, cwd: Path | None = None, fork: bool = True) -> Path:
    """Execute ``notebooks/<name>.ipynb`` with papermill into ``out_dir/<name>.ipynb``.

    A failing cell raises (papermill's PapermillExecutionError): a broken chapter must stop the
    build, never be rendered. A cell's ``LlmdynError`` (a bad parameter, a prompt beyond the
    model's context) is raised as one ``LlmdynError`` naming the chapter. Papermill saves
    the notebook after every cell, so it writes to a temporary name beside the target, and
    only a notebook that finished (see :func:`unfinished`) is renamed into place: an
    interrupted chapter leaves no executed notebook. Just before, the figures it showed
    replace its folder ``figures/<name>/``
    (:func:`llmdyn.book.figure_files.publish_chapter_figures`), so the folder holds only what
    this run drew. The progress bar names the chapter and the model. ``fork``: see
    :func:`kernel_config` (a process that runs one chapter gains nothing from it).
    """
    import papermill

    source = root / "notebooks" / f"{name}.ipynb"
    if not source.exists():
        raise LlmdynError(f"no chapter {source}; chapters: {', '.join(chapters(root))}")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}.ipynb"
    _sweep_partial(out_dir, name)
    partial = out_dir / f".{name}.{os.getpid()}.partial.ipynb"
    desc = f"{name} [{parameters.get('model', 'default model')}]"
    try:
        try:
            papermill.execute_notebook(str(source), str(partial), parameters=parameters,
                                       kernel_name=KERNEL, cwd=str(cwd or root),
                                       progress_bar={"desc": desc},
                                       config=kernel_config(fork=fork),
                                       iopub_timeout=IOPUB_TIMEOUT_S)
        except papermill.PapermillExecutionError as err:
            if err.ename == "LlmdynError":  # the chapter's own refusal: one line, no traceback
                raise LlmdynError(f"chapter {name}: {' '.join(str(err.evalue).split())}") \
                    from None
            raise  # any other error is a bug: its traceback stays
        why = unfinished(partial)
        if why:  # e.g. the kernel was stopped by a signal and papermill returned anyway
            raise LlmdynError(f"chapter {name} did not finish ({why}); run it again")
        _hide_injected_parameters(partial)
        figures = figure_files.publish_chapter_figures(partial, name, out_dir, source_url(root))
        figure_files.replace_figure_folder(figures, name, out_dir)
        cells_digest.record(partial, target)  # checked before the book renders it
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _sweep_partial(out_dir: Path, name: str) -> None:
    """Remove temporary notebooks of ``name`` whose papermill process is gone."""
    for old in out_dir.glob(f".{name}.*.partial.ipynb"):
        try:
            os.kill(int(old.name.split(".")[-3]), 0)
        except (ValueError, ProcessLookupError):
            old.unlink(missing_ok=True)
        except PermissionError:
            pass  # another user's live run


def check_out(out: Path, *, force: bool = False) -> None:
    """Refuse an ``--out`` that would overwrite a user's files.

    Allowed: a new or empty directory, or a previous llmdyn build (it holds the ``MARKER``
    file); anything else only with ``force``.
    """
    if out.exists() and not out.is_dir():
        raise LlmdynError(f"--out {out} is {not_regular(out) or 'a file'}; give a directory "
                          "for the book")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists() and not force:
        raise LlmdynError(
            f"--out {out} is a non-empty directory that is not an llmdyn book build (no "
            f"{MARKER} file). Building there would overwrite its {', '.join(BOOK_FILES)}. "
            "Choose a new or empty directory, or pass --force to overwrite them.")


def stage(out: Path, root: Path = REPO) -> Path:
    """Copy the book's pages and configuration into ``out`` so it builds on its own."""
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text(json.dumps({"llmdyn": __version__}) + "\n")
    for name in BOOK_FILES:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, out / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("executed", "generated"))
        else:
            shutil.copy2(src, out / name)
    return out


def source_url(book_root: Path) -> str:
    """Where the notebooks' sources are read on the web: ``<repository>/blob/<branch>``."""
    config = book_root / "_config.yml"  # a tree of notebooks alone (a test) has none
    repo = yaml.safe_load(config.read_text()).get("repository", {}) if config.exists() else {}
    return f"{repo.get('url', '').rstrip('/')}/blob/{repo.get('branch', 'main')}"


def write_generated(book_root: Path) -> Path:
    """Before the HTML build: check the chapters' figure files, write the gallery and build facts.

    Each chapter's run wrote its figures to ``book/executed/figures/<chapter>/``; every figure
    its notebook names must be there, from that run
    (:func:`llmdyn.book.figure_files.named_figure_files`). The gallery cards and the landing
    page's build facts go to ``book/generated/``, which the committed pages
    ``book/gallery.md`` and ``book/intro.md`` include. Returns that directory.
    """
    executed, names = book_root / "book" / "executed", chapters(book_root)
    for name in names:
        figure_files.named_figure_files(executed, name)
    generated = book_root / "book" / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    if "book/gallery" in toc_files(book_root):  # a partial book has no gallery page
        (generated / "gallery.md").write_text(gallery.gallery_markdown(executed, names))
    from llmdyn.claims import pages  # here: it imports scipy.stats, which a chapter job need not

    # the answer, the abstracts checked, the scorecard's
    measured = pages.write(generated, executed, names, described=static.model_descriptions())
    (generated / "build_facts.md").write_text(
        buildfacts.render(buildfacts.collect(executed, names), measured=measured))
    (generated / "build_times.md").write_text(buildtimes.report(book_root))  # Performance page
    return generated


def build_html(book_root: Path, *, strict: bool = True) -> Path:
    """Build ``<book_root>/_build/html`` with Jupyter Book 1 (no execution, offline).

    The figures, the gallery and the build facts are generated first (:func:`write_generated`).
    A chapter of ``_toc.yml`` whose executed notebook did not finish (:func:`unfinished`) is
    refused: a half-run chapter is never rendered.
    """
    executed = book_root / "book" / "executed"
    refuse_unfinished(book_root)
    write_generated(book_root)
    static.copy_static(book_root)
    for stale in ("_images", "_downloads"):  # an earlier build's figures, drawn for another model
        shutil.rmtree(book_root / "_build" / "html" / stale, ignore_errors=True)
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jupyter_book), "build", str(book_root), "--builder", "html",
           "--config", str(static.html_config(book_root))]
    if strict:
        cmd += ["-W", "--keep-going"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise LlmdynError(f"jupyter-book build failed:\n{result.stdout[-4000:]}\n"
                          f"{result.stderr[-4000:]}")
    html = book_root / "_build" / "html"
    # Every figure's vector file also at a path one can guess: html/figures/<chapter>/<name>.svg,
    # only those the executed chapters name (an earlier model's build may have drawn others)
    figure_files.copy_vector_files(executed, chapters(book_root), html / "figures")
    return html


def resolve_model(model: str, base: Path | None = None, what: str = "--model") -> str:
    """A local model path made absolute (chapters run with another working directory).

    Names and hub ids pass through; a path that does not exist is refused before any run.
    ``base``: what a relative path is relative to (None: the cwd); ``what``: where it was given.
    """
    if not model.strip():  # Path("") is the working directory
        raise LlmdynError(f"{what} is empty; give a model name, a hub id or a local directory")
    path = Path(base or ".") / Path(model).expanduser()
    if path.exists():
        return str(path.resolve())
    if looks_like_path(model):  # e.g. results/typo: refused here, never sent to the hub
        raise LlmdynError(f"{what} {model}: directory {path.resolve()} does not exist; a "
                          "model directory holds config.json and model.safetensors")
    return model


def _check_only(only: Sequence[str] | None) -> list[str]:
    known = chapters()
    if only is None:
        return known
    unknown = [name for name in only if name not in known]
    if not only or unknown:
        raise LlmdynError(f"--only: got {list(only)}; name one or more chapters of "
                          f"{', '.join(known)}")
    return list(only)


def _ran_with(path: Path) -> dict[str, Any] | None:
    """Parameters papermill injected into an executed chapter; None unless it finished."""
    import nbformat

    if not_rendered(path):
        return None
    meta = nbformat.read(path, as_version=4).metadata.get("papermill", {})
    return dict(meta.get("parameters") or {})


def in_place_executed() -> Path:
    """The executed chapters of the in-place book (reused by ``--out`` builds when they match)."""
    return REPO / "book" / "executed"


def _reuse_or_refuse(executed: Path, others: Sequence[str], run: dict[str, Any]) -> None:
    """Every chapter not run now must have been executed, without error, with `run`'s parameters.

    A staged build copies matching ones from the in-place book. Anything else is refused
    before any chapter runs: a stale chapter from another model must never be rendered.
    """
    stale = []
    for name in others:
        target = executed / f"{name}.ipynb"
        source = in_place_executed() / f"{name}.ipynb"
        if _ran_with(target) != run and source != target and _ran_with(source) == run:
            executed.mkdir(parents=True, exist_ok=True)
            shutil.copy2(cells_digest.digest_path(source), cells_digest.digest_path(target))
            shutil.copy2(source, target)
            figure_files.copy_chapter_figures(source.parent, executed, name)  # that run's
        if _ran_with(target) != run:
            got = _ran_with(target)
            why = not_rendered(target) or f"executed with {got}"
            stale.append(f"{name} ({why})")
    if stale:
        raise LlmdynError(
            f"the book for {run} would show chapters from another run: {'; '.join(stale)}. "
            "Run them too (add them to --only, or drop --only), so every page matches.")


def build_book(model: str, *, out: Path | None = None, only: Sequence[str] | None = None,
               parameters: dict[str, Any] | None = None, strict: bool = True,
               force: bool = False) -> Path:
    """Run every chapter (or ``only`` some) for ``model`` and build the HTML book.

    Everything is checked before the first chapter runs: the chapter names, the model path
    (made absolute), that ``out`` holds no user files, and that the chapters not run now were
    executed with this model and these parameters.

    Args:
        model: the model every chapter runs on.
        out: None builds in place (``book/executed``, ``_build/html``); a directory stages a
            separate copy of the book there, for a second model beside the default one.
        only: chapter names to run (all by default; the others must already be executed
            with the same model and parameters).
        parameters: extra papermill parameters passed to every chapter.
        strict: build with warnings as errors.
        force: allow ``out`` to be a non-empty directory that is not an llmdyn build.

    Returns:
        The ``_build/html`` directory.
    """
    names = _check_only(only)
    run = {"model": resolve_model(model), **(parameters or {})}
    in_place = out is None or Path(out).resolve() == REPO
    if not in_place:
        check_out(Path(out), force=force)
    book_root = REPO if in_place else stage(Path(out))
    executed = book_root / "book" / "executed"
    _reuse_or_refuse(executed, [c for c in chapters() if c not in names], run)
    for name in names:
        run_chapter(name, executed, run, cwd=REPO)
    return build_html(book_root, strict=strict)


class Chapter(NamedTuple):
    """One chapter as ``llmdyn chapters`` lists it."""

    name: str  # notebook name, e.g. "05_depth_coupling"
    title: str  # the notebook's "# " heading
    covers: str  # the italic line under it, e.g. "Paper A §3.1 and §5.1, Fig 3 and Fig 20"


def chapter_list(root: Path = REPO) -> list[Chapter]:
    """The chapters in book order with the paper sections each covers.

    Both come from the notebook itself (its first markdown cell: the heading and the italic
    "*Paper … §…*" line under it), so the list cannot drift from the book.
    """
    import nbformat

    out = []
    for name in chapters(root):
        nb = nbformat.read(root / "notebooks" / f"{name}.ipynb", as_version=4)
        md = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
        title = re.search(r"^#\s+(.+)$", md, re.MULTILINE)
        covers = re.search(r"^\*(Paper\b[^*]+)\*", md, re.MULTILINE)
        if not (title and covers):
            raise LlmdynError(f"chapter {name}: its first markdown cell needs a '# ' heading and "
                              "an italic '*Paper A §…*' line naming the sections it covers")
        out.append(Chapter(name, title.group(1).strip(),
                           " ".join(covers.group(1).split()).rstrip(".")))
    return out
