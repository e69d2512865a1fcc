"""Depth-wise coupling of one token's block Jacobians, with every score of both papers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.core.arrays import host_array
from llmdyn.core.store import ResultStore
from llmdyn.coupling import matrix, scores
from llmdyn.coupling.default_k import check_k
from llmdyn.coupling.topk import top_singular_checked
from llmdyn.jacobians.cache import cached_per_prompt
from llmdyn.jacobians.full import block_jacobians
from llmdyn.jacobians.last_token import last_token_jacobians
from llmdyn.jacobians.svd import square_jacobians
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point


@dataclass(frozen=True)
class DepthCoupling:
    """Coupling across depth at one token, A[i, j] = U_j,k^T J_i V_j,k (paper A eq. 10).

    Attributes:
        A: ``[layer, layer, k, k]`` coupling matrices (tile (i, j) compares J_i with layer j's
            singular vectors).
        S: ``[layer, k]`` top-k singular values of each J_i.
        miscoupling: ``[layer, layer]`` miscoupling m̃(A) (paper A eq. 14).
        ratio: ``[layer, layer]`` paper B's r(A) = mean|off-diag| / mean|diag|.
        authors: ``[layer, layer]`` the authors'-code variant ‖|A| − S_i‖_F / ‖s_i‖_2.
    """

    A: np.ndarray
    S: np.ndarray
    miscoupling: np.ndarray
    ratio: np.ndarray
    authors: np.ndarray

    def __post_init__(self) -> None:
        """Check that the fields describe the same layers and k."""
        n, _, k, _ = self.A.shape
        expected = {"miscoupling": (n, n), "ratio": (n, n), "authors": (n, n), "S": (n, k)}
        for name, shape in expected.items():
            got = tuple(getattr(self, name).shape)
            if got != shape:
                raise LlmdynError(f"DepthCoupling.{name}: got shape {got}; expected {shape} from "
                                  f"A {tuple(self.A.shape)} = [layer, layer, k, k] (a stale or "
                                  "foreign cache file? delete it to recompute)")

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The fields by name, for the results store."""
        return {name: getattr(self, name) for name in
                ("A", "S", "miscoupling", "ratio", "authors")}


def coupling_from_jacobians(jacobians: torch.Tensor, k: int) -> DepthCoupling:
    """Every depth-coupling score from the Jacobians of one token at several layers.

    Args:
        jacobians: ``[layer, d_model, d_model]`` (rows = output coordinates).
        k: number of top singular vectors kept (paper A: 10–50; paper B: 30).

    Returns:
        The coupling matrices and their scores.
    """
    J = square_jacobians(jacobians, "jacobians", stack=True)
    check_k(k, J.shape[-1])
    return _scores(J, k)


def _scores(J: torch.Tensor, k: int) -> DepthCoupling:
    """:func:`coupling_from_jacobians` once ``J`` and ``k`` are checked (k is checked once)."""
    svd = top_singular_checked(J, k)  # only the top k triplets are used
    A = matrix.coupling_matrices_checked(J, k, svd=svd)  # [layer, layer, k, k]
    n = A.shape[0]
    s = svd.S[:, :k]  # [layer, k]
    authors = scores.authors_miscoupling(A, s[:, None, :].expand(n, n, k))
    return DepthCoupling(
        A=host_array(A), S=host_array(s),
        miscoupling=host_array(scores.miscoupling(A)),
        ratio=host_array(scores.offdiag_ratio(A)),
        authors=host_array(authors),
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
    cut_long_prompts: bool = False,
) -> list[DepthCoupling]:
    """Depth coupling at one token of each prompt, cached per prompt.

    Args:
        model: a loaded model.
        prompts: texts; each is one cached item.
        k: number of top singular vectors.
        layers: 0-based blocks (None: all).
        token: which token's diagonal Jacobian J_tt (default the last, computed from one
            decoding step by :func:`llmdyn.jacobians.last_token_jacobians`).
        store: results cache (None: compute without caching).
        last_point: ``"final_norm"`` (the papers': the last block includes the final norm,
            f^L(x) = norm(block_L(x)) − x) or ``"block_output"``; part of the cache key.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        One :class:`DepthCoupling` per prompt.

    Each prompt is computed on its own, so a cached value is the same bits whichever prompts
    were computed with it: a batch would pad every prefix to its longest member, and the
    padded shapes change the matrix products' rounding.
    """
    prompts = checks.prompt_texts(prompts)
    layers = checks.layer_indices(layers, model.n_layers)  # negatives resolved once, here
    check_k(k, model.d_model)
    if isinstance(token, bool) or not isinstance(token, int):
        raise LlmdynError(f"token must be an int index such as -1, got {token!r}")

    check_last_point(last_point)
    params = {"k": k, "layers": layers, "token": token, "dtype": "float32",
              "last_point": last_point}

    def compute(prompt: str) -> dict[str, np.ndarray]:
        if token == -1:  # J_nn from one decoding step against the frozen prefix
            J = last_token_jacobians(model, prompt, layers, last_point=last_point,
                                     cut_long_prompts=cut_long_prompts)
        else:
            J = block_jacobians(model, prompt, layers, pairs=[(token, token)], progress=False,
                                last_point=last_point, cut_long_prompts=cut_long_prompts)[:, 0]
        return _scores(J, k).as_arrays()  # J: [layer, d_model, d_model], k checked above

    results = cached_per_prompt(store, "depth_coupling", model, params, prompts, compute,
                                cut_long_prompts=cut_long_prompts)
    return [DepthCoupling(**r) for r in results]

