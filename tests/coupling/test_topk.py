"""The Gram-matrix route to the top-k singular triplets against the full SVD (known answers)."""

import torch

from llmdyn.coupling import coupling_from_jacobians, top_singular
from llmdyn.coupling.matrix import coupling_matrices
from llmdyn.coupling.scores import offdiag_ratio
from llmdyn.jacobians.svd import svd_sorted


def _stack(seed: int, dtype=torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, 24, 24, generator=g, dtype=torch.float64).to(dtype)  # (layer, d, d)


def test_top_singular_equals_the_full_svd_in_float64():
    # Tolerance 1e-10: both are float64; the Gram route's error is eps * (s_1/s_k)^2.
    J = _stack(0)
    full, top = svd_sorted(J), top_singular(J, 6)
    assert top.U.shape == (4, 24, 6) and top.S.shape == (4, 6) and top.Vh.shape == (4, 6, 24)
    torch.testing.assert_close(top.S, full.S[:, :6], atol=1e-10, rtol=0)
    torch.testing.assert_close(top.U, full.U[..., :6], atol=1e-10, rtol=0)  # same signs
    torch.testing.assert_close(top.Vh, full.Vh[:, :6], atol=1e-10, rtol=0)


def test_top_singular_of_a_known_matrix():
    # J = Q diag(5, 3, 1, ...) R^T: the top pairs are Q's and R's first columns.
    g = torch.Generator().manual_seed(1)
    Q, _ = torch.linalg.qr(torch.randn(8, 8, generator=g, dtype=torch.float64))
    R, _ = torch.linalg.qr(torch.randn(8, 8, generator=g, dtype=torch.float64))
    s = torch.tensor([5.0, 3, 1, 0.5, 0.4, 0.3, 0.2, 0.1], dtype=torch.float64)
    top = top_singular(((Q * s) @ R.T)[None], 2)  # (1, 8, 8)
    torch.testing.assert_close(top.S[0], s[:2], atol=1e-12, rtol=0)
    for a in range(2):  # up to the joint sign of each pair
        sign = torch.sign(top.U[0, :, a] @ Q[:, a])
        torch.testing.assert_close(top.U[0, :, a], sign * Q[:, a], atol=1e-12, rtol=0)
        torch.testing.assert_close(top.Vh[0, a], sign * R[:, a], atol=1e-12, rtol=0)


def test_top_singular_of_a_rank_deficient_stack_falls_back_to_the_svd():
    J = torch.zeros(2, 5, 5)
    J[0, 0, 0] = 1.0  # rank 1: s_2 = 0, so V = J^T U / S would divide by zero
    top = top_singular(J, 3)
    assert torch.isfinite(top.Vh).all() and top.S.dtype == torch.float32
    torch.testing.assert_close(top.S, svd_sorted(J).S[:, :3])


def test_coupling_from_jacobians_matches_the_full_svd_route_in_float32():
    # float32 input, float64 reference: scores agree to 1e-5, A to 1e-4 (float32 rounding).
    J = _stack(2, torch.float32)
    got = coupling_from_jacobians(J, 5)
    A = coupling_matrices(J.double(), 5)  # full float64 SVD inside
    torch.testing.assert_close(torch.from_numpy(got.A).double(), A, atol=1e-4, rtol=0)
    torch.testing.assert_close(torch.from_numpy(got.ratio).double(), offdiag_ratio(A),
                               atol=1e-5, rtol=0)


def test_top_singular_returns_in_the_dtype_and_on_the_device_of_its_input():
    # The eigensolver runs on the host in float64; the triplets go back to J's dtype and device,
    # so that the coupling products run where J is (a GPU run must not mix devices).
    J = _stack(2, torch.float32)
    top = top_singular(J, 3)
    for part in (top.U, top.S, top.Vh):
        assert part.dtype == torch.float32 and part.device == J.device


def test_the_gram_eigensolver_runs_on_one_blas_thread(monkeypatch):
    # OpenBLAS's second thread spins in syevr at these sizes (bench/prompt_cost.py): the solve
    # is limited to one thread, and the limit is lifted afterwards.
    import scipy.linalg
    from threadpoolctl import threadpool_info

    from llmdyn.coupling import topk

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen, eigh = [], scipy.linalg.eigh

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return eigh(*args, **kwargs)

    monkeypatch.setattr(topk.scipy.linalg, "eigh", spy)
    before = blas_threads()
    top_singular(_stack(2), 3)
    assert seen == [{1}] * 4  # one solve per layer, each on one thread
    assert blas_threads() == before
