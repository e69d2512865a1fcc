"""Metrics of hidden-state dynamics: Jacobian coupling, trajectory shape, logit-lens uncertainty."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

from llmdyn import LlmdynError
from llmdyn.core import checks

ArrayLike = np.ndarray | torch.Tensor
Metric = Callable[[np.ndarray], np.ndarray]


def _check(x: ArrayLike, name: str, min_ndim: int, expected: str, exact: bool = False) -> None:
    """Raise LlmdynError if ``x`` has the wrong ndim or non-finite entries."""
    shape = tuple(x.shape)
    if (x.ndim != min_ndim) if exact else (x.ndim < min_ndim):
        raise LlmdynError(f"{name}: got shape {shape} (ndim {x.ndim}); expected {expected}")
    finite = torch.isfinite(x) if isinstance(x, torch.Tensor) else np.isfinite(x)
    if not bool(finite.all()):
        bad, total = int((~finite).sum()), int(np.prod(x.shape))
        raise LlmdynError(
            f"{name}: has {bad} NaN/inf value(s) among {total} entries of shape {shape};"
            " expected finite values"
        )


def _tensor(x: ArrayLike, name: str, min_ndim: int, expected: str, exact: bool = False):
    """Checked torch tensor; floating dtypes are kept, others become float64."""
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    t = t if t.is_floating_point() else t.to(torch.float64)
    _check(t, name, min_ndim, expected, exact)
    return t


def _array(x: ArrayLike, name: str, min_ndim: int, expected: str, exact: bool = False):
    """Checked float64 numpy array."""
    a = np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=np.float64)
    _check(a, name, min_ndim, expected, exact)
    return a


# ----------------------------------------------------------------------------- Jacobian coupling
# Convention: inputs are torch tensors or numpy arrays; outputs are torch tensors in the input's
# floating dtype (integer input becomes float64).

_JAC = "[..., d_model, d_model] (square, rows = output coordinates)"


class Svd(NamedTuple):
    """SVD J = U diag(S) Vh with singular values descending."""

    U: torch.Tensor  # [..., d_model, d_model]  left singular vectors as columns
    S: torch.Tensor  # [..., d_model]  singular values, descending
    Vh: torch.Tensor  # [..., d_model, d_model]  right singular vectors as rows (V^T)


def _square(J: ArrayLike, name: str, stack: bool = False) -> torch.Tensor:
    want = "[layer, d_model, d_model]" if stack else _JAC
    J = _tensor(J, name, 3 if stack else 2, want, exact=stack)
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
    J = _square(J, "J")
    U, S, Vh = torch.linalg.svd(J)  # [..., d_model, d_model], [..., d_model], same as U
    idx = U.abs().argmax(dim=-2, keepdim=True)  # [..., 1, d_model]
    sign = torch.sign(torch.gather(U, -2, idx))  # [..., 1, d_model]
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    return Svd(U * sign, S, Vh * sign.mT)  # column a of U and row a of Vh flip together


def coupling_matrix(J: ArrayLike, J_ref: ArrayLike, k: int) -> torch.Tensor:
    """Coupling matrix A = U_ref,k^T J V_ref,k (paper A §3.1 eq 10; paper B §3.6 A_{i,j,K}).

    Returns A, [..., k, k]; A = diag(S[:k]) when J == J_ref.

    Args:
        J: Jacobian being coupled, [..., d_model, d_model].
        J_ref: Jacobian whose top-k singular vectors form the basis; same shape as ``J``.
        k: number of singular vectors kept, 1 <= k <= d_model.
    """
    J, J_ref = _square(J, "J"), _square(J_ref, "J_ref")
    if J.shape != J_ref.shape:
        raise LlmdynError(f"J_ref: got shape {tuple(J_ref.shape)}; expected J's {tuple(J.shape)}")
    checks.k_value(k, J.shape[-1])
    U, _, Vh = svd_sorted(J_ref)
    Uk, Vk = U[..., :, :k], Vh[..., :k, :].mT  # [..., d_model, k] each
    return torch.einsum("...da,...de,...eb->...ab", Uk, J.to(Uk.dtype), Vk)  # [..., k, k]


def coupling_matrices(jacobians: ArrayLike, k: int, svd: Svd | None = None) -> torch.Tensor:
    """All pairwise coupling matrices A[i, j] = U_j,k^T J_i V_j,k (paper A eq 10, paper B §3.6).

    A[i, j] is paper B's A_{i,j,K} and paper A's A^{l l'} with l = i, l' = j; the diagonal blocks
    are A[i, i] = diag(S_i[:k]). Returns A, [layer, layer, k, k] (axis 0: coupled Jacobian i,
    axis 1: reference j).

    Args:
        jacobians: [layer, d_model, d_model].
        k: number of top singular vectors kept, 1 <= k <= d_model.
        svd: optional precomputed ``svd_sorted(jacobians)``.
    """
    J = _square(jacobians, "jacobians", stack=True)
    checks.k_value(k, J.shape[-1])
    U, _, Vh = svd if svd is not None else svd_sorted(J)
    n, d = J.shape[0], J.shape[-1]
    if U.shape[:2] != J.shape[:2] or U.shape[-1] < k or Vh.shape[-2] < k:
        raise LlmdynError(f"svd: got U of shape {tuple(U.shape)}; expected [{n}, {d}, >= {k}]")
    Uk, Vk = U[..., :, :k], Vh[..., :k, :].mT  # [layer, d_model, k] each
    # Two plain matrix products (about 4x faster than one einsum per reference layer j):
    # every J_i times every layer's V_k at once, then each U_j,k^T on its own columns.
    JV = (J.reshape(n * d, d) @ Vk.transpose(0, 1).reshape(d, n * k))  # (layer*d, layer*k)
    JV = JV.reshape(n, d, n, k).permute(2, 0, 1, 3)  # (j, i, d_model, k)
    return (Uk.mT[:, None] @ JV).transpose(0, 1)  # [layer i, layer j, k, k]


def _coupling(A: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    A = _tensor(A, "A", 2, "[..., k, k]")
    if A.shape[-1] != A.shape[-2]:
        raise LlmdynError(f"A: got shape {tuple(A.shape)}; expected square [..., k, k]")
    return A, torch.diagonal(A, dim1=-2, dim2=-1)  # [..., k, k], [..., k]


def miscoupling(A: ArrayLike) -> torch.Tensor:
    """Miscoupling m(A) = ||A - Diag(A)||_F (paper A §3.1 eq 13). [..., k, k] -> [...]."""
    A, d = _coupling(A)
    return torch.linalg.matrix_norm(A - torch.diag_embed(d))


def normalized_miscoupling(A: ArrayLike) -> torch.Tensor:
    """Normalised miscoupling ||A - Diag(A)||_F / ||A||_F (paper A §3.1 eq 14).

    [..., k, k] -> [...], in [0, 1]; NaN where A is all zeros.
    """
    A, _ = _coupling(A)
    return miscoupling(A) / torch.linalg.matrix_norm(A)


def offdiag_ratio(A: ArrayLike) -> torch.Tensor:
    """Paper B §3.6 r(A) = [sum_{a != b} |A_ab| / (K(K-1))] / [sum_a |A_aa| / K].

    [..., k, k] with k >= 2 -> [...]; inf or NaN where the diagonal is all zeros.
    """
    A, d = _coupling(A)
    K = A.shape[-1]
    if K < 2:
        raise LlmdynError(f"A: got k = {K}; expected k >= 2 (r(A) divides by K - 1)")
    diag_sum = d.abs().sum(-1)
    off_sum = A.abs().sum((-2, -1)) - diag_sum
    return off_sum / ((K - 1) * diag_sum)


def authors_miscoupling(A: ArrayLike, s: ArrayLike, p: float = 2) -> torch.Tensor:
    """Variant from the authors' released code for paper A: || |A| - diag(s) ||_F / ||s||_p.

    This is NOT the paper's eq 13/14: it takes entrywise |A| and subtracts the singular values of
    the coupled Jacobian J_i instead of Diag(A). It is 0 when J_i shares J_j's top-k singular
    vectors (then A = diag(s)). Returns shape [...].

    Args:
        A: coupling matrices U_j,k^T J_i V_j,k, [..., k, k].
        s: top-k singular values of J_i, [..., k] with exactly A's leading axes; for
            ``coupling_matrices`` output pass ``S[:, None, :k].expand(layer, layer, k)``.
        p: order of the vector norm of ``s`` (as torch.linalg.vector_norm).
    """
    A, _ = _coupling(A)
    s = _tensor(s, "s", 1, "[..., k]").to(A.dtype)
    if s.shape != A.shape[:-1]:
        raise LlmdynError(f"s: got shape {tuple(s.shape)}; expected {tuple(A.shape[:-1])}")
    num = torch.linalg.matrix_norm(A.abs() - torch.diag_embed(s))
    return num / torch.linalg.vector_norm(s, ord=p, dim=-1)


# ----------------------------------------------------------------------------- trajectories
# Convention: a trajectory is [..., layer+1, d_model] (points x^0..x^L along axis -2), as a numpy
# array or torch tensor; computed and returned as float64 numpy arrays.

_TRAJ = "[..., layer+1, d_model] with layer+1 >= 2"


def _traj(traj: ArrayLike) -> np.ndarray:
    x = _array(traj, "traj", 2, _TRAJ)
    if x.shape[-2] < 2:
        raise LlmdynError(f"traj: got shape {x.shape}; expected {_TRAJ}")
    return x


def norms(traj: ArrayLike) -> np.ndarray:
    """Norms ||x^l||_2 of every point. [..., layer+1, d_model] -> [..., layer+1]."""
    return np.linalg.norm(_array(traj, "traj", 1, "[..., d_model]"), axis=-1)


def line_shape_score(traj: ArrayLike) -> np.ndarray:
    """Line-shape score LSS = L / ||x~^L - x~^0|| (paper A §3.2 eqs 15-16; paper B §3.4 eq 1).

    x~^0 = x^0 and x~^l = x~^{l-1} + (x^l - x^{l-1}) / ||x^l - x^{l-1}||, so x~^L - x~^0 is the
    sum of the unit steps. [..., layer+1, d_model] -> [...]. LSS >= 1, exactly 1 for a straight
    monotone path, inf if the unit steps cancel. A zero-length step has no direction: it raises
    LlmdynError.
    """
    x = _traj(traj)
    steps = np.diff(x, axis=-2)  # [..., layer, d_model]
    lengths = np.linalg.norm(steps, axis=-1, keepdims=True)  # [..., layer, 1]
    if (lengths == 0).any():
        at = tuple(np.argwhere(lengths[..., 0] == 0)[0])
        raise LlmdynError(f"traj: has a zero-length step at {at}; expected x^l != x^(l-1)")
    end = np.linalg.norm((steps / lengths).sum(axis=-2), axis=-1)  # [...]
    with np.errstate(divide="ignore"):
        return steps.shape[-2] / end


def equidistance(traj: ArrayLike) -> np.ndarray:
    """Equidistance U = std_l / mean_l of ||x^{l+1} - x^l|| (paper B §3.5 eq 2).

    [..., layer+1, d_model] -> [...]. Population std (1/L); 0 for evenly spaced points, NaN if
    every step has length 0.
    """
    step = np.linalg.norm(np.diff(_traj(traj), axis=-2), axis=-1)  # [..., layer]
    with np.errstate(invalid="ignore", divide="ignore"):
        return step.std(axis=-1) / step.mean(axis=-1)


def layerwise_alpha(traj: ArrayLike) -> np.ndarray:
    """Growth rates alpha_l = ln(||x^l|| / ||x^{l-1}||), l = 1..L (paper A §3.3 eq 17).

    [..., layer+1, d_model] -> [..., layer]. A zero point raises LlmdynError.
    """
    n = norms(_traj(traj))  # [..., layer+1]
    if (n == 0).any():
        raise LlmdynError(f"traj: has {int((n == 0).sum())} zero point(s); expected x^l != 0")
    return np.diff(np.log(n), axis=-1)


def expodistance(traj: ArrayLike) -> np.ndarray:
    """Expodistance ED = Var_l(alpha_l) / (Avg_l alpha_l)^2 (paper A §3.3 eq 18).

    [..., layer+1, d_model] -> [...]. Population variance; 0 for geometric growth x^l = c^l x^0,
    inf or NaN where Avg alpha = 0. Points must be non-zero (see ``layerwise_alpha``).
    """
    alpha = layerwise_alpha(traj)  # [..., layer]
    with np.errstate(invalid="ignore", divide="ignore"):
        return alpha.var(axis=-1) / alpha.mean(axis=-1) ** 2


def windowed(metric: Metric, traj: ArrayLike, window: int = 11) -> np.ndarray:
    """Apply a trajectory metric over centred windows [l - w//2, l + w//2] (paper B Figs 3-4).

    Returns [..., layer+1]: entry l is the metric on points l - w//2 .. l + w//2, and NaN at the
    w//2 positions at each end where the window does not fit (keeps depth indices aligned).

    Args:
        metric: maps [..., window, d_model] to [...] (e.g. ``line_shape_score``).
        traj: [..., layer+1, d_model].
        window: odd window length, 3 <= window <= layer+1.
    """
    x = _traj(traj)
    n = x.shape[-2]
    if not isinstance(window, int | np.integer) or window % 2 == 0 or not 3 <= window <= n:
        raise LlmdynError(
            f"window: got {window!r}; expected an odd integer with 3 <= window <= layer+1 = {n}"
        )
    views = np.lib.stride_tricks.sliding_window_view(x, window, axis=-2)  # [..., n_win, d, w]
    vals = np.asarray(metric(np.swapaxes(views, -1, -2)), dtype=np.float64)  # [..., n_win]
    want = x.shape[:-2] + (n - window + 1,)
    if vals.shape != want:
        raise LlmdynError(f"metric: returned shape {vals.shape}; expected {want}")
    out = np.full(x.shape[:-1], np.nan)  # [..., layer+1]
    out[..., window // 2 : n - window // 2] = vals
    return out


def windowed_line_shape_score(traj: ArrayLike, window: int = 11) -> np.ndarray:
    """``windowed(line_shape_score, traj, window)``: [..., layer+1, d_model] -> [..., layer+1]."""
    return windowed(line_shape_score, traj, window)


def windowed_equidistance(traj: ArrayLike, window: int = 11) -> np.ndarray:
    """``windowed(equidistance, traj, window)``: [..., layer+1, d_model] -> [..., layer+1]."""
    return windowed(equidistance, traj, window)


# ----------------------------------------------------------------------------- logit lens
# Convention: inputs are torch tensors or numpy arrays; outputs are torch tensors.


def entropy(logits: ArrayLike) -> torch.Tensor:
    """Entropy S(P) = -sum_v P(v) ln P(v) of P = softmax(logits) (paper B §3.7), in nats.

    Computed from log_softmax, so large logits are safe. [..., vocab] -> [...].
    """
    logp = torch.log_softmax(_tensor(logits, "logits", 1, "[..., vocab]"), dim=-1)
    return -(logp.exp() * logp).sum(-1)


def _probs(p: ArrayLike, name: str) -> torch.Tensor:
    p = _tensor(p, name, 1, "[..., vocab]")
    if (p < 0).any() or not torch.allclose(p.sum(-1), p.new_ones(()), atol=1e-2):
        raise LlmdynError(f"{name}: expected probabilities (>= 0, summing to 1 over vocab)")
    return p


def total_variation(p: ArrayLike, q: ArrayLike) -> torch.Tensor:
    """Total variation distance 0.5 sum_v |p(v) - q(v)|. [..., vocab] x [..., vocab] -> [...]."""
    p, q = _probs(p, "p"), _probs(q, "q")
    if p.shape != q.shape:
        raise LlmdynError(f"q: got shape {tuple(q.shape)}; expected p's {tuple(p.shape)}")
    return 0.5 * (p - q.to(p.dtype)).abs().sum(-1)


def tv_to_token(probs: ArrayLike, token: int | ArrayLike) -> torch.Tensor:
    """Total variation distance to the one-hot distribution of ``token``: 1 - probs[token].

    ``probs`` [..., vocab] and ``token`` an int or integer ids [...] -> [...].
    """
    probs = _probs(probs, "probs")
    tok = torch.as_tensor(np.asarray(token) if not isinstance(token, torch.Tensor) else token)
    try:
        tok = tok.to(torch.long).expand(probs.shape[:-1])  # [...]
    except RuntimeError as err:
        want = tuple(probs.shape[:-1])
        raise LlmdynError(f"token: got shape {tuple(tok.shape)}; expected int or {want}") from err
    vocab = probs.shape[-1]
    if ((tok < 0) | (tok >= vocab)).any():
        raise LlmdynError(f"token: got ids outside [0, {vocab}); expected 0 <= token < vocab")
    return 1 - torch.gather(probs, -1, tok.unsqueeze(-1)).squeeze(-1)


# ----------------------------------------------------------------------------- projection


def pca_projection(traj: ArrayLike, n_components: int = 2, fit_layer: int = -1) -> np.ndarray:
    """Project trajectories on the principal components of one layer (paper B §3.3, Fig 1).

    Fits PCA (centred, full SVD) on the points X^{fit_layer} of all tokens, then projects every
    point with that fit. Returns float64 [tok, layer+1, n_components].

    Args:
        traj: [tok, layer+1, d_model].
        n_components: number of components, <= min(tok, d_model).
        fit_layer: index along the layer+1 axis of the points to fit on (default: X^L).
    """
    from sklearn.decomposition import PCA

    x = _array(traj, "traj", 3, "[tok, layer+1, d_model]", exact=True)
    tok, n, d = x.shape
    if not -n <= fit_layer < n:
        raise LlmdynError(f"fit_layer: got {fit_layer}; expected an index in [-{n}, {n})")
    if not 1 <= n_components <= min(tok, d):
        want = f"1 <= n_components <= min(tok, d_model) = {min(tok, d)}"
        raise LlmdynError(f"n_components: got {n_components}; expected {want}")
    pca = PCA(n_components=n_components, svd_solver="full").fit(x[:, fit_layer])  # on [tok, d]
    return pca.transform(x.reshape(-1, d)).reshape(tok, n, n_components)  # [tok, layer+1, n_comp]
