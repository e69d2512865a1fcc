"""tools/glued_values.py --compare, exact and to the printed digits (known answers)."""

import importlib.util
import json
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "glued_values", Path(__file__).resolve().parents[2] / "tools" / "glued_values.py")
gv = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gv)

BEFORE = {"04": {"a_value": "0.6234567", "a_result": "0.62 [0.55, 0.70]", "b_lo": "nan",
                 "t": "<table><td>0.62</td></table>"}}


def test_exact_mode_reports_every_changed_text():
    after = {"04": {**BEFORE["04"], "a_value": "0.6234571"}}
    assert gv.compare(BEFORE, after) == ["04/a_value: '0.6234567' -> '0.6234571'"]


def test_printed_mode_allows_digits_the_book_does_not_print():
    after = {"04": {**BEFORE["04"], "a_value": "0.6234571", "b_lo": "nan"}}
    beyond = []
    assert gv.compare(BEFORE, after, printed=True, beyond=beyond) == []
    assert beyond == ["04/a_value: 0.6234567 -> 0.6234571"]


def test_printed_mode_still_catches_a_printed_change():
    after = {"04": {**BEFORE["04"], "a_value": "0.6254", "t": "<table><td>0.63</td></table>"}}
    assert gv.compare(BEFORE, after, printed=True) == [
        "04/a_value: '0.6234567' -> '0.6254'", "04/t: '<table><td>0.62</td></table>' -> "
        "'<table><td>0.63</td></table>'"]
    assert gv.same_printed("nan", "0.1") is False and gv.same_printed("x", "x")
    assert gv.compare(BEFORE, after, printed=True, digits=1)[0].startswith("04/t")  # 0.6, 0.6


def test_cli_exit_status(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(BEFORE))
    b.write_text(json.dumps({"04": {**BEFORE["04"], "a_value": "0.6234571"}}))
    assert gv.main(["--compare", str(a), str(b)]) == 1
    assert gv.main(["--compare", "--printed", str(a), str(b)]) == 0
    assert "the same to the printed digits: 4 values" in capsys.readouterr().out
