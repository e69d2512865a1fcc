from __future__ import annotations

import re
import shlex

import numpy as np
import pytest

from llmdyn.claims.claim import Claim, Measure, above, at_least
from llmdyn.claims.planning import (
    CHAPTER,
    FIXED,
    PACKAGED,
    WHERE,
    for_chapter,
    is_open,
    to_decide,
)
from llmdyn.runner.build import REPO
from llmdyn.stats import bootstrap


def _claim(measure, rule, id="c"):
    return Claim(id, "A", "§5.1", "a statement", "paper says", measure, rule)


STRADDLING = np.random.default_rng(4).normal(0.5, 1.0, 8)  # 0.422 [-0.397, 1.241]: straddles 0


def test_an_inconclusive_mean_plans_the_n_its_own_t_rule_needs_and_where_it_is_set():
    claim = _claim(Measure.mean(STRADDLING, "d", sampling_unit="prompt"), above(0))
    assert claim.verdict.grade == "inconclusive" and is_open(claim)
    text = to_decide(claim, n_draws=300)
    n = int(text.split()[2])
    assert text.startswith("n = ") and " prompts (" in text and 10 <= n <= 120
    assert (f"to run it: the chapter's prompt count (n_prompts, n_compare_prompts, n_per_task, "
            f"...) for {n} prompts in DIR/<chapter>.yaml, then `llmdyn workflow --only "
            "<chapter> --config chapter_params=DIR`") in text


def test_decided_and_unjudged_grades_have_nothing_to_decide():
    holds = _claim(Measure.mean(STRADDLING + 3, "d", sampling_unit="prompt"), above(0))
    misses = _claim(Measure.mean(STRADDLING - 3, "d", sampling_unit="prompt"), above(0))
    not_run = _claim(Measure.not_run("d", "no compare model"), above(0))
    compared = _claim(Measure.mean(STRADDLING, "d", sampling_unit="prompt"), None)
    assert [c.verdict.grade for c in (holds, misses, not_run, compared)] == [
        "holds", "does not hold", "not run", "for comparison"]
    assert {to_decide(c) for c in (holds, misses, not_run, compared)} == {""}


def test_an_open_bootstrap_only_statistic_says_a_covered_one_would_decide_it():
    spread = Measure.of(lambda a: a.max(-1) - a.min(-1), np.arange(8.0), quantity="range",
                        sampling_unit="prompt")
    assert to_decide(_claim(spread, at_least(2))) == (
        "not plannable: a bootstrap-only statistic; a covered per-unit statistic would decide it")


def test_three_runs_need_a_fourth_from_a_new_suite():
    few = _claim(Measure.mean([1.5, 2.5, 2.1], "m", sampling_unit="run"), at_least(2))
    assert few.verdict.grade == "inconclusive"  # a t interval over 3 runs, too wide to decide
    text = for_chapter(to_decide(few), "08_training")
    assert text.startswith("not plannable: 3 units observed, fewer than 4, so their spread is "
                           "unknown; measure at least 4; a suite of 4 runs: a new suite")
    assert "`llmdyn workflow --only 08_training --config suite=NAME`" in text


def test_three_vits_need_a_new_grid():
    few = _claim(Measure.mean([0.1, -0.2, 0.3], "m", sampling_unit="ViT"), above(0))
    assert "; a grid with 4 ViTs: a new grid (an entry of llmdyn.vision.grids.GRIDS; " \
           "`grid: NAME` in DIR/<chapter>.yaml" in to_decide(few)


def test_a_zero_width_interval_is_not_plannable_by_more_of_the_same_units():
    same = _claim(Measure.mean(0.76 + 1e-9 * np.array([1, 2, 3, 1, 2]), "d",
                               sampling_unit="prompt"), above(0.5))
    assert same.verdict.reason.startswith("zero-width interval")
    assert to_decide(same) == (
        "not plannable: every unit gives the same value (to float32's precision); more units "
        "of the same kind cannot widen it (a different statistic or unit would)")


def test_a_one_prompt_estimate_needs_the_measurement_repeated_on_four():
    one = _claim(Measure.single(3.0, "q", sampling_unit="prompt"), above(0))
    assert one.verdict.reason == "an estimate with no interval (n = 1)"
    assert to_decide(one).startswith("needs the measurement repeated on ≥ 4 prompts (n = 1 now); "
                                     "to run it: the chapter's prompt count")


