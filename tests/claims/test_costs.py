"""The cost of a plan's n: the additive per-prompt model, the parameter that sets n, the text."""

from __future__ import annotations

import dataclasses
import json

import pytest

from llmdyn.claims import costs
from llmdyn.claims.collected import read_chapter
from llmdyn.claims.costs import ChapterCost, CostTable, cost_text, n_parameter, planned_values

PARAMS = {"model": "smollm2-135m", "n_prompts": 20, "n_compare_prompts": 16,
          "n_lens_prompts": 20, "n_seed_prompts": 2}
#: fixed 60 s, 3 s per prompt, 5 s per compare prompt, 1 s per lens prompt, 7 s per seed prompt
CHAPTER = ChapterCost(60.0, {"n_prompts": 3.0, "n_compare_prompts": 5.0, "n_lens_prompts": 1.0,
                             "n_seed_prompts": 7.0},
                      {"n_prompts": 20, "n_compare_prompts": 16, "n_lens_prompts": 20,
                       "n_seed_prompts": 2},
                      {"n_compare_prompts": ("n_prompts", 1), "n_seed_prompts": ("n_prompts", 1)})
CPU = CostTable("cpu", ("smollm2-135m", "gemma3-270m"), {"04_jacobian_alignment": CHAPTER}, "t")


def test_the_additive_model_at_the_default_and_at_a_raised_parameter():
    assert CHAPTER.seconds({}) == 60 + 3 * 20 + 5 * 16 + 1 * 20 + 7 * 2  # 234
    assert CHAPTER.seconds({"n_prompts": 100}) == 234 + 3 * 80


@pytest.mark.parametrize(("chapter", "claim_id", "model", "expected"), [
    ("04_jacobian_alignment", "align_x", "smollm2-135m", "n_prompts"),
    ("04_jacobian_alignment", "align_x", "gemma3-270m", "n_compare_prompts"),
    ("04_jacobian_alignment", "table1_linear_gemma3_270m", "gemma3-270m", "n_lens_prompts"),
    ("07_regularity", "reg_x", "smollm2-135m", "n_per_task"),
])
def test_the_parameter_that_sets_a_claim_s_n(chapter, claim_id, model, expected):
    params = {**PARAMS, "n_per_task": 20}
    assert n_parameter(chapter, claim_id, model, params) == expected


def test_a_parameter_is_trusted_only_where_its_value_is_the_observed_n():
    assert planned_values("n_prompts", 20, 160, PARAMS, CHAPTER.bound_by) == {"n_prompts": 160}
    # 16 prompts: another list
    assert planned_values("n_prompts", 16, 160, PARAMS, CHAPTER.bound_by) is None


def test_per_task_prompts_scale_with_the_tasks_and_compare_prompts_raise_their_source():
    # 120 prompts = 6 tasks x 20; 157 prompts need ceil(157 / 6) = 27 per task
    assert planned_values("n_per_task", 120, 157, {"n_per_task": 20}, {}) == {"n_per_task": 27}
    assert planned_values("n_compare_prompts", 16, 190, PARAMS, CHAPTER.bound_by) == {
        "n_compare_prompts": 190, "n_prompts": 190}


def test_a_bound_raises_its_source_by_the_units_each_of_its_units_gives():
    # chapter 07: the twins' prompts come from n_per_task x 6 tasks; 40 of them need 7 per task
    bound = {"n_seed_prompts": ("n_per_task", 6)}
    params = {"n_per_task": 2, "n_seed_prompts": 12}
    assert planned_values("n_seed_prompts", 12, 40, params, bound) == {
        "n_seed_prompts": 40, "n_per_task": 7}


def test_the_cost_text_gives_the_chapter_at_the_planned_n_on_each_table():
    gpu = CostTable("NVIDIA H100", CPU.models, {"04_jacobian_alignment": ChapterCost(
        30.0, {"n_lens_prompts": 0.5}, {"n_lens_prompts": 20})}, "g")
    text = cost_text("04_jacobian_alignment", "table1_x_gemma3_270m", "gemma3-270m", 20, 190,
                     PARAMS, tables=(CPU, gpu))
    # CPU: 234 + 1 * (190 - 20) = 404 s = 6.7 min; GPU: 30 + 0.5 * 190 = 125 s = 2.1 min
    assert text == ("cost: the chapter at n_lens_prompts = 190 ≈ 6.7 min of CPU on this machine, "
                    "≈ 2.1 min on an NVIDIA H100 (estimate) (t)")


