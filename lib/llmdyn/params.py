"""Typed notebook parameters: papermill injects values, these dataclasses check them."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from llmdyn import LlmdynError


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin in (list, tuple):
        (inner, *_) = typing.get_args(hint) or (Any,)
        return isinstance(value, (list, tuple)) and all(_matches(v, inner) for v in value)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


@dataclass(frozen=True)
class ChapterParams:
    """Parameters every chapter shares; subclasses add their own fields."""

    model: str = "smollm2-135m"  # a name from `llmdyn models`, a local path or a hub id
    seed: int = 0  # seed of the untrained twin and of any prompt sampling
    device: str = "cpu"  # "cuda" where a GPU exists

    def __post_init__(self) -> None:
        """Check every field against its type hint; say which parameter and what to pass."""
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not _matches(value, hints[f.name]):
                raise LlmdynError(
                    f"notebook parameter {f.name!r} must be {hints[f.name]}, got "
                    f"{type(value).__name__} {value!r}; fix it in the parameters cell or the "
                    f"papermill -p/-y arguments")


@dataclass(frozen=True)
class DepthCouplingParams(ChapterParams):
    """Chapter 05: coupling across depth (paper A §3.1, §5.1, Fig 3)."""

    example_prompt: str = "What is the capital of France? The capital is"
    prompts: list[str] | None = None  # None: the named example prompts of both papers
    k: int = 30  # top singular vectors kept in A
    layers: list[int] = field(default_factory=lambda: list(range(8, 16)))  # blocks in the grid
    n_prompts: int = 3  # prompts averaged in the heatmap

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if self.k < 1:
            raise LlmdynError(f"k must be >= 1, got {self.k}")
        if self.n_prompts < 1:
            raise LlmdynError(f"n_prompts must be >= 1, got {self.n_prompts}")
