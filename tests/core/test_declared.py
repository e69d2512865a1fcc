"""Parameters declared on their fields: metadata, generated checks, carried attributes."""

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pytest

from llmdyn.core.declared import (
    Violation,
    carried,
    matches,
    param,
    parameter_fields,
    rule,
    violation,
)


@dataclass(frozen=True)
class Example:
    n: int = param(3, doc="how many", at_least=1)
    mode: str = param("all", doc="which", choices=("all", "last"))
    cut: int | None = param(None, doc="None: whole", at_least=10)
    levels: list[float] = param([0.1, 1.0], doc="levels", at_least=0.0,
                                check=rule(bool, "a non-empty list"))
    odd: int = param(3, check=lambda w: None if w % 2 else "odd")
    name: str = param("x", doc="a name")
    fixed: int = field(default=-1, init=False)
    done: tuple | None = carried(doc="set later")


def test_metadata_holds_the_shared_keys():
    f = {f.name: f for f in dataclasses.fields(Example)}
    assert f["n"].metadata["doc"] == "how many" and f["n"].metadata["at_least"] == 1
    assert f["mode"].metadata["choices"] == ("all", "last")
    assert "at_least" not in f["mode"].metadata and f["odd"].metadata["doc"] == ""
    assert Example().levels is not Example().levels  # a list default is copied per instance


def test_parameters_leave_out_init_false_and_carried_fields():
    assert [f.name for f in parameter_fields(Example)] == ["n", "mode", "cut", "levels", "odd",
                                                           "name"]
    e = dataclasses.replace(Example(), done=(1, 2))  # carried: set through replace, not setattr
    assert e.done == (1, 2) and e.n == 3


@pytest.mark.parametrize("change, expected", [
    ({"n": 0}, ">= 1"),
    ({"n": True}, "int (got type bool)"),
    ({"n": 2.0}, "int (got type float)"),
    ({"mode": "first"}, "one of 'all', 'last'"),
    ({"cut": 5}, ">= 10 (or None)"),
    ({"levels": [0.1, -1.0]}, "a list of values, each >= 0.0"),
    ({"levels": []}, "a non-empty list"),
    ({"levels": ["0.1"]}, "list[float] (got type list)"),
    ({"odd": 4}, "odd"),
    ({"name": " "}, "non-empty text"),
])
def test_the_first_broken_declaration_is_named(change, expected):
    broken = violation(dataclasses.replace(Example(), **change))
    (name, value), = change.items()
    assert broken == Violation(name, value, expected, Example.__dataclass_fields__[name]
                               .metadata["doc"])


def test_valid_values_and_none_pass():
    assert violation(Example()) is None
    assert violation(Example(cut=None, n=np.int64(2), levels=[1])) is None  # an int is a float


def test_matches_reads_unions_and_item_types():
    assert matches([[1, 2]], list[list[int]]) and not matches([[1, "2"]], list[list[int]])
    assert matches(None, int | None) and not matches(None, int)
    assert matches(("a", "b"), tuple[str, ...]) and not matches("ab", tuple[str, ...])
