"""tools/unit_audit.py: the unit audit's re-grading of a build (known answers on made-up rows)."""

import importlib.util
import json
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))
_SPEC = importlib.util.spec_from_file_location("unit_audit", TOOLS / "unit_audit.py")
ua = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ua)


def _fields(result, n="20", unit="prompt", verdict=""):
    return {"n": n, "unit": unit, "result": result, "verdict": verdict}


def test_a_graded_estimate_needs_a_unit_three_of_them_and_two_printed_ends():
    assert ua.problems(_fields("x: 0.38 [0.37, 0.39] (n = 20 prompts, t interval)")) == []
    assert ua.problems(_fields("x: 0.38 [0.38, 0.38] (n = 20 prompts, t interval)")) == [
        "zero width as printed: : 0.38 [0.38, 0.38]"]
    assert ua.problems(_fields("x: 0.38 [0.3, 0.4] (n = 9 tokens)", n="9", unit="token")) == [
        "unit 'token'"]
    assert ua.problems(_fields("x: 0.4 (n = 2 prompts, no interval)", n="2")) == [
        "n '2'", "no printed interval"]


def test_the_frozen_denominator_leaves_out_flipping_splits_and_untestable_rows():
    rows = [("02", "a", "holds", _fields("a: 1.0 [0.9, 1.1] (n = 20 prompts)")),
            ("02", "b", "no verdict", _fields("b: 1.0", verdict="no verdict (n = 1)")),
            ("03", "f", "holds", _fields("f: yes (a fact about the France prompt)", n="1",
                                        unit="")),
            ("04", "table1_x_m_consensus", "inconclusive",
             _fields("t: 0.5 [0.4, 0.6] (n = 20 prompts)")),
            ("04", "table1_x_m_thirds", "holds", _fields("t: 0.5 [0.45, 0.6] (n = 20)")),
            ("05", "c", "for comparison", _fields("c: 2.0"))]
    result = ua.audit(rows)
    assert (result["graded"], result["testable"]) == (3, 4)
    assert result["facts"] == ["f"] and result["problems"] == []
    assert result["added"] == {"holds": 1}
    assert result["no_verdict"] == [("02", "b", "no verdict (n = 1)")]
    assert "Graded: 3 of 4 testable rows (75.0 %), 1 of them facts" in ua.report(result)
    assert ua.report(result).startswith(
        "| chapter | grades |\n| --- | --- |\n| 02 | 1 holds, 1 no verdict |\n")
    assert ua.report(ua.audit([])).startswith("No chapter glued claim rows.\n")


def test_rows_are_read_from_glued_outputs(tmp_path):
    def output(name, text):
        return {"output_type": "display_data", "data": {"text/plain": text},
                "metadata": {"scrapbook": {"name": name, "mime_prefix": ""}}}
    cell = {"cell_type": "code", "outputs": [
        output("r1_verdict", "'holds'"), output("r1_n", "16"), output("r1_unit", "'prompt'"),
        output("r1_result", "'q: 0.52 [0.41, 0.63] (n = 16 prompts, t interval)'")]}
    (tmp_path / "05_depth.ipynb").write_text(json.dumps({"cells": [cell]}))
    assert list(ua.rows(tmp_path)) == [("05", "r1", "holds", _fields(
        "q: 0.52 [0.41, 0.63] (n = 16 prompts, t interval)", n="16", verdict="holds"))]
    assert ua.main([str(tmp_path)]) == 0
