"""CONTRIBUTING.md names only files and library names that exist: a guide that sends a reader to a
moved file is worse than none."""

import re

from llmdyn.core.paths import REPO

GUIDE = REPO / "CONTRIBUTING.md"
LIB = REPO / "lib" / "llmdyn"
SUFFIXES = (".py", ".md", ".yaml", ".yml", ".csv", ".ipynb", ".toml", ".json")
TOP = ("lib/", "tests/", "tools/", "bench/", "book/", "data/", "notebooks/", "workflow/")
BUILT = ("book/executed", "results/", "_build/")  # written by a build, absent from a checkout


def _spans() -> list[str]:
    return re.findall(r"`([^`\n]+)`", GUIDE.read_text())


def _paths(spans: list[str]) -> set[str]:
    """Words of the backticked spans that name a repository file or folder (no placeholders)."""
    words = {w.strip("(),;:") for span in spans for w in span.split()}
    return {w for w in words if "<" not in w and "NN_" not in w
            and not w.startswith(("/", ".", *BUILT))
            and (w.startswith(TOP) or w.endswith(SUFFIXES))}


def _exists(path: str) -> bool:
    if "/" not in path.rstrip("/"):  # a bare name: a root file or a library module
        return (REPO / path).exists() or any(LIB.rglob(path))
    return (REPO / path).exists() or (LIB / path).exists()


def _defines(module: str, name: str) -> bool:
    """Whether the library module ``module`` (dotted) defines or lazily exports ``name``."""
    file = LIB.joinpath(*module.split(".")[1:])
    source = (file / "__init__.py" if file.is_dir() else file.with_suffix(".py")).read_text()
    return re.search(rf"^(?:def|class) {name}\b|^{name}\b\s*[:=]|[\"']{name}[\"']", source,
                     re.MULTILINE) is not None


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        file = LIB.joinpath(*parts[1:cut])
        if file.is_dir() or file.with_suffix(".py").is_file():
            rest = parts[cut:]
            return not rest or (len(rest) == 1 and _defines(".".join(parts[:cut]), rest[0]))
    return False


def test_every_file_the_guide_names_exists():
    paths = _paths(_spans())
    assert {"lib/llmdyn/coupling/scores.py", "tools/parameter_cells.py"} <= paths  # it parses
    assert not sorted(p for p in paths if not _exists(p)), "CONTRIBUTING.md names missing files"


def test_every_library_name_the_guide_names_resolves():
    dotted = {s for s in _spans() if re.fullmatch(r"llmdyn(\.\w+)+", s)}
    assert "llmdyn.core.closure.module_closure" in dotted
    assert not sorted(d for d in dotted if not _resolves(d)), "CONTRIBUTING.md names missing names"
