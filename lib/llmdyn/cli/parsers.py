"""How the cli builds its parsers: a subcommand with examples, and options from a dataclass.

A parameter dataclass declares each option once (tuned-lens's habit): ``n_per_task: int = 200``
becomes ``--n-per-task N`` with default 200. A field's ``metadata`` may hold ``"doc"`` (the
help), ``"choices"`` (allowed values; of each item for a tuple) and ``"at_least"`` (named in the
help; the dataclass itself refuses a smaller value, with its own message). A field without a
``"doc"`` gets its default alone as help: the field's declaration is the one place an option is
documented. Fields with ``init=False`` are not options.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Collection, Sequence
from typing import Any, Literal

ITEM_TYPES = (int, float, str)  # what one value of an option may be


def add_command(sub: Any, name: str, *, help: str, examples: Sequence[str],
                description: str | None = None, note: str = "") -> argparse.ArgumentParser:
    """Add subcommand ``name`` whose --help ends with its examples (and ``note`` after them).

    Args:
        sub: the subparsers (``add_subparsers()``) it joins.
        name: the subcommand, e.g. ``"train"``.
        help: its line in the parent's listing.
        examples: command lines, each may end with ``# what it does``.
        description: the text under its usage line (default: ``help``).
        note: lines printed after the examples.
    """
    heading = "example:" if len(examples) == 1 else "examples:"
    epilog = "\n".join([heading, *(f"  {line}" for line in examples)])
    return sub.add_parser(name, help=help, description=description or help,
                          epilog=f"{epilog}\n{note}" if note else epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _unwrapped(hint: Any) -> tuple[Any, bool]:
    """``hint`` without ``| None`` and whether it had it."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(typing.get_args(hint)):
            return rest[0], True
    return hint, False


def _argument(field: dataclasses.Field, hint: Any, doc: str | None) -> dict[str, Any]:
    """``add_argument``'s keyword arguments for one field: type, nargs, choices, default, help."""
    item, _ = _unwrapped(hint)
    kwargs: dict[str, Any] = {}
    if typing.get_origin(item) is tuple:
        args = typing.get_args(item)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"field {field.name}: a tuple option is tuple[X, ...], got {hint}")
        item, kwargs["nargs"] = args[0], "+"
    if typing.get_origin(item) is Literal:
        kwargs["choices"] = typing.get_args(item)
        item = type(kwargs["choices"][0])
    if item is bool and "nargs" not in kwargs:
        kwargs["action"] = argparse.BooleanOptionalAction
    elif item in ITEM_TYPES:
        kwargs["type"] = item
    else:
        raise TypeError(f"field {field.name}: no command-line option for type {hint}")
    if "choices" in field.metadata:
        kwargs["choices"] = tuple(field.metadata["choices"])
    if field.default is not dataclasses.MISSING:
        default = field.default
    elif field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
    else:
        return {**kwargs, "required": True, "help": _help(doc, field, None, required=True)}
    if kwargs.get("nargs") and default is not None:
        default = list(default)
    return {**kwargs, "default": default, "help": _help(doc, field, default)}


def _help(doc: str | None, field: dataclasses.Field, default: Any, *,
          required: bool = False) -> str | None:
    """The option's help: its documentation, its lower bound and its default, as sentences."""
    parts = [doc.rstrip(".")] if doc else []
    if "at_least" in field.metadata:
        parts.append(f"at least {field.metadata['at_least']}")
    if not required:
        shown = " ".join(map(str, default)) if isinstance(default, list) else default
        parts.append(f"default: {shown}")
    if not parts:
        return None
    text = ". ".join(p[:1].upper() + p[1:] if i else p for i, p in enumerate(parts))
    return f"{text}.".replace("%", "%%")  # argparse formats help with %


def add_options(parser: argparse.ArgumentParser, cls: type, *,
                exclude: Collection[str] = ()) -> None:
    """Add one ``--name`` option for each init field of dataclass ``cls`` (underscores: ``-``).

    Raises:
        TypeError: a field whose type has no option form (a bug in the declaration).
    """
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.init and field.name not in exclude:
            parser.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name,
                                **_argument(field, hints[field.name], field.metadata.get("doc")))


def from_options(cls: type, args: argparse.Namespace, *, exclude: Collection[str] = ()) -> Any:
    """The ``cls`` instance that parsed ``args`` hold (an option given many times: a tuple)."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.init and field.name not in exclude:
            value = getattr(args, field.name)
            values[field.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)
