"""Depth-wise coupling of one token's block Jacobians, with every score of both papers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from llmdyn import LlmdynError, metrics
from llmdyn.core import checks
from llmdyn.core.store import ResultStore
from llmdyn.jacobians.full import block_jacobians
from llmdyn.jacobians.last_token import last_token_jacobians_batched
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point

# Prompts whose last-token Jacobians share one vmapped batch: on a CPU the loop is already at
# the matmul floor and batching is neutral (Performance page); on a GPU, where one prompt does
# not fill the device, larger batches should pay (not measured here).
PROMPTS_PER_BATCH = 4


@dataclass(frozen=True)
class DepthCoupling:
    """Coupling across depth at one token, A[i, j] = U_j,k^T J_i V_j,k (paper A eq. 10).

    Attributes:
        A: ``[layer, layer, k, k]`` coupling matrices (tile (i, j) compares J_i with layer j's
            singular vectors).
        S: ``[layer, k]`` top-k singular values of each J_i.
        normalized: ``[layer, layer]`` normalised mis-coupling m̃(A) (paper A eq. 14).
        ratio: ``[layer, layer]`` paper B's r(A) = mean|off-diag| / mean|diag|.
        authors: ``[layer, layer]`` the authors'-code variant ‖|A| − S_i‖_F / ‖s_i‖_2.
    """

    A: np.ndarray
    S: np.ndarray
    normalized: np.ndarray
    ratio: np.ndarray
    authors: np.ndarray

    def __post_init__(self) -> None:
        """Check that the fields describe the same layers and k."""
        n, _, k, _ = self.A.shape
        expected = {"normalized": (n, n), "ratio": (n, n), "authors": (n, n), "S": (n, k)}
        for name, shape in expected.items():
            got = tuple(getattr(self, name).shape)
            if got != shape:
                raise LlmdynError(f"DepthCoupling.{name}: got shape {got}; expected {shape} from "
                                  f"A {tuple(self.A.shape)} = [layer, layer, k, k] (a stale or "
                                  "foreign cache file? delete it to recompute)")

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The fields by name, for the results store."""
        return {name: getattr(self, name) for name in
                ("A", "S", "normalized", "ratio", "authors")}


def coupling_from_jacobians(jacobians: torch.Tensor, k: int) -> DepthCoupling:
    """Every depth-coupling score from the Jacobians of one token at several layers.

    Args:
        jacobians: ``[layer, d_model, d_model]`` (rows = output coordinates).
        k: number of top singular vectors kept (paper A: 10–50; paper B: 30).

    Returns:
        The coupling matrices and their scores.
    """
    checks.k_value(k, jacobians.shape[-1], minimum=2, why="r(A) divides by k - 1")
    svd = metrics.svd_sorted(jacobians)
    A = metrics.coupling_matrices(jacobians, k, svd=svd)  # (layer, layer, k, k)
    n = A.shape[0]
    s = svd.S[:, :k]  # (layer, k)
    authors = metrics.authors_miscoupling(A, s[:, None, :].expand(n, n, k))
    return DepthCoupling(
        A=A.numpy(), S=s.numpy(),
        normalized=metrics.normalized_miscoupling(A).numpy(),
        ratio=metrics.offdiag_ratio(A).numpy(),
        authors=authors.numpy(),
    )


def depth_coupling(
    model: LoadedModel,
    prompts: Sequence[str],
    *,
    k: int,
    layers: Sequence[int] | None = None,
    token: int = -1,
    store: ResultStore | None = None,
    last_point: LastPoint = "final_norm",
) -> list[DepthCoupling]:
    """Depth coupling at one token of each prompt, cached per prompt.

    Args:
        model: a loaded model.
        prompts: texts; each is one cached item.
        k: number of top singular vectors.
        layers: 0-based blocks (None: all).
        token: which token's diagonal Jacobian J_tt (default the last, computed from one
            decoding step, several prompts per batch, by
            :func:`llmdyn.jacobians.last_token_jacobians_batched`).
        store: results cache (None: compute without caching).
        last_point: ``"final_norm"`` (the papers': the last block includes the final norm,
            f^L(x) = norm(block_L(x)) − x) or ``"block_output"``; part of the cache key.

    Returns:
        One :class:`DepthCoupling` per prompt.
    """
    prompts = checks.prompt_texts(prompts)
    layers = checks.layer_indices(layers, model.n_layers)  # negatives resolved once, here
    checks.k_value(k, model.d_model, minimum=2, why="r(A) divides by k - 1")
    if isinstance(token, bool) or not isinstance(token, int):
        raise LlmdynError(f"token must be an int index such as -1, got {token!r}")

    check_last_point(last_point)
    params = {"k": k, "layers": layers, "token": token, "dtype": "float32",
              "last_point": last_point}
    todo = list(prompts) if store is None else store.missing("depth_coupling", params, prompts)
    compute = _computer(model, layers, k, token, last_point,
                        pending=list(dict.fromkeys(todo)))  # not yet computed, in order
    if store is None:
        results = [compute(p) for p in prompts]
    else:
        results = store.map("depth_coupling", params, list(prompts), compute)
    return [DepthCoupling(**r) for r in results]


def _computer(model: LoadedModel, layers: list[int], k: int, token: int, last_point: LastPoint,
              pending: list[str]) -> Callable[[str], dict[str, np.ndarray]]:
    """``compute(prompt)`` for the cache: one prompt's coupling arrays.

    For the last token (``token == -1``) the first call computes the Jacobians of the next
    ``PROMPTS_PER_BATCH`` prompts of ``pending`` in one batch and keeps the others' results
    until they are asked for.
    """
    ready: dict[str, dict[str, np.ndarray]] = {}  # computed in a batch, not yet handed out

    def compute(prompt: str) -> dict[str, np.ndarray]:
        if prompt in ready:
            return ready.pop(prompt)
        if token == -1:  # J_nn from one decoding step, PROMPTS_PER_BATCH prompts at a time
            start = pending.index(prompt) if prompt in pending else len(pending)
            batch = pending[start:start + PROMPTS_PER_BATCH] or [prompt]
            del pending[start:start + PROMPTS_PER_BATCH]
            for p, J in zip(batch, last_token_jacobians_batched(
                    model, batch, layers, prompts_per_batch=PROMPTS_PER_BATCH,
                    last_point=last_point), strict=True):
                ready[p] = coupling_from_jacobians(J, k).as_arrays()
            return ready.pop(prompt)
        J = block_jacobians(model, prompt, layers, pairs=[(token, token)], progress=False,
                            last_point=last_point)
        return coupling_from_jacobians(J[:, 0], k).as_arrays()

    return compute


def diagonal_share(normalized: np.ndarray) -> np.ndarray:
    """Share of ‖A‖_F² on the diagonal, 1 − m̃(A)²; about 1/k for unrelated bases."""
    return 1.0 - np.asarray(normalized) ** 2


def offdiagonal_mean(M: np.ndarray) -> float:
    """Mean of a ``[layer, layer]`` score over pairs i ≠ j (the diagonal is trivially coupled)."""
    n = M.shape[-1]
    mask = ~np.eye(n, dtype=bool)
    return float(np.mean(M[..., mask]))
