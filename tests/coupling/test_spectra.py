import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.coupling.spectra import depth_axis, inverse_top_fit, power_law_fit


def _spectra(top):
    """[prompt=2, layer, k=3] with the given top singular values and smaller ones below."""
    top = np.asarray(top, dtype=float)
    S = np.stack([top, top / 2, top / 3], -1)
    return np.stack([S, S])


def test_exact_inverse_scaling_gives_r2_one():
    depth = depth_axis(12)
    fit = inverse_top_fit(_spectra(4.0 / depth))  # sigma_1 = 4 / l  =>  1/sigma_1 = l / 4
    assert fit.slope == pytest.approx(0.25) and fit.intercept == pytest.approx(0, abs=1e-12)
    assert fit.r2 == pytest.approx(1.0) and fit.n == 24
    assert power_law_fit(_spectra(4.0 / depth)).slope == pytest.approx(-1.0)


def test_power_law_exponent():
    depth = depth_axis(10)
    assert power_law_fit(_spectra(3 * depth**-0.5)).slope == pytest.approx(-0.5)


def test_first_layer_shifts_the_axis():
    assert depth_axis(3, first_layer=0).tolist() == [0.0, 1.0, 2.0]
    depth = depth_axis(6)
    assert inverse_top_fit(_spectra(1 / depth)[0], first_layer=1).r2 == pytest.approx(1.0)


def test_bad_inputs():
    with pytest.raises(LlmdynError, match="at least 3 layers"):
        inverse_top_fit(np.ones((2, 4)))
    with pytest.raises(LlmdynError, match="positive"):
        inverse_top_fit(np.zeros((4, 2)))
    with pytest.raises(LlmdynError, match="first_layer"):
        power_law_fit(np.ones((4, 2)), first_layer=0)