def test_a_row_measured_on_its_own_day_names_that_day():
    """A partial rerun keeps the other chapters' rows: each names the day it was measured."""
    rerun = dataclasses.replace(CHAPTER, measured="2026-11-27")
    table = CostTable("cpu", CPU.models, {"04_jacobian_alignment": CHAPTER,
                                          "06_token_coupling": rerun},
                      "bench/prompt_cost.py, measured 2026-11-20")
    assert table.chapter_source("06_token_coupling") == "bench/prompt_cost.py, measured 2026-11-27"
    assert table.chapter_source("04_jacobian_alignment") == (
        "bench/prompt_cost.py, measured 2026-11-20")
    text = cost_text("06_token_coupling", "a", "smollm2-135m", 20, 40, PARAMS,
                     tables=(table, None))
    assert text.endswith("(bench/prompt_cost.py, measured 2026-11-27)")


def test_no_price_for_another_model_an_unknown_n_or_a_chapter_not_measured():
    other = {**PARAMS, "model": "gemma3-270m"}
    assert "measured on smollm2-135m + gemma3-270m" in cost_text(
        "04_jacobian_alignment", "a", "gemma3-270m", 20, 40, other, tables=(CPU, None))
    assert cost_text("04_jacobian_alignment", "a", "smollm2-135m", 16, 40, PARAMS,
                     tables=(CPU, None)).startswith("cost: not priced")
    assert cost_text("03_uncertainty", "a", "smollm2-135m", 20, 40, PARAMS,
                     tables=(CPU, None)) == ""
    assert cost_text("04_jacobian_alignment", "a", "smollm2-135m", 20, None, PARAMS,
                     tables=(CPU, None)) == ""


def test_the_table_reads_back_from_the_bench_json(tmp_path):
    raw = {"commit": "abc", "start": "2026-11-27T22:51:35", "device": "cpu",
           "chapters": {"04_jacobian_alignment": {
        "fixed_cpu_s": 60.0, "default_cpu_s": 234.0, "predicted_default_cpu_s": 234.0,
        "parameters": {p: {"default": CHAPTER.defaults[p], "n": [2, CHAPTER.defaults[p]],
                           "cpu_s": [0, 0], "cpu_s_per_unit": r, "unit": "prompt",
                           **({"bound_by": "n_prompts", "per_bound": 1}
                              if p in CHAPTER.bound_by else {})}
                       for p, r in CHAPTER.per_unit_s.items()}}}}
    (tmp_path / "t.json").write_text(json.dumps(raw))
    table = CostTable.read(tmp_path / "t.json")
    assert table.chapters["04_jacobian_alignment"] == CHAPTER
    assert table.source == "bench/prompt_cost.py, measured 2026-11-27"  # a day, never a commit
    assert CostTable.read(tmp_path / "missing.json") is None


def test_the_scorecard_record_of_a_planned_prompt_claim_carries_its_cost(tmp_path, monkeypatch):
    monkeypatch.setattr(costs.CostTable, "read", classmethod(
        lambda cls, path: CPU if path.name == costs.CPU_TABLE else None))
    record = {"id": "align_x", "paper": "B", "section": "§", "statement": "s",
              "paper_value": "p", "grade": "inconclusive", "reason": "", "number": "1",
              "result": "r", "rule": "x", "to_decide": "n = 40 prompts", "to_decide_n": 40,
              "n": 20, "unit": "prompt"}
    glue = [{"output_type": "display_data", "data": {"text/plain": repr(v)},
             "metadata": {"scrapbook": {"name": k, "mime_prefix": ""}}}
            for k, v in (("scorecard", "<table></table>"), ("claims", json.dumps([record])))]
    nb = {"metadata": {"papermill": {"parameters": PARAMS}}, "nbformat": 4, "nbformat_minor": 5,
          "cells": [{"cell_type": "markdown", "source": "# T\n\n## Claims", "metadata": {}},
                    {"cell_type": "code", "source": "", "metadata": {}, "outputs": glue}]}
    path = tmp_path / "04_jacobian_alignment.ipynb"
    path.write_text(json.dumps(nb))
    (published,) = read_chapter(path)
    # 234 + 3 * (40 - 20) = 294 s = 4.9 min
    assert published.records[0].to_decide == (
        "n = 40 prompts; cost: the chapter at n_prompts = 40 ≈ 4.9 min of CPU on this machine; "
        f"on a GPU: not measured ({costs.NO_GPU}) (t)")
