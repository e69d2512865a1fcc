"""The checks every chapter's parameters share: types, bounds, blocks, seeds, unknown names."""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from llmdyn import LlmdynError
from llmdyn.book.params.relative import relative_blocks, relative_k, relative_window
from llmdyn.core.tables import markdown_table
from llmdyn.models.packaged import other_packaged
from llmdyn.phases.split import SPLITS

_PLAIN = (bool, int, float, str, list, tuple, dict, type(None))  # what a parameter cell holds


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


def _fail(name: str, value: Any, expected: str) -> None:
    raise LlmdynError(f"notebook parameter {name!r} must be {expected}, got {value!r}; fix it in "
                      f"the parameters cell or the papermill -p/-y arguments")


def _check_seeds(name: str, seeds: list[int], *, empty_ok: bool) -> None:
    """Twins' seeds: distinct, and non-empty unless ``empty_ok`` ([] then means no twins)."""
    if (not seeds and not empty_ok) or len(set(seeds)) != len(seeds):
        _fail(name, seeds, "distinct seeds ([] for no twins)" if empty_ok else
              "a non-empty list of distinct seeds")


@dataclass(frozen=True)
class ChapterParams:
    """Parameters every chapter shares; subclasses add their own fields and bounds."""

    model: str = "smollm2-135m"  # a name from `llmdyn models`, a local path or a hub id
    seed: int = 0  # seed of the chapter's prompt draw, if any (twins have their own: twin_seeds)
    device: str = "cpu"  # "cuda" where a GPU exists

    at_least: ClassVar[dict[str, int]] = {}  # field -> smallest allowed value
    # twin_seeds: [] allowed (no twin) or not; chapters with twins set it with the field
    twins_optional: ClassVar[bool] = False
    # list-of-blocks fields whose None means "these blocks, relative to the model"
    paper_blocks: ClassVar[dict[str, list[int]]] = {}

    def __post_init__(self) -> None:
        """Check every field against its type hint and bounds; name the parameter on failure."""
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not _matches(value, hints[f.name]):
                _fail(f.name, value, f"{hints[f.name]} (got type {type(value).__name__})")
            texts = [value] if isinstance(value, str) else \
                [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
            if any(not t.strip() for t in texts):
                _fail(f.name, value, "non-empty text")
        if self.seed < 0:  # a negative seed would draw another seed's prompts
            _fail("seed", self.seed, ">= 0")
        for name, low in self.at_least.items():
            if getattr(self, name) is not None and getattr(self, name) < low:
                _fail(name, getattr(self, name), f">= {low}")
        chars = getattr(self, "max_prompt_chars", None)
        if chars is not None and chars < 10:
            _fail("max_prompt_chars", chars, "None (full prompts) or >= 10")
        window = getattr(self, "window", 3)
        if window < 3 or window % 2 == 0:
            _fail("window", window, "odd and >= 3")
        if getattr(self, "phase_criterion", "consensus") not in SPLITS:
            _fail("phase_criterion", self.phase_criterion, f"one of {SPLITS} (llmdyn.phases)")
        if getattr(self, "grid_layers", None) == []:
            _fail("grid_layers", self.grid_layers, "a non-empty list of blocks, e.g. [8, 9, 10], "
                                                   "or None (blocks 8–15 relative to the model)")
        if hasattr(self, "twin_seeds"):  # the first twin runs on every prompt
            _check_seeds("twin_seeds", self.twin_seeds, empty_ok=self.twins_optional)

    @classmethod
    def from_cell(cls, namespace: Mapping[str, Any]):
        """Build from a notebook's globals (the parameters cell plus papermill's injection).

        Every field is read from ``namespace`` (missing ones keep their defaults). A lowercase
        name holding plain data (a number, text, list, dict or None) that is not a field is an
        unknown parameter and raises, naming the closest field: papermill only warns.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(k for k, v in namespace.items()
                         if k not in names and not k.startswith("_") and k == k.lower()
                         and type(v) in _PLAIN)
        if unknown:
            hints = {k: difflib.get_close_matches(k, names, n=1) for k in unknown}
            said = ", ".join(f"{k!r}" + (f" (did you mean {h[0]!r}?)" if h else "")
                             for k, h in hints.items())
            raise LlmdynError(f"unknown notebook parameter {said} for {cls.__name__}; this "
                              f"chapter takes: {', '.join(names)}")
        return cls(**{k: namespace[k] for k in names if k in namespace})

    def for_model(self, n_layers: int, d_model: int, *,
                  shallowest: int | None = None) -> ChapterParams:
        """These parameters with every model-relative default (None) resolved for one model.

        Block lists in ``paper_blocks`` get the paper's blocks where the model has them all,
        else the same fractions of depth; ``k`` gets 30 where d_model ≥ 240, else d_model // 8
        (:mod:`llmdyn.book.params.relative`). Explicit values are kept as given, except an LSS
        ``window`` longer than the shallowest model's L + 1 points, which covers the same
        fraction of them instead (:func:`~llmdyn.book.params.relative.relative_window`).

        Args:
            n_layers: the model's depth L (blocks).
            d_model: the width of its residual stream.
            shallowest: the depth of the shallowest model the chapter runs (None: n_layers).
        """
        changes: dict[str, Any] = {name: relative_blocks(blocks, n_layers)
                                   for name, blocks in self.paper_blocks.items()
                                   if getattr(self, name) is None}
        names = {f.name for f in dataclasses.fields(self)}
        if "k" in names and self.k is None:
            changes["k"] = relative_k(d_model)
        if "window" in names and self.window > (shallowest or n_layers) + 1:
            changes["window"] = relative_window(self.window, shallowest or n_layers)
        resolved = dataclasses.replace(self, **changes)
        object.__setattr__(resolved, "_resolved", (sorted(changes), n_layers, d_model))
        return resolved

    def _repr_markdown_(self) -> str:
        """The parameters in effect, as a table (shown collapsed on each chapter page)."""
        rows = markdown_table([{"parameter": f"`{f.name}`", "value": f"`{getattr(self, f.name)!r}`"}
                               for f in dataclasses.fields(self)])
        names, n_layers, d_model = getattr(self, "_resolved", ((), 0, 0))
        note = (f"\n\n{', '.join(f'`{n}`' for n in names)}: relative to the model, set for "
                f"{self.model} ({n_layers} blocks, d_model {d_model}); see methods, "
                "\"Defaults relative to the model\"" if names else "")
        return rows + note

    def block(self, name: str, n_layers: int) -> int:
        """The 0-based block that parameter ``name`` names, negatives counted from the end."""
        b = getattr(self, name)
        if not -n_layers <= b < n_layers:
            _fail(name, b, f"a block of {self.model} ({n_layers} blocks: 0 … {n_layers - 1}, "
                           f"or −{n_layers} … −1 from the end)")
        return b % n_layers

    def blocks(self, name: str, n_layers: int, *, drop_missing: bool = False) -> list[int]:
        """The 0-based blocks that list parameter ``name`` names, negatives resolved once.

        Args:
            name: the parameter, e.g. "layers".
            n_layers: the model's depth L.
            drop_missing: leave out blocks the model does not have (a shallower compare
                model) instead of raising.
        """
        values = getattr(self, name)
        kept = [b for b in values if -n_layers <= b < n_layers]
        if not drop_missing and len(kept) < len(values):
            _fail(name, values, f"blocks of {self.model} ({n_layers} blocks: 0 … "
                                f"{n_layers - 1}, or −{n_layers} … −1 from the end)")
        resolved = [b % n_layers for b in kept]
        if len(set(resolved)) < len(resolved):
            _fail(name, values, "distinct blocks (after counting negatives from the end)")
        return resolved


@dataclass(frozen=True)
class CompareParams(ChapterParams):
    """A chapter that also runs other models beside the primary one."""

    #: also run these beside `model` (None: the packaged models other than `model`, as
    #: `llmdyn models` lists them; [] for none; `model` is skipped if listed here)
    compare_models: list[str] | None = None
    cut_long_prompts: bool = True  # a prompt beyond a model's context keeps its end (False: error)

    def models(self) -> list[str]:
        """The primary model, then the compare models, each once, in order.

        ``compare_models`` None means the packaged models other than ``model``
        (:func:`llmdyn.models.packaged.other_packaged`): Gemma-3-270M beside SmolLM2-135M and
        the other way round, both beside a local checkpoint.
        """
        compare = other_packaged(self.model) if self.compare_models is None else \
            self.compare_models
        return list(dict.fromkeys([self.model, *compare]))

    def compared(self) -> list[str]:
        """The compare models other than the primary one, each once, in order."""
        return self.models()[1:]


@dataclass(frozen=True)
class QuestionParams(CompareParams):
    """Paper B's chapters on SQuAD questions, split into Thought and Fixation (03, 04)."""

    n_prompts: int = 20  # SQuAD question prompts (paper: 100 on SQuAD v2 "Dog")
    squad_articles: list[str] | None = None  # None: llmdyn.data.squad_prompts' default articles
    max_prompt_chars: int | None = None  # None: full prompts; else keep each prompt's last chars
    window: int = 11  # LSS window of the phase-boundary estimate (paper: 11), if it fits
    phase_criterion: str = "consensus"  # llmdyn.phases criterion splitting Thought/Fixation
    lens: str = "paper"  # logit lens: "paper" (softmax(M x^l), B §3.7) or "normed" (M norm(x^l))

    def __post_init__(self) -> None:
        """Check types, then the lens."""
        super().__post_init__()
        if self.lens not in ("paper", "normed"):
            _fail("lens", self.lens, "'paper' (softmax(M x^l), paper B §3.7) or 'normed' "
                                     "(softmax(M norm(x^l)))")

    def other_lens(self) -> str:
        """The logit lens shown beside ``lens`` as the named variant."""
        return "normed" if self.lens == "paper" else "paper"
