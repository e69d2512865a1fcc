"""Known answers for the scores of A (m, m̃, 1 − m̃, 1 − m̃², r(A)), and that they have one home."""

import json
import math
import re

import numpy as np
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.core.paths import REPO
from llmdyn.coupling.depth import coupling_from_jacobians
from llmdyn.coupling.scores import (
    authors_miscoupling,
    authors_split,
    chance_strength,
    diagonal_share,
    layer_strength,
    mean_diagonal_share,
    mean_strength,
    miscoupling,
    offdiag_ratio,
    offdiagonal_mean,
    offdiagonal_norm,
    strength,
)

TIGHT = 1e-12  # float64 round-off on O(1) quantities from a handful of operations is ~1e-15


def test_miscoupling_known_matrix():
    A = np.array([[3.0, 4.0], [0.0, 0.0]])  # off-diagonal norm 4, full norm 5
    assert offdiagonal_norm(A).item() == pytest.approx(4.0, abs=TIGHT)
    assert miscoupling(A).item() == pytest.approx(0.8, abs=TIGHT)
    # r(A) = (4 / (2*1)) / (3 / 2) = 4/3
    assert offdiag_ratio(A).item() == pytest.approx(4 / 3, abs=TIGHT)
    # authors: || |A| - diag(1, 1) ||_F / ||(1, 1)||_2 = ||[[2, 4], [0, -1]]|| / sqrt 2
    assert authors_miscoupling(A, [1.0, 1.0]).item() == pytest.approx(math.sqrt(21 / 2))
    assert authors_miscoupling(A, [1.0, 1.0], p=1).item() == pytest.approx(math.sqrt(21) / 2)
    # leading axes are kept, and m scales with A while m̃ does not
    assert offdiagonal_norm(np.stack([A, 2 * A])).tolist() == pytest.approx([4.0, 8.0], abs=TIGHT)
    assert miscoupling(np.stack([A, 2 * A])).tolist() == pytest.approx([0.8, 0.8], abs=TIGHT)


def test_miscoupling_of_an_all_zero_tile_is_nan_and_keeps_the_dtype():
    assert math.isnan(miscoupling(np.zeros((3, 3))).item())
    assert miscoupling(torch.ones(2, 2, dtype=torch.float32)).dtype == torch.float32


def test_diagonal_share_is_one_minus_the_squared_miscoupling():
    # A = [[3, 4], [0, 0]]: ‖A‖² = 25 of which 9 on the diagonal, so 1 − m̃² = 9/25
    m = miscoupling(np.array([[3.0, 4.0], [0.0, 0.0]])).numpy()
    assert diagonal_share(m) == pytest.approx(9 / 25, abs=TIGHT)
    assert diagonal_share([0.0, 1.0, 0.6]).tolist() == pytest.approx([1.0, 0.0, 0.64])


def test_means_over_distinct_layer_pairs_skip_the_diagonal():
    M = np.array([[9.0, 0.2, 0.4],
                  [0.6, 9.0, 0.8],
                  [0.4, 0.2, 9.0]])  # the diagonal (9) must not count
    assert offdiagonal_mean(M) == pytest.approx(2.6 / 6)
    m = np.array([[0.0, 0.6], [0.8, 0.0]])
    assert mean_diagonal_share(m) == pytest.approx(((1 - 0.36) + (1 - 0.64)) / 2)


def test_strength_and_chance():
    assert strength(np.zeros((2, 2))).tolist() == [[1, 1], [1, 1]]
    assert chance_strength(1) == 1.0
    assert chance_strength(30) == pytest.approx(1 - np.sqrt(29 / 30))
    with pytest.raises(LlmdynError, match="k must be a positive int"):
        chance_strength(0)
    with pytest.raises(LlmdynError, match=r"layer >= 2, got shape \(1, 1\)"):
        strength(np.zeros((1, 1)))


def test_layer_and_mean_strength_known_answer():
    m = np.array([[0.0, 0.2, 0.4],
                  [0.6, 0.0, 0.8],
                  [0.4, 0.2, 0.0]])
    # layer 0: pairs (0,1): (0.8 + 0.4)/2 = 0.6, (0,2): (0.6 + 0.6)/2 = 0.6
    assert layer_strength(m)[0] == pytest.approx(0.6)
    assert layer_strength(m)[1] == pytest.approx(((0.8 + 0.4) / 2 + (0.2 + 0.8) / 2) / 2)
    # the six off-diagonal 1 − m̃ are 0.8, 0.6, 0.4, 0.2, 0.6, 0.8
    assert mean_strength(m) == pytest.approx(3.4 / 6)
    stacked = np.stack([m, np.zeros((3, 3))])
    assert mean_strength(stacked).tolist() == pytest.approx([mean_strength(m), 1.0])
    assert layer_strength(stacked).shape == (2, 3)


