"""The SVD of block Jacobians, with a sign convention that makes it reproducible."""

from __future__ import annotations

from typing import NamedTuple

import torch

from llmdyn import LlmdynError
from llmdyn.core.arrays import ArrayLike, checked_tensor

_JAC = "[..., d_model, d_model] (square, rows = output coordinates)"


class Svd(NamedTuple):
    """SVD J = U diag(S) Vh with singular values descending."""

    U: torch.Tensor  # [..., d_model, d_model]  left singular vectors as columns
    S: torch.Tensor  # [..., d_model]  singular values, descending
    Vh: torch.Tensor  # [..., d_model, d_model]  right singular vectors as rows (V^T)


def square_jacobians(J: ArrayLike, name: str, stack: bool = False) -> torch.Tensor:
    """``J`` as a checked float tensor of square Jacobians: ``[..., d, d]``, or ``[layer, d, d]``.

    Raises:
        LlmdynError: wrong shape, non-finite entries, or half precision (torch has no SVD there).
    """
    want = "[layer, d_model, d_model]" if stack else _JAC
    J = checked_tensor(J, name, 3 if stack else 2, want, exact=stack)
    if J.dtype in (torch.float16, torch.bfloat16):  # torch has no SVD in half precision
        raise LlmdynError(f"{name}: dtype {J.dtype} has no SVD in torch; pass float32 or "
                          f"float64, e.g. {name}.float() (a model loaded in half precision: "
                          "load it with dtype=torch.float32)")
    if J.shape[-1] != J.shape[-2]:
        raise LlmdynError(f"{name}: got shape {tuple(J.shape)}; expected {want}")
    return J


def svd_sorted(J: ArrayLike) -> Svd:
    """SVD of Jacobians [..., d_model, d_model] (rows = outputs), singular values descending.

    ``torch.linalg.svd`` already sorts singular values in descending order. A singular pair
    (u_a, v_a) is defined up to a joint sign flip; we flip it so that the largest-magnitude entry
    of u_a is positive, which makes results reproducible across dtypes and backends.
    """
    J = square_jacobians(J, "J")
    U, S, Vh = torch.linalg.svd(J)  # [..., d_model, d_model], [..., d_model], same as U
    idx = U.abs().argmax(dim=-2, keepdim=True)  # [..., 1, d_model]
    sign = torch.sign(torch.gather(U, -2, idx))  # [..., 1, d_model]
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    return Svd(U * sign, S, Vh * sign.mT)  # column a of U and row a of Vh flip together
