"""Few-valued statistics: no median interval from ties, no percentile fallback labelled BCa."""

import numpy as np
import pytest

from llmdyn.claims import Claim, Measure, above, at_most, within
from llmdyn.stats import bootstrap


def test_a_bootstrap_whose_draws_take_one_value_is_labelled_percentile():
    values = np.r_[np.full(15, 0.5), 0.9]  # every draw's median is 0.5: BCa is undefined
    est = bootstrap.bootstrap(bootstrap.median, values)
    assert est.method == "percentile" and (est.lo, est.hi) == (0.5, 0.5)
    spread = bootstrap.bootstrap(bootstrap.mean, np.linspace(0, 1, 16))
    assert spread.method == "bca" and spread.lo < 0.5 < spread.hi


def test_a_percentile_fallback_gets_no_verdict_and_says_so():
    values = np.r_[np.full(15, 0.5), 0.9]
    m = Measure.median(values, "l/L", method="bca", sampling_unit="prompt")  # n = 16: BCa
    claim = Claim("w", "B", "§5", "s", "p", m, at_most(0.6))
    assert claim.verdict.grade == "no verdict"
    assert "percentile interval shown was never calibrated" in claim.verdict.reason
    assert "percentile bootstrap" in claim.result_text()  # named as what it is, not BCa


def test_the_median_of_a_few_valued_statistic_is_refused_and_the_share_is_judged():
    where = np.tile([0.2, 0.4, 0.6, 0.8], 5)  # a position with 4 values over 20 prompts
    median = Claim("w", "B", "§5", "s", "p",
                   Measure.median(where, "l/L", sampling_unit="prompt"), at_most(0.6))
    assert median.verdict.grade == "no verdict"
    assert median.verdict.reason.startswith("the median of a statistic with 4 values over 20")
    # the sign test's form: 15 of 20 at l/L <= 0.6, Clopper–Pearson [0.509, 0.913] > 0.5
    share = Claim("w", "B", "§5", "s", "p", Measure.share_on_side(
        where, at_most(0.6), "share at l/L <= 0.6", sampling_unit="prompt"), above(0.5))
    est = share.measure.estimate
    assert est.value == 0.75 and est.method == "exact"
    assert (round(est.lo, 3), round(est.hi, 3)) == (0.509, 0.913)
    assert share.verdict.grade == "holds"
    continuous = np.random.default_rng(0).uniform(0, 1, 20)  # 20 values: the order interval
    got = Claim("w", "B", "§5", "s", "p",
                Measure.median(continuous, "x", sampling_unit="prompt"), within(0.5, 0.5))
    assert got.measure.estimate.method == "order" and got.verdict.grade == "holds"


def test_prompts_in_tasks_are_judged_over_the_task_means():
    from llmdyn.claims import per_cluster

    # 3 tasks of 4 prompts: the task explains the spread; over prompts the interval would be
    # 12 units wide of it, over tasks it is the t interval of the 3 task means
    tasks = [t for t in ("arc", "gsm8k", "mmlu") for _ in range(4)]
    values = np.array([1.0, 1.1, 0.9, 1.0, 3.0, 3.1, 2.9, 3.0, 5.0, 5.1, 4.9, 5.0])
    means = per_cluster(values, tasks)
    assert means == {"arc": 1.0, "gsm8k": 3.0, "mmlu": 5.0}
    assert per_cluster(values, tasks, np.max) == {"arc": 1.1, "gsm8k": 3.1, "mmlu": 5.1}
    m = Measure.mean(means, "x", sampling_unit="task", members="12 prompts")
    half = 4.302653 * 2.0 / np.sqrt(3)  # t(0.975, 2) · sd 2 / √3
    assert (m.estimate.lo, m.estimate.hi) == pytest.approx((3 - half, 3 + half))
    assert m.interval_text() == "n = 12 prompts in 3 tasks, t interval"
    pooled = Measure.mean(values, "x", sampling_unit="prompt")
    assert pooled.estimate.hi - pooled.estimate.lo < (m.estimate.hi - m.estimate.lo) / 3
