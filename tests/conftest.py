"""Shared fixtures: tiny random models (no download) and, for slow tests, SmolLM2-135M."""

from __future__ import annotations

import os
import resource
import tempfile
import time
from pathlib import Path

# One BLAS/OpenMP thread in every test process and in what it starts (kernels, Snakemake, CLIs),
# as the workflow's jobs run (workflow/Snakefile, ONE_THREAD). Two processes side by side (two
# xdist workers, or the two lanes of a smoke build) with two threads each oversubscribe a 2-core
# machine, and OpenMP's spinning threads then burn CPU: a batched SVD of 45 32x32 matrices took
# 1.5 CPU-s on 2 threads beside other work, against 6.5 ms on one.
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

from llmdyn.core.paths import REPO  # noqa: E402
from llmdyn.models.loading import load_model  # noqa: E402
from llmdyn.runner import kernel_fork  # noqa: E402
from tests import user_files  # noqa: E402
from tests.helpers import write_corpus  # noqa: E402

torch.set_num_threads(1)

TINY = ["tiny-gpt2", "tiny-llama", "tiny-neox", "tiny-gemma3"]
FRANCE = "What is the capital of France? The capital is"


@pytest.fixture(autouse=True)
def _results_in_tmp(tmp_path, monkeypatch):
    """Each test has its own results root (the store, suites, ViT grids, tables)."""
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path / "results"))


@pytest.fixture(scope="module", autouse=True)
def _module_results_in_tmp(tmp_path_factory):
    """Each module's fixtures (a smoke book, the any-model matrix) have their own results root.

    Autouse, so it is set up before the module's other fixtures; session-scoped fixtures use
    the session's root (`pytest_configure`).
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LLMDYN_RESULTS", str(tmp_path_factory.mktemp("module-results")))
        yield


# Set once per process, before any fixture: the session's results root and llmdyn cache. xdist's
# workers inherit the controller's (SESSION_ENV says they are set), so the session has one
# cache, whose converted models and downloads link to the user's (tests/user_files.py).
SESSION_ENV = user_files.SESSION_ENV


def pytest_configure(config):
    """Point LLMDYN_RESULTS and LLMDYN_CACHE at the session's own directories; snapshot the
    user's results/ and cache (the controller only), compared in `pytest_sessionfinish`."""
    if os.environ.get(SESSION_ENV):
        return  # an xdist worker: the controller set them
    user = {"results/": REPO / "results", "llmdyn cache": user_files.user_cache()}
    config._llmdyn_user = {name: (path, user_files.snapshot(path),
                                  user_files.other_llmdyn_processes(REPO if name == "results/"
                                                                    else None))
                           for name, path in user.items()}
    results = Path(tempfile.mkdtemp(prefix="llmdyn-test-results-"))
    cache = user_files.session_cache(user["llmdyn cache"])
    config._llmdyn_session = (results, cache)
    os.environ.update({SESSION_ENV: str(user["llmdyn cache"]), "LLMDYN_RESULTS": str(results),
                       "LLMDYN_CACHE": str(cache)})


def pytest_sessionfinish(session, exitstatus):
    """Fail the session if the user's results/ or cache changed during it (the controller).

    A change while another llmdyn run (not the tests') was alive there is reported, not failed:
    that run may have made it.
    """
    config = session.config
    user = getattr(config, "_llmdyn_user", None)
    if user is None:
        return
    for path in getattr(config, "_llmdyn_session", ()):
        user_files.remove(path)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for name, (path, before, others) in user.items():
        changed = user_files.changes(before, user_files.snapshot(path))
        if not changed:
            continue
        others = others + user_files.other_llmdyn_processes(REPO if name == "results/" else None)
        text = (f"the tests changed the user's {name} ({path}): {'; '.join(changed[:20])}"
                f"{f' and {len(changed) - 20} more' if len(changed) > 20 else ''}")
        if others:
            text += f" (other llmdyn processes ran there: {sorted(set(others))}; not counted)"
        elif session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if reporter is not None:
            reporter.write_line(f"llmdyn: {text}", red=not others, yellow=bool(others))


