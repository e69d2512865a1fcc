"""The package's shape: declared layers (import-linter), subpackage docs, and honest closures."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmdyn.models.convert import MANIFEST
from llmdyn.models.packaged import PACKAGED
from llmdyn.runner.build import REPO, chapters
from llmdyn.runner.workflow import chapter_sources, snakemake_command

LIB = REPO / "lib" / "llmdyn"
BIN = Path(sys.executable).parent


def test_import_layers_hold():
    """Layers, the plots/model wall and acyclic siblings, as pyproject.toml declares them."""
    out = subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


@pytest.mark.parametrize("package", sorted(p.name for p in LIB.iterdir()
                                           if (p / "__init__.py").exists()))
def test_every_subpackage_says_what_lives_there_and_what_it_may_import(package):
    text = (LIB / package / "__init__.py").read_text()
    assert text.startswith('"""') and "May import" in text, package


def _copy_tree(root: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "executed", "generated", "*.egg-info")
    for name in ("lib", "notebooks", "data", "workflow", "book"):
        shutil.copytree(REPO / name, root / name, ignore=ignore)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(REPO / name, root / name)


# The model chapters: their inputs are sources and the (tiny) model, no training jobs.
MODEL_CHAPTERS = [c for c in chapters() if c not in {"08_training", "09_generalization", "10_vit"}]


def _planned_chapters(root: Path, work: Path) -> list[str]:
    cmd = snakemake_command(dry_run=True, directory=work, snakefile=root / "workflow" / "Snakefile",
                            config={"model": "tiny-llama", "only_chapters": MODEL_CHAPTERS},
                            targets=[f"book/executed/{c}.ipynb" for c in MODEL_CHAPTERS],
                            extra=["--rerun-triggers", "mtime"])
    out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return sorted(set(re.findall(r"Chapter (\S+) with model", out.stdout)))


def test_a_plot_edit_reruns_the_chapters_that_draw_with_it_and_no_other(tmp_path, monkeypatch):
    root, work = tmp_path / "repo", tmp_path / "work"
    monkeypatch.setenv("LLMDYN_RESULTS", str(work / "results"))  # the stamps written below
    _copy_tree(root)
    executed = work / "book" / "executed"
    executed.mkdir(parents=True)
    (tmp_path / "converted").mkdir()
    (tmp_path / "converted" / MANIFEST).write_text("{}")
    for spec in PACKAGED:  # the packaged models' conversions, as the first build left them
        (work / "results" / "models").mkdir(parents=True, exist_ok=True)
        (work / "results" / "models" / f"{spec}.json").write_text(
            json.dumps({"directory": str(tmp_path / "converted")}))
    for chapter in MODEL_CHAPTERS:  # every chapter built after its sources, as Snakemake would
        for output in (f"results/sources/{chapter}.sha256", f"results/chapters/{chapter}.json",
                       f"book/executed/{chapter}.ipynb"):  # sources digest, record, notebook
            (work / output).parent.mkdir(parents=True, exist_ok=True)
            (work / output).write_text("{}")
    assert _planned_chapters(root, work) == []

    plot = root / "lib" / "llmdyn" / "plots" / "lens.py"
    plot.write_text(plot.read_text() + "\n# an edit\n")
    later = (executed / "01_trajectories.ipynb").stat().st_mtime + 10
    os.utime(plot, (later, later))
    users = sorted(c for c in MODEL_CHAPTERS if plot in chapter_sources(c, root))
    assert users == ["03_uncertainty"]  # the logit-lens figures are chapter 03's
    assert _planned_chapters(root, work) == users


def test_modules_and_functions_stay_readable_in_one_sitting():
    """No module over 400 lines and no function over 60 (docstring included), lib and bench."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        from unit_sizes import oversized
    finally:
        sys.path.pop(0)
    found = [line for root in ("lib", "bench") for line in oversized(REPO / root)]
    assert found == [], "\n".join(found)


def test_only_the_cli_package_parses_arguments():
    """No module outside ``llmdyn.cli`` imports argparse: options are built
    there, and the library takes typed arguments (lint-imports checks it too, for packages)."""
    import ast

    parsing = []
    for path in sorted(LIB.rglob("*.py")):
        if path.relative_to(LIB).parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "argparse" or n.startswith("argparse.") for n in names):
                parsing.append(f"{path.relative_to(LIB)}:{node.lineno}")
    assert parsing == [], parsing
    assert (LIB / "cli" / "__init__.py").is_file()  # the package the rule exempts