def test_authors_split_recombines_to_the_authors_score():
    torch.manual_seed(0)
    J = torch.randn(4, 12, 12, dtype=torch.float64)
    dc = coupling_from_jacobians(J, 5)
    split = authors_split(dc.A, dc.S)
    assert np.allclose(np.sqrt(split.offdiagonal**2 + split.diagonal**2), dc.authors)
    assert np.allclose(np.diag(split.offdiagonal), 0) and np.allclose(np.diag(split.diagonal), 0)
    # stacked over prompts
    both = authors_split(np.stack([dc.A, dc.A]), np.stack([dc.S, dc.S]))
    assert both.diagonal.shape == (2, 4, 4)


def test_authors_split_penalises_a_diagonal_with_other_gains():
    A = np.zeros((2, 2, 2, 2))
    S = np.array([[2.0, 1.0], [2.0, 1.0]])
    A[0, 0] = A[1, 1] = np.diag([2.0, 1.0])
    A[0, 1] = np.diag([1.0, 2.0])  # exactly diagonal (m-tilde = 0) but in another order
    A[1, 0] = np.diag([2.0, 1.0])
    split = authors_split(A, S)
    assert split.offdiagonal[0, 1] == 0
    assert split.diagonal[0, 1] == pytest.approx(np.sqrt(2) / np.sqrt(5))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda J: offdiag_ratio(J[:1, :1]), r"k >= 2"),
        (lambda J: authors_miscoupling(J, J[0, :3]), r"s: got shape \(3,\)"),
        (lambda J: miscoupling(J[:, :5]), r"A: got shape \(6, 5\); expected square"),
        (lambda J: miscoupling(J[0]), r"A: got shape \(6,\) \(ndim 1\)"),
    ],
)
def test_score_errors(call, match):
    J = torch.randn(6, 6, dtype=torch.float64)
    with pytest.raises(LlmdynError, match=match):
        call(J)


# --- one home: no other module or notebook computes these ---------------------------------------

HOME = "lib/llmdyn/coupling/scores.py"
MASK_HOME = "lib/llmdyn/core/arrays.py"
# pattern -> (what it computes, the one file allowed to, other files allowed with the reason)
COMPUTED_ONCE = {
    # the off-diagonal mask ~np.eye(n, dtype=bool), however spelled
    r"~\s*(np|numpy|torch)\.eye\(|\beye\([^)\n]*\bbool\b": ("the off-diagonal mask", MASK_HOME,
                                                            {}),
    # 1 − x², as the diagonal share 1 − m̃² is written
    r"\b1(\.0)?\s*-\s*[\w.\[\]()\"']+\s*\*\*\s*2\b": (
        "the diagonal share 1 − m̃²", HOME,
        {"lib/llmdyn/stats/intervals.py": "1 − r² of correlation coefficients"}),
    # 1 − m̃, the coupling strength
    r"\b1(\.0)?\s*-\s*[^\s,]*miscoupling": ("the strength 1 − m̃", HOME, {}),
    # a norm of A next to its diagonal: m, m̃ or the authors' variant
    r"(matrix_norm|linalg\.norm)\([^\n]*diag": ("m(A) or m̃(A)", HOME, {}),
}


def _code(path) -> str:
    """A module's text, or a notebook's code cells."""
    if path.suffix != ".ipynb":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_the_m_tilde_family_and_the_mask_are_computed_in_one_module():
    files = [*(REPO / "lib" / "llmdyn").rglob("*.py"), *(REPO / "notebooks").glob("*.ipynb")]
    texts = {p.relative_to(REPO).as_posix(): _code(p) for p in files}
    found = []
    for pattern, (what, home, allowed) in COMPUTED_ONCE.items():
        # the pattern still finds the one computation it guards (else this test would rot)
        assert re.search(pattern, texts[home]), (pattern, home)
        for name, text in texts.items():
            if name == home or name in allowed:
                continue
            for match in re.finditer(pattern, text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{name}:{line}: {match.group()!r} computes {what}; call {home}")
    assert not found, "\n".join(found)
