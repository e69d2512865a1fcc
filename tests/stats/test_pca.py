"""PCA projection: planar distances preserved (float64)."""

import numpy as np

from llmdyn.stats.pca import pca_projection

# ----------------------------------------------------------------------------- projection


def test_pca_projection_preserves_planar_distances():
    rng = np.random.default_rng(1)
    d = 10
    basis, _ = np.linalg.qr(rng.standard_normal((d, 2)))  # [d_model, 2] orthonormal
    offset = rng.standard_normal(d)
    coords = rng.standard_normal((4, 6, 2))  # [tok, layer+1, 2]
    traj = coords @ basis.T + offset  # [tok, layer+1, d_model], all in one affine plane
    proj = pca_projection(traj)
    assert proj.shape == (4, 6, 2)

    def pairwise(x):
        flat = x.reshape(-1, x.shape[-1])
        return np.linalg.norm(flat[:, None] - flat[None], axis=-1)

    # projection onto the plane is an isometry of the plane; float64 SVD round-off ~1e-15
    assert np.allclose(pairwise(proj), pairwise(traj), atol=1e-10)