@pytest.fixture(scope="session", params=TINY)
def tiny64(request):
    """Each tiny architecture in float64, seeded (for finite differences)."""
    return load_model(request.param, seed=0, dtype=torch.float64)


@pytest.fixture(scope="session")
def smollm2():
    """The default real model (float32); first use converts the packaged GGUF (~40 s)."""
    return load_model("smollm2-135m")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    """A small synthetic corpus for the tiny training suite (12 documents of 400 words)."""
    return write_corpus(tmp_path_factory.mktemp("corpus"), n_docs=12, words=400)


def pytest_addoption(parser):
    parser.addoption("--models", action="store_true",
                     help="also run the full chapters × models matrix (make test-models)")
    parser.addoption("--book-models", action="store_true",
                     help="the default-size book for each packaged model and a suite checkpoint "
                          "in turn, in one directory (make test-book-models)")
    parser.addoption("--pdf", metavar="BOOK_ROOT", default=None,
                     help="check the PDF that `make pdf` just built under BOOK_ROOT/_build "
                          "(make pdf runs it)")
    parser.addoption("--cpu-times", metavar="TSV", default=None,
                     help="append each test's wall and CPU seconds (itself, its reaped "
                          "child processes (Snakemake) and forked kernels) to TSV")


# `make test` runs xdist workers (`-n auto`: the cores plus one). Each module goes to one worker,
# so its module-scoped fixtures (a smoke book, the any-model matrix) are built once; the two
# modules that submit to the one-node SLURM share a worker, so that neither's jobs wait behind
# the other's.
SHARED_WORKER = {"test_workflow": "slurm", "test_workflow_slurm": "slurm"}


# The longest units first, so that no worker starts one near the end (wall seconds of each at
# 193c126 on 2 idle cores: 355, 283, 194, 131, 100, 88); the rest keep their collection order.
# xdist's own order (most tests first) started the smoke book and the SLURM unit late.
LONGEST_FIRST = ["slurm", "test_book", "test_any_model", "test_book_models", "test_coverage",
                 "test_workflow_resume"]


def worker_unit(nodeid: str) -> str:
    """The unit of tests that one xdist worker runs together: the module, or its shared name."""
    module = Path(nodeid.split("::", 1)[0]).stem
    return SHARED_WORKER.get(module, module)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than the cores this process may use.

    Many tests wait (on a kernel starting, Snakemake polling, a SLURM queue); the extra worker
    runs while they do. Measured on 2 cores: 15 min 26 s with 2 workers, 14 min 0 s with 3, the
    same CPU seconds.
    """
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Schedule by `worker_unit`. (xdist's own ``--dist loadgroup`` marks do not reach the
    scheduler under pytest 9, which no longer reads the node id xdist rewrites.)"""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # keep the order of `pytest_collection_modifyitems`

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_unit(nodeid)

    return ModuleScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """The longest units first (`LONGEST_FIRST`); tests marked `models` (the full matrix of
    tests/runner/test_any_model.py) need --models."""
    rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(worker_unit(item.nodeid), len(rank)))  # stable
    if config.getoption("--models"):
        return
    skip = pytest.mark.skip(reason="the full chapters × models matrix: make test-models")
    for item in items:
        if item.get_closest_marker("models") is not None:
            item.add_marker(skip)


def _cpu_seconds() -> float:
    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN))
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
            + kernel_fork.kernel_cpu_seconds())  # kernels forked by our server (not our children)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With --cpu-times: where the suite's CPU goes, robust to a busy machine (wall is not)."""
    path = item.config.getoption("--cpu-times")
    if path is None:
        yield
        return
    wall, cpu = time.perf_counter(), _cpu_seconds()
    yield
    with open(path, "a", encoding="utf-8") as out:
        out.write(f"{item.nodeid}\t{time.perf_counter() - wall:.2f}\t"
                  f"{_cpu_seconds() - cpu:.2f}\n")
