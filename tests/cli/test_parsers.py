"""Options built from a parameter dataclass: names, types, defaults, help, choices, bounds."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Literal

import pytest

from llmdyn.cli.parsers import add_command, add_options, from_options
from llmdyn.sweep.job import MeasureParams


@dataclass(frozen=True)
class Declared:
    """Parameters declared with the shared metadata keys (``rate``: none, so no doc)."""

    n_items: int = field(default=3, metadata={"doc": "items per task", "at_least": 1})
    rate: float = 0.5
    names: tuple[str, ...] = field(default=("a", "b"), metadata={"choices": ("a", "b", "c")})
    cut: int | None = None
    mode: Literal["fast", "exact"] = "fast"
    verbose: bool = False
    required_text: str = field(default="x", metadata={"doc": "100% literal"})
    derived: int = field(default=0, init=False)


def _parser(cls=Declared) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t")
    add_options(parser, cls)
    return parser


def test_each_init_field_is_one_option_with_its_type_and_default():
    args = _parser().parse_args([])
    assert from_options(Declared, args) == Declared()
    args = _parser().parse_args(["--n-items", "7", "--rate", "0.25", "--names", "c", "a",
                                 "--cut", "40", "--mode", "exact", "--verbose"])
    assert from_options(Declared, args) == Declared(n_items=7, rate=0.25, names=("c", "a"),
                                                    cut=40, mode="exact", verbose=True)
    assert not hasattr(args, "derived")  # init=False: no option


@pytest.mark.parametrize("argv", [["--names", "z"], ["--mode", "slow"], ["--n-items", "x"],
                                  ["--derived", "1"]])
def test_choices_and_types_are_argparse_refusals(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        _parser().parse_args(argv)
    assert stop.value.code == 2 and "error:" in capsys.readouterr().err


def test_help_is_the_declared_doc_with_bound_and_default():
    text = " ".join(_parser().format_help().split())
    assert "--n-items N_ITEMS items per task. At least 1. Default: 3." in text
    assert "--rate RATE default: 0.5." in text  # no "doc": the default alone, no other source
    assert "default: a b." in text and "100% literal. Default: x." in text  # % is kept
    assert "--cut CUT default: None." in text  # no doc: the default alone


def test_measure_options_keep_the_names_and_defaults_users_rely_on():
    args = _parser(MeasureParams).parse_args([])
    assert from_options(MeasureParams, args) == MeasureParams()
    args = _parser(MeasureParams).parse_args(["--k", "4", "--n-per-task", "1", "--tasks", "mmlu",
                                              "--seed", "2", "--max-chars", "40"])
    assert from_options(MeasureParams, args) == MeasureParams(k=4, n_per_task=1, tasks=("mmlu",),
                                                              seed=2, max_chars=40)


def test_a_field_type_with_no_option_form_is_a_declaration_bug():
    @dataclass
    class Bad:
        pairs: dict[str, int] = field(default_factory=dict)

    with pytest.raises(TypeError, match="pairs: no command-line option"):
        _parser(Bad)


def test_a_field_without_a_default_is_a_required_option():
    @dataclass
    class Needs:
        model: str

    with pytest.raises(SystemExit):
        _parser(Needs).parse_args([])
    assert from_options(Needs, _parser(Needs).parse_args(["--model", "m"])) == Needs("m")


def test_a_command_shows_its_examples_after_its_options():
    sub = argparse.ArgumentParser(prog="llmdyn").add_subparsers()
    p = add_command(sub, "go", help="go somewhere", examples=["llmdyn go  # there"],
                    note="then come back\n")
    assert p.format_help().endswith("example:\n  llmdyn go  # there\nthen come back\n")
    two = add_command(sub, "run", help="run", examples=["llmdyn run", "llmdyn run --fast"])
    assert "examples:\n  llmdyn run\n  llmdyn run --fast" in two.format_help()
