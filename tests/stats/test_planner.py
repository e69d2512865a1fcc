"""The planner against a closed form: the n at which a t interval decides a normal mean."""

import math

import numpy as np
import pytest
from scipy import stats

from llmdyn.stats.intervals import t_mean
from llmdyn.stats.planner import MIN_UNITS, empirical_draw, plan


def t_judge(threshold: float):
    """Holds when the 95 % t interval of the mean lies wholly above ``threshold``."""
    def judge(samples, seed):
        lo, hi = (float(v) for v in t_mean(samples[0]))
        return "holds" if lo > threshold else "does not hold" if hi < threshold else \
            "inconclusive"
    return judge


def closed_form_n(effect: float, target: float = 0.8) -> int:
    """Smallest n with P(t interval's lower end > 0) ≥ target for a N(effect, 1) mean.

    lo > 0 ⇔ the t statistic exceeds t_{0.975, n−1}; under the effect the statistic is
    noncentral t with n − 1 degrees of freedom and noncentrality effect·√n. "Does not hold"
    (hi < 0) has negligible probability here.
    """
    n = 2
    while stats.nct.sf(stats.t.ppf(0.975, n - 1), n - 1, effect * math.sqrt(n)) < target:
        n += 1
    return n


def normal_draw(mean: float, sd: float = 1.0):
    def draw(rng, n):
        return (rng.normal(mean, sd, n),)
    return draw


@pytest.mark.parametrize("effect", [0.5, 0.8])
def test_the_planned_n_of_a_t_interval_matches_the_noncentral_t_within_two(effect):
    expected = closed_form_n(effect)  # 34 at 0.5, 15 at 0.8
    got = plan(t_judge(0.0), draw=normal_draw(effect), n_draws=4000, seed=1)
    assert abs(got.n - expected) <= 2, (got, expected)
    assert got.share >= 0.8 and got.verdict == "holds" and got.reason == ""


def test_no_effect_is_not_within_the_limit_and_few_units_are_not_plannable():
    flat = plan(t_judge(0.0), draw=normal_draw(0.0), max_n=64, n_draws=200)
    assert flat.n is None and flat.reason.startswith("not within 64")
    few = plan(t_judge(0.0), [np.array([1.0, 2.0, 3.0])])
    assert few.n is None and few.reason.startswith("not plannable: 3 units")
    assert MIN_UNITS == 4


def test_the_empirical_truth_keeps_paired_units_together():
    a, b = np.arange(10.0), np.arange(10.0) * 2
    x, y = empirical_draw([a, b])(np.random.default_rng(0), 50)
    assert np.array_equal(y, 2 * x)


def test_an_observed_sample_plans_with_its_own_effect_and_spread():
    rng = np.random.default_rng(3)
    observed = rng.normal(0.5, 1.0, 200)  # a large sample: its empirical law ≈ N(0.5, 1)
    got = plan(t_judge(0.0), [observed], n_draws=2000)
    assert abs(got.n - closed_form_n(observed.mean() / observed.std())) <= 4
    assert got.text("prompts").startswith(f"n = {got.n} prompts (")
