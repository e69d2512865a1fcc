"""The power of a judging rule by simulation: checked where the answer is known."""

import numpy as np
import pytest

from llmdyn import LlmdynError, stats
from llmdyn.claims import Measure, at_least, below


def _design(n, seed=0):
    return np.random.default_rng(seed).standard_normal(n)


def test_f_test_rule_rejects_alpha_of_the_time_under_no_effect():
    # 2,000 draws: the share's standard error at 0.05 is 0.0049; tolerance 3 standard errors
    power = stats.rule_power(stats.f_test_judge(0.05), stats.linear_draw(_design(27), 0.0),
                             n_draws=2000, seed=1)
    assert power.share("holds") == pytest.approx(0.05, abs=0.015)
    assert power.counts["holds"] + power.counts["does not hold"] == 2000


def test_f_test_rule_has_the_noncentral_f_power_at_the_detectable_r2():
    # at min_detectable_r2(27) the exact F power is 0.80 on this fixed design (λ = n f²);
    # 2,000 draws: standard error 0.0089, tolerance 3 standard errors
    r2 = stats.min_detectable_r2(27)
    power = stats.rule_power(stats.f_test_judge(0.05), stats.linear_draw(_design(27), r2),
                             n_draws=2000, seed=2)
    assert power.share("holds") == pytest.approx(0.80, abs=0.027)
    assert power.margin("holds") == pytest.approx(1.96 * np.sqrt(0.8 * 0.2 / 2000), abs=0.003)


def test_linear_draw_has_the_stated_r2_and_scale():
    draw = stats.linear_draw(_design(2000), 0.6, sign=-1.0, scale=3.0)
    x, y = draw(np.random.default_rng(1))  # not the design's seed: ε would equal x
    assert stats.r2(x, y) == pytest.approx(0.6, abs=0.03)
    assert np.std(y) == pytest.approx(3.0, rel=0.05)
    assert stats.slope(x, y) < 0


def _bootstrap_r2_judge(x, y, seed):
    return at_least(0.5).judge(Measure.r2(x, y, "R²", seed=seed).estimate)[0]


def test_bootstrap_r2_rule_at_large_n_holds_nearly_always_and_never_under_no_effect():
    # n = 200, true R² 0.75: the interval is about ±0.06 wide, so its lower end clears 0.5
    strong = stats.rule_power(_bootstrap_r2_judge, stats.linear_draw(_design(200), 0.75),
                              n_draws=30, seed=3)
    null = stats.rule_power(_bootstrap_r2_judge, stats.linear_draw(_design(200), 0.0),
                            n_draws=30, seed=4)
    assert strong.share("holds") == 1.0
    assert null.share("does not hold") == 1.0


def test_slope_rule_under_no_effect_holds_rarely():
    # a two-sided 95 % interval wholly below 0 under a zero slope: about 2.5 % of draws
    def judge(x, y, seed):
        return below(0).judge(Measure.slope(x, y, "slope", seed=seed).estimate)[0]

    power = stats.rule_power(judge, stats.linear_draw(_design(27), 0.0), n_draws=400, seed=5)
    assert power.share("holds") < 0.08
    assert power.share("inconclusive") > 0.85


def test_rule_power_is_seeded_and_checks_its_input():
    args = (stats.f_test_judge(), stats.linear_draw(_design(27), 0.3))
    assert stats.rule_power(*args, n_draws=50, seed=7) == stats.rule_power(*args, n_draws=50,
                                                                           seed=7)
    with pytest.raises(LlmdynError, match="n_draws"):
        stats.rule_power(*args, n_draws=5)
    with pytest.raises(LlmdynError, match="r2 must lie"):
        stats.linear_draw(_design(27), 1.0)
    with pytest.raises(LlmdynError, match="varying values"):
        stats.linear_draw(np.ones(27), 0.5)
