"""Chapter 05's "no coupling at initialisation" measure, with known answers."""

import numpy as np
import pytest
import torch

from llmdyn.coupling.depth import coupling_from_jacobians
from llmdyn.coupling.summary import prompt_scores


def test_no_coupling_at_initialisation_measure_has_known_answers():
    # Chapter 05's second row: the untrained share in units of chance 1/k. For Jacobians with
    # unrelated singular bases every entry of A = U_j^T J_i V_j has the same expected square,
    # so the diagonal holds 1/k of ||A||² on average (share·k ≈ 1); for Jacobians that share
    # their singular vectors A is diagonal (share·k = k).
    rng = np.random.default_rng(0)
    d, k, layers = 40, 5, 8
    unrelated = torch.tensor(rng.normal(size=(layers, d, d)))
    got = prompt_scores([coupling_from_jacobians(unrelated, k)]).diagonal_share[0] * k
    # 56 pairs of 5 × 5 matrices: over 30 seeds share·k was 1.02 ± 0.08; 0.6–1.4 is ±5 sd
    assert 0.6 < got < 1.4
    U, _ = np.linalg.qr(rng.normal(size=(d, d)))
    V, _ = np.linalg.qr(rng.normal(size=(d, d)))
    spectra = np.sort(rng.uniform(1, 2, size=(layers, d)), 1)[:, ::-1] * np.linspace(4, 1, d)
    shared = torch.tensor(np.stack([U @ np.diag(s) @ V.T for s in spectra]))
    assert prompt_scores([coupling_from_jacobians(shared, k)]).diagonal_share[0] * k == \
        pytest.approx(k, rel=1e-6)
