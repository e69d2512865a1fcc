"""Every claim as CSV: the glued numbers and per-unit values beside the record's words."""

import csv
import io
import json

import numpy as np

from llmdyn.claims.claim import Claim, Measure, at_least
from llmdyn.claims.collected import Published, _record
from llmdyn.claims.export import COLUMNS, claims_csv, links
from llmdyn.claims.findings import record
from llmdyn.claims.render import glue_values


def test_a_claims_row_carries_its_interval_units_and_per_unit_values():
    values = {f"prompt {i}": v for i, v in enumerate([4.0, 5.0, 6.0, 5.0])}
    claim = Claim("coupled", "A", "§5.1", "Blocks couple", "diagonal tiles",
                  Measure.mean(values, "diagonal share", fmt=".2f", sampling_unit="prompt"),
                  at_least(2), stand_in="a suite trained here")
    table = Published("05_depth", "T", "scorecard", "x", ("m",),
                      (_record(record(claim), "m"),))
    glued = {"05_depth": glue_values(claim)}
    rows = list(csv.DictReader(io.StringIO(claims_csv([table], glued))))
    assert list(rows[0]) == list(COLUMNS) and len(rows) == 1
    row, est = rows[0], claim.measure.estimate
    assert (float(row["estimate"]), float(row["lo"]), float(row["hi"])) == (est.value, est.lo,
                                                                             est.hi)
    assert (row["grade"], row["n"], row["unit"], row["bound"]) == ("holds", "4", "prompt",
                                                                   "≥ 2.00")
    assert row["stand_in"] == "a suite trained here" and row["quantity"] == "diagonal share"
    assert row["rule"].startswith("holds when the 95 % interval of the diagonal share")
    assert np.mean(json.loads(row["unit_values"])) == est.value  # the interval's own units
    assert json.loads(row["unit_ids"]) == list(values)


def test_a_claim_without_numbers_leaves_them_empty_and_links_name_each_file():
    claim = Claim("r2", "A", "§5.4", "s", "p", Measure.not_testable("R²", "needs a GPU"),
                  at_least(0.5))
    table = Published("09_gen", "T", "scorecard", "x", ("m",), (_record(record(claim), "m"),))
    row = next(csv.DictReader(io.StringIO(claims_csv([table], {"09_gen": glue_values(claim)}))))
    assert (row["estimate"], row["lo"], row["unit_values"]) == ("", "", "")
    assert row["grade"] == "not testable offline" and row["reason"] == "needs a GPU"
    assert "{download}`09_gen.csv <generated/csv/09_gen.csv>`" in links(["09_gen"])
