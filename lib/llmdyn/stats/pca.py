"""Principal-component projection of trajectories (paper B Fig 1)."""

from __future__ import annotations

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core.arrays import ArrayLike, checked_array


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

    x = checked_array(traj, "traj", 3, "[tok, layer+1, d_model]", exact=True)
    tok, n, d = x.shape
    if not -n <= fit_layer < n:
        raise LlmdynError(f"fit_layer: got {fit_layer}; expected an index in [-{n}, {n})")
    if not 1 <= n_components <= min(tok, d):
        want = f"1 <= n_components <= min(tok, d_model) = {min(tok, d)}"
        raise LlmdynError(f"n_components: got {n_components}; expected {want}")
    pca = PCA(n_components=n_components, svd_solver="full").fit(x[:, fit_layer])  # [tok, d_model]
    # [tok·(layer+1), d_model] → [tok, layer+1, n_components]
    return pca.transform(x.reshape(-1, d)).reshape(tok, n, n_components)
