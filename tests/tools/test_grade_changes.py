"""tools/grade_changes.py: grade counts and changed rows between two builds (known answers)."""

import importlib.util
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))
_SPEC = importlib.util.spec_from_file_location("grade_changes", TOOLS / "grade_changes.py")
gc = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gc)


def _row(grade, value=0.5, lo=0.4, hi=0.6):
    return {"grade": grade, "value": value, "lo": lo, "hi": hi}


def test_grade_is_read_from_the_verdicts_start_longest_name_first():
    assert gc.grade_of("does not hold (the interval lies below 0.5)") == "does not hold"
    assert gc.grade_of("'holds'") == "holds"
    assert gc.grade_of("partly (2 of 3 models)") == "partly"
    assert gc.grade_of("not testable offline (needs the hub)") == "not testable offline"
    assert gc.grade_of("maybe").startswith("unknown")


def test_report_counts_grades_and_lists_only_changed_rows():
    before = {"01_x": {"a": _row("partly"), "b": _row("holds"), "c": _row("no verdict")}}
    after = {"01_x": {"a": _row("inconclusive", 0.5, 0.3, 0.7), "b": _row("holds"),
                      "d": _row("does not hold", 0.1, 0.0, 0.2)}}
    text = gc.report(before, after)
    assert "| 01_x | 1 holds · 1 partly · 1 no verdict | 1 holds · 1 inconclusive · " \
           "1 does not hold |" in text
    changed = [line for line in text.splitlines() if line.startswith("| 01 |")]
    assert changed == [
        "| 01 | `a` | partly | inconclusive | 0.5 [0.4, 0.6] | 0.5 [0.3, 0.7] |",
        "| 01 | `c` | no verdict | (absent) | 0.5 [0.4, 0.6] | — |",
        "| 01 | `d` | (absent) | does not hold | — | 0.1 [0, 0.2] |"]
    assert "| --- | --- | --- | --- | --- | --- |" in text


def test_a_report_without_a_changed_grade_says_so():
    same = {"01_x": {"a": _row("holds")}}
    assert gc.report(same, same) == ("| chapter | before | after |\n| --- | --- | --- |\n"
                                     "| 01_x | 1 holds | 1 holds |\n\nNo claim's grade changed.")


def test_claims_are_read_from_glued_outputs(tmp_path):
    import json

    def output(name, text):
        return {"output_type": "display_data", "data": {"text/plain": text},
                "metadata": {"scrapbook": {"name": name, "mime_prefix": ""}}}
    cell = {"cell_type": "code", "outputs": [
        output("r1_verdict", "'inconclusive (the interval straddles 0.5)'"),
        output("r1_value", "0.52"), output("r1_lo", "0.41"), output("r1_hi", "0.63")]}
    (tmp_path / "05_depth.ipynb").write_text(json.dumps({"cells": [cell]}))
    assert gc.claims_of(tmp_path) == {"05_depth": {"r1": _row("inconclusive", 0.52, 0.41,
                                                                0.63)}}
