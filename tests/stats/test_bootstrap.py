"""The vectorised statistics of the unit-audit kinds, on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from llmdyn.stats import bootstrap


def test_geometric_mean_ratio_of_paired_values():
    a, b = np.array([[2.0, 8.0]]), np.array([[1.0, 2.0]])  # ratios 2 and 4
    assert bootstrap.geometric_mean_ratio(a, b) == pytest.approx([np.sqrt(8)])


def test_variance_ratio_uses_sample_variances():
    a, b = np.array([[2.0, 4, 6, 8]]), np.array([[1.0, 3, 2, 4]])
    assert bootstrap.variance_ratio(a, b) == pytest.approx([(20 / 3) / (5 / 3)])


def test_correlation_difference_is_the_difference_of_pearson_rs():
    rng = np.random.default_rng(5)
    y, x1, x2 = rng.normal(size=(3, 27))
    expected = sps.pearsonr(y, x1).statistic - sps.pearsonr(y, x2).statistic
    assert bootstrap.correlation_difference(y[None], x1[None], x2[None]) == pytest.approx(
        [expected])
