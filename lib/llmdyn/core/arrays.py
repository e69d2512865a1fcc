"""Array inputs of the paper formulas: torch or numpy, checked for shape and finite values."""

from __future__ import annotations

import numpy as np
import torch

from llmdyn import LlmdynError
from llmdyn.core.checks import all_finite

ArrayLike = np.ndarray | torch.Tensor


def check_values(x: ArrayLike, name: str, min_ndim: int, expected: str,
                 exact: bool = False) -> None:
    """Raise LlmdynError if ``x`` has the wrong ndim or non-finite entries."""
    shape = tuple(x.shape)
    if (x.ndim != min_ndim) if exact else (x.ndim < min_ndim):
        raise LlmdynError(f"{name}: got shape {shape} (ndim {x.ndim}); expected {expected}")
    if not all_finite(x):
        finite = torch.isfinite(x) if isinstance(x, torch.Tensor) else np.isfinite(x)
        bad, total = int((~finite).sum()), int(np.prod(x.shape))
        raise LlmdynError(
            f"{name}: has {bad} NaN/inf value(s) among {total} entries of shape {shape};"
            " expected finite values"
        )


def checked_tensor(x: ArrayLike, name: str, min_ndim: int, expected: str,
                   exact: bool = False) -> torch.Tensor:
    """Checked torch tensor; floating dtypes are kept, others become float64."""
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    t = t if t.is_floating_point() else t.to(torch.float64)
    check_values(t, name, min_ndim, expected, exact)
    return t


def host_array(t: torch.Tensor) -> np.ndarray:
    """A tensor's values as a numpy array on the host, whatever device computed them.

    Detached and copied off an accelerator (``.cpu()`` is a no-op for a CPU tensor, so the CPU
    path is unchanged); bfloat16, which numpy lacks, is widened to float32 (exact).
    """
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def checked_array(x: ArrayLike, name: str, min_ndim: int, expected: str,
                  exact: bool = False) -> np.ndarray:
    """Checked float64 numpy array."""
    a = np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=np.float64)
    check_values(a, name, min_ndim, expected, exact)
    return a


def off_diagonal(n: int) -> np.ndarray:
    """``[n, n]`` boolean mask, True off the diagonal: the pairs i ≠ j of a square map.

    The one mask of every mean over distinct pairs: layer pairs l ≠ l′ of m̃ or r(A), token
    pairs of a token-coupling grid.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise LlmdynError(f"n: got {n!r}; expected a non-negative int (the side of a square map)")
    return ~np.eye(n, dtype=bool)
