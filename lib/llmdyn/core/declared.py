"""Parameters declared once, on their dataclass fields: default, one-line doc and bounds.

``n: int = param(20, doc="prompts per task", at_least=1)`` is a ``dataclasses.field`` whose
``metadata`` holds what every reader of the parameter needs:

- ``"doc"``: its one-line documentation (a notebook's parameters cell, a command's ``--help``);
- ``"at_least"``: the smallest allowed value (of each item, for a list);
- ``"choices"``: the allowed values (of each item, for a list);
- ``"check"``: a function of the value returning what it must be, or None where it is fine,
  for a rule the keys above cannot state (``odd and >= 3``).

A value of None passes the bounds wherever the type hint allows None (None means "the default,
set later"). :func:`violation` checks an instance against its type hints and these keys, so a
parameter class writes no check of its own. A field with ``init=False``, or declared with
:func:`carried`, is not a parameter: :func:`parameter_fields` leaves it out.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from llmdyn.core.checks import is_int

__all__ = ["AT_LEAST", "CHECK", "CHOICES", "DOC", "Violation", "carried", "hint_text", "matches",
           "param", "parameter_fields", "rule", "violation"]

DOC, AT_LEAST, CHOICES, CHECK = "doc", "at_least", "choices", "check"
CARRIED = "carried"  # metadata key of a declared attribute that is not a parameter

Check = Callable[[Any], "str | None"]


def param(default: Any = dataclasses.MISSING, *, doc: str = "", at_least: float | None = None,
          choices: Sequence[Any] | None = None, check: Check | None = None) -> Any:
    """A dataclass field declaring one parameter: its default, doc and bounds in ``metadata``.

    A list or dict default is copied for each instance (a ``default_factory``).
    """
    metadata: dict[str, Any] = {DOC: doc}
    if at_least is not None:
        metadata[AT_LEAST] = at_least
    if choices is not None:
        metadata[CHOICES] = tuple(choices)
    if check is not None:
        metadata[CHECK] = check
    if isinstance(default, list | dict | set):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default),
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def rule(holds: Callable[[Any], bool], expected: str) -> Check:
    """A ``check``: ``expected`` (what the value must be) where ``holds(value)`` is false."""
    return lambda value: None if holds(value) else expected


def carried(default: Any = None, *, doc: str) -> Any:
    """A declared attribute that is not a parameter: keyword-only, left out of the parameters.

    For what a computation set on a frozen instance (what resolution resolved), given to
    ``dataclasses.replace`` instead of being attached afterwards.
    """
    return dataclasses.field(default=default, kw_only=True, repr=False,
                             metadata={DOC: doc, CARRIED: True})


def parameter_fields(cls: Any) -> tuple[dataclasses.Field, ...]:
    """The fields of a dataclass (or instance) that are parameters, in declaration order."""
    return tuple(f for f in dataclasses.fields(cls) if f.init and not f.metadata.get(CARRIED))


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` has the type ``hint`` (unions, lists and tuples of items, None).

    An int is not a bool; a float may be given as an int; numpy ints count as ints.
    """
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin in (list, tuple):
        (inner, *_) = typing.get_args(hint) or (Any,)
        return isinstance(value, list | tuple) and all(matches(v, inner) for v in value)
    if hint is float:
        return (is_int(value) or isinstance(value, float)) and not isinstance(value, bool)
    if hint is int:
        return is_int(value)
    return isinstance(value, hint)


def hint_text(hint: Any) -> str:
    """A type hint as a reader writes it: ``int``, ``list[str] | None``."""
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


class Violation(NamedTuple):
    """The first declared rule a parameter breaks."""

    name: str
    value: Any
    expected: str  # what it must be, e.g. ">= 2", "one of 'all', 'last'"
    doc: str


def violation(instance: Any) -> Violation | None:
    """The first parameter of ``instance`` that breaks its type hint or declared bounds."""
    hints = typing.get_type_hints(type(instance))
    for f in parameter_fields(instance):
        value = getattr(instance, f.name)
        expected = _expected(value, hints[f.name], f.metadata)
        if expected is not None:
            return Violation(f.name, value, expected, f.metadata.get(DOC, ""))
    return None


def _expected(value: Any, hint: Any, metadata: typing.Mapping[str, Any]) -> str | None:
    """What ``value`` must be, where it breaks ``hint`` or a rule of ``metadata``; else None."""
    if not matches(value, hint):
        return f"{hint_text(hint)} (got type {type(value).__name__})"
    many = isinstance(value, list | tuple)
    texts = [v for v in (value if many else [value]) if isinstance(v, str)]
    if any(not t.strip() for t in texts):
        return "non-empty text"
    if value is None:  # the type allows it: the default, set later
        return None
    items = value if many else [value]
    rules = []
    if AT_LEAST in metadata and any(v < metadata[AT_LEAST] for v in items):
        rules.append(f">= {metadata[AT_LEAST]}")
    if CHOICES in metadata and any(v not in metadata[CHOICES] for v in items):
        rules.append(f"one of {', '.join(map(repr, metadata[CHOICES]))}")
    if rules:
        rule = " and ".join(rules)
        none = " (or None)" if matches(None, hint) else ""
        return f"a list of values, each {rule}" if many else rule + none
    return metadata[CHECK](value) if CHECK in metadata else None
