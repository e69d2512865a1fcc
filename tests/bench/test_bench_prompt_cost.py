"""bench/prompt_cost.py: the runs it plans, the additive fit and its table (no chapter runs)."""

import importlib.util
import sys

import pytest

from llmdyn.runner.build import REPO

spec = importlib.util.spec_from_file_location("bench_prompt_cost",
                                              REPO / "bench" / "prompt_cost.py")
bench = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bench  # dataclasses look their module up there
spec.loader.exec_module(bench)

KNOBS = (bench.Knob("n_prompts", 2), bench.Knob("n_compare_prompts", 1, bound_by="n_prompts"),
         bench.Knob("n_pair_prompts", 1, large=3))
DEFAULT = {"n_prompts": 20, "n_compare_prompts": 16, "n_pair_prompts": 1}
TRUTH = {"fixed": 30.0, "n_prompts": 5.0, "n_compare_prompts": 2.0, "n_pair_prompts": 7.0}


def fake_cpu(values):
    """A chapter whose CPU is exactly additive."""
    return TRUTH["fixed"] + sum(TRUTH[name] * n for name, n in values.items())


def test_plan_raises_a_bounding_parameter_just_enough_and_uses_large_for_a_minimal_default():
    runs = dict(bench.plan(KNOBS, DEFAULT))
    assert runs["base"] == {"n_prompts": 2, "n_compare_prompts": 1, "n_pair_prompts": 1}
    assert runs["n_prompts"] == {"n_prompts": 20, "n_compare_prompts": 1, "n_pair_prompts": 1}
    # n_compare_prompts 16 needs 16 prompts to draw from, not the default 20
    assert runs["n_compare_prompts"] == {"n_prompts": 16, "n_compare_prompts": 16,
                                         "n_pair_prompts": 1}
    assert runs["n_pair_prompts"] == {"n_prompts": 2, "n_compare_prompts": 1, "n_pair_prompts": 3}
    assert runs["default"] == DEFAULT


def test_plan_counts_a_bound_in_units_of_its_bounding_parameter():
    knobs = (bench.Knob("n_per_task", 1), bench.Knob("n_seed_prompts", 1, bound_by="n_per_task",
                                                     per_bound=6))
    runs = dict(bench.plan(knobs, {"n_per_task": 20, "n_seed_prompts": 20}))
    assert runs["n_seed_prompts"] == {"n_per_task": 4, "n_seed_prompts": 20}  # 4 × 6 ≥ 20


def test_a_one_parameter_chapter_has_no_separate_default_run():
    runs = bench.plan((bench.Knob("n_prompts", 2),), {"n_prompts": 16})
    assert [label for label, _ in runs] == ["base", "n_prompts"]


def test_fit_recovers_an_additive_cost_exactly():
    runs = [(v, fake_cpu(v)) for label, v in bench.plan(KNOBS, DEFAULT) if label != "default"]
    fixed, slopes = bench.fit([k.name for k in KNOBS], runs)
    assert fixed == pytest.approx(30.0)
    assert slopes == pytest.approx({"n_prompts": 5.0, "n_compare_prompts": 2.0,
                                    "n_pair_prompts": 7.0})
    assert bench.predict(fixed, slopes, DEFAULT) == pytest.approx(30 + 100 + 32 + 7)


def test_fit_refuses_runs_that_cannot_separate_the_parameters():
    same = {"n_prompts": 2, "n_compare_prompts": 1}
    with pytest.raises(ValueError, match="do not separate"):
        bench.fit(["n_prompts", "n_compare_prompts"], [(same, 10.0), (same, 11.0),
                                                       ({"n_prompts": 4, "n_compare_prompts": 2},
                                                        12.0)])


def test_chapter_table_reports_slopes_pairs_and_the_additivity_check():
    measured = [(label, v, {"cpu_s": fake_cpu(v)}) for label, v in bench.plan(KNOBS, DEFAULT)]
    measured[-1][2]["cpu_s"] += 9.0  # the default run costs 9 CPU-s more than the sum
    entry = bench.chapter_table(KNOBS, DEFAULT, measured)
    assert entry["fixed_cpu_s"] == 30.0
    assert entry["predicted_default_cpu_s"] == 169.0
    assert entry["default_cpu_s"] == 178.0
    assert entry["default_run_fitted"] is False
    compare = entry["parameters"]["n_compare_prompts"]
    assert compare == {"default": 16, "n": [1, 16], "cpu_s": [49.0, 149.0],
                       "cpu_s_per_unit": 2.0, "unit": "prompt", "with": {"n_prompts": 16},
                       "bound_by": "n_prompts", "per_bound": 1}  # read by claims.costs
    assert entry["parameters"]["n_pair_prompts"]["n"] == [1, 3]


def test_markdown_has_one_row_per_parameter_and_the_check_on_the_first():
    measured = [(label, v, {"cpu_s": fake_cpu(v)}) for label, v in bench.plan(KNOBS, DEFAULT)]
    report = {"chapters": {"04_jacobian_alignment": bench.chapter_table(KNOBS, DEFAULT, measured)}}
    lines = bench.markdown(report).splitlines()
    assert len(lines) == 2 + 3
    assert lines[2].startswith("| 04 | 30 | `n_prompts` (20) | 5.00 | prompt | 100 | 169 (169) |")
    assert lines[3].startswith("|  |  | `n_compare_prompts` (16) | 2.00 |")


def test_every_chapter_names_parameters_its_class_has():
    for chapter in bench.CHAPTERS:
        assert set(bench.defaults(chapter)) == {k.name for k in bench.CHAPTERS[chapter][1]}


def test_compare_markdown_puts_before_and_after_side_by_side():
    knobs = KNOBS[:1]
    default = {"n_prompts": 20}

    def report(per_prompt):
        measured = [(label, v, {"cpu_s": 30 + per_prompt * v["n_prompts"]})
                    for label, v in bench.plan(knobs, default)]
        return {"chapters": {"05_depth_coupling": bench.chapter_table(knobs, default, measured)}}

    lines = bench.compare_markdown(report(5.0), report(2.0)).splitlines()
    assert lines[2] == "| 05 | `n_prompts` | 30 → 30 | 5.00 → 2.00 | 130 → 70 |"


def test_runs_take_the_workflow_s_one_thread_unless_told_otherwise():
    assert bench.thread_settings(1) == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert bench.thread_settings(4)["OMP_NUM_THREADS"] == "4"
    assert bench.thread_settings(0) == {}  # the environment's own


@pytest.mark.parametrize("chapter", sorted(bench.CHAPTERS))
def test_every_count_a_chapter_draws_from_another_is_bounded_by_it_in_the_bench_too(chapter):
    """The classes refuse a count beyond the one it is drawn from (``drawn_from``); the bench's
    runs must then raise that one with it, or its run of the chapter would be refused."""
    from llmdyn.book import params

    cls_name, knobs = bench.CHAPTERS[chapter]
    bounds = {k.name: k.bound_by for k in knobs}
    drawn = getattr(params, cls_name).drawn_from
    assert {name: bounds.get(name) for name in drawn} == \
        {name: pool for name, (pool, _) in drawn.items()}