def test_a_gated_no_verdict_names_its_gate():
    est = bootstrap.Estimate(1.0, float("nan"), float("nan"), 20)
    gated = _claim(Measure("q", est, missing="no verdict", reason="the BCa check fails at n = 20",
                           sampling_unit="prompt"), above(0))
    assert to_decide(gated) == "not plannable: the BCa check fails at n = 20"


def test_an_estimate_with_no_unit_is_told_to_take_one_value_per_unit():
    tokens = _claim(Measure.mean(STRADDLING, "d"), above(0))
    assert tokens.verdict.grade == "no verdict"
    assert to_decide(tokens).startswith("not plannable: no independent unit declared; one value "
                                        "per prompt, model or run")


def test_pretrained_models_say_they_cannot_grow_offline():
    pair = _claim(Measure.single(0.1, "q", n=2, sampling_unit="model"), above(0), id="geo_size")
    assert to_decide(pair) == (
        "needs the measurement repeated on ≥ 4 models (n = 2 now); more pretrained models, the "
        "papers' 7B ones among them, do not load offline: with a network, name hub ids in "
        "compare_models")


def test_the_fixed_ids_are_claims_of_the_chapters():
    sources = "".join(p.read_text() for p in (REPO / "notebooks").glob("*.ipynb"))
    assert all(f'\\"{cid}\\"' in sources for cid in FIXED)
    assert all(f'f\\"{prefix}{{' in sources for prefix in PACKAGED)  # f"unc_ambiguous_{s}"


def test_a_claim_whose_n_is_packaged_data_names_the_data_not_a_parameter():
    groups = _claim(Measure.difference(STRADDLING + 0.6, STRADDLING[::-1], "d", paired=False,
                                       sampling_unit="prompt"), above(0), id="unc_ambiguous_m")
    assert groups.verdict.grade == "inconclusive"
    text = to_decide(groups, n_draws=100)
    assert "prompts in each group, written into the book's own lists (llmdyn.data.ambiguity" \
        in text and "n_prompts" not in text


@pytest.mark.parametrize("unit", sorted(WHERE))
def test_every_printed_command_parses(unit):
    from llmdyn.cli import build_parser

    text = for_chapter(WHERE[unit].format(n=40), "05_depth_coupling")
    assert CHAPTER not in text
    for command in re.findall(r"`(llmdyn [^`]+)`", text):
        argv = shlex.split(command)[1:]
        args = build_parser(argv[0]).parse_args(argv)
        assert args.only == ["05_depth_coupling"] and args.config


def test_the_plan_says_what_it_assumes():
    from llmdyn.claims.planning import coverage_label, over_interval, population_note

    rng = np.random.default_rng(0)
    x = rng.standard_normal(20)
    x = (x - x.mean()) / x.std(ddof=1) + 0.1  # mean 0.1, sd 1 exactly: SE·√n = 1
    claim = Claim("m", "B", "§1", "s", "p", Measure.mean(x, "x", sampling_unit="prompt"),
                  above(0))
    hi = 0.1 + 2.093024 / 20 ** 0.5  # the t interval's upper end, t_{0.975, 19} = 2.093024
    n_far = int(np.ceil((2.801585 / hi) ** 2))  # (z_0.975 + z_0.8)² (1 / Δ)², Δ = hi − 0
    assert n_far == 25
    assert over_interval(claim, 700) == (
        f"over the effect's 95 % interval the n runs from about {n_far} (an effect at "
        f"{hi:.3f}) to no n where the effect sits at the threshold, which the interval "
        "contains; 700 assumes the observed effect")
    assert coverage_label(claim, 40) == ("judged with the t interval (94.4 % simulated coverage "
                                         "at n = 32, data/coverage.csv)")
    assert population_note("03_uncertainty", "prompt", 71) == ""
    assert population_note("03_uncertainty", "prompt", 72).startswith(
        "warning: past 71 prompts the draw leaves the one SQuAD article")
    assert population_note("07_regularity", "prompt", 500) == ""
