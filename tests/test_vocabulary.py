"""One word per quantity: the retired names of m̃, 1 − m̃² and 1 − m̃ stay retired.

Before the rename m̃ had four names and "coupling" five meanings (book/methods.md, the symbol
table). A retired name that comes back, in code, a notebook, a parameter or the book's prose,
would let two chapters call different numbers by one word again.
"""

import re
import subprocess

import numpy as np
import pytest

from llmdyn.core.paths import REPO
from llmdyn.coupling import scores

RETIRED = {
    r"\bnormalized_miscoupling\b": "miscoupling (m̃)",
    r"\bcoupling_mis\b": "miscoupling (m̃)",
    r"\.normalized\b": ".miscoupling (m̃)",
    r"\bcoupling_share\b": "diagonal_share (1 − m̃²)",
    r"\bcoupling_strength\b": "strength (1 − m̃)",
    r"\bmean_coupling\b": "mean_strength (1 − m̃)",
    r"\blayer_coupling\b": "layer_strength (1 − m̃)",
    r"\bcoupling_54\b|\bpaper54\b": "neg_miscoupling_all_pairs (A §5.4)",
    r"\bmis-coupling\b": "miscoupling",
    # parameters: one name per thing a chapter is given
    r"(?<!max_)\bprompt_chars\b": "passage_chars (a passage's length; max_prompt_chars cuts)",
    r"\bp\.prompt\b": "p.example_prompt",
}
# The sweep's reader maps format-1 files' old keys on purpose, and its test writes such a file.
ALLOWED = {"lib/llmdyn/sweep/job.py": {r"\bcoupling_share\b", r"\bcoupling_mis\b"},
           "tests/sweep/test_sweep.py": {r"\bcoupling_share\b", r"\bcoupling_mis\b"},
           "tests/test_vocabulary.py": set(RETIRED)}


def tracked_text_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "lib", "notebooks", "tests", "tools", "workflow",
                          "book", "bench", "data", "README.md", "CONTRIBUTING.md"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    # data/ holds the figure tables, whose captions the pages show
    return [f for f in out if f.endswith((".py", ".ipynb", ".md", ".yaml", ".yml", ".csv",
                                          "Snakefile"))]


def test_retired_names_appear_nowhere():
    found = []
    for name in tracked_text_files():
        text = (REPO / name).read_text()
        for pattern, use in RETIRED.items():
            if pattern in ALLOWED.get(name, ()):
                continue
            for match in re.finditer(pattern, text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{name}:{line}: {match.group()} (use {use})")
    assert not found, "retired names are back:\n" + "\n".join(found)


def test_the_three_names_are_three_functions_of_one_known_miscoupling():
    # A = [[3, 4], [0, 0]]: off-diagonal norm 4, full norm 5, so m̃ = 0.8 exactly.
    A = np.array([[3.0, 4.0], [0.0, 0.0]])
    m = scores.miscoupling(A).item()
    assert scores.offdiagonal_norm(A).item() == pytest.approx(4.0)
    assert m == pytest.approx(0.8)
    maps = np.array([[0.0, m], [m, 0.0]])  # a 2-layer m̃ map
    assert scores.mean_diagonal_share(maps) == pytest.approx(1 - 0.8**2)
    assert scores.mean_strength(maps) == pytest.approx(1 - 0.8)
    np.testing.assert_allclose(scores.layer_strength(maps), [0.2, 0.2])


def test_one_rule_for_the_default_k():
    from llmdyn.book.params import relative
    from llmdyn.coupling.default_k import relative_k

    assert relative.relative_k is relative_k  # the book's parameters use the library's rule
    assert [relative_k(d) for d in (16, 32, 64, 192, 239, 240, 576, 4096)] == \
        [2, 4, 8, 24, 29, 30, 30, 30]
