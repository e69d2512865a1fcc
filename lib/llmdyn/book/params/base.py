"""The parameters every chapter shares, checked from their declarations; resolution per model."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from llmdyn import LlmdynError
from llmdyn.book.params.relative import relative_blocks, relative_window
from llmdyn.core.declared import carried, param, parameter_fields, violation
from llmdyn.core.escape import markdown_code, markdown_text
from llmdyn.core.tables import markdown_table
from llmdyn.coupling.default_k import coupling_k
from llmdyn.models.packaged import other_packaged
from llmdyn.phases.split import SPLITS

_PLAIN = (bool, int, float, str, list, tuple, dict, type(None))  # what a parameter cell holds

# Chapter 04's SQuAD questions: chapters 02, 03, 05 and 11 draw the same ones (the same seed and
# articles), so their Jacobians and traces are computed once; their defaults are these.
QUESTIONS = 20  # questions in the draw (paper B: 100)
COMPARE_QUESTIONS = 16  # the first of them that each compare model runs (fewer leave a guess)


def _fail(name: str, value: Any, expected: str, doc: str = "") -> None:
    about = f" ({name}: {doc})" if doc else ""
    raise LlmdynError(f"notebook parameter {name!r} must be {expected}, got {value!r}{about}; "
                      "fix it in the parameters cell or the papermill -p/-y arguments")


def distinct_seeds(*, empty_ok: bool, most: int | None = None):
    """The check of a ``twin_seeds`` field: distinct seeds, [] only where twins are optional."""
    def check(seeds: list[int]) -> str | None:
        if (not seeds and not empty_ok) or len(set(seeds)) != len(seeds):
            return "distinct seeds ([] for no twins)" if empty_ok else \
                "a non-empty list of distinct seeds"
        if most is not None and len(seeds) > most:
            return "[] or one seed (this chapter draws one twin)" if most == 1 else \
                f"[] or at most {most} seeds"
        return None
    return check


def odd_window(window: int) -> str | None:
    """The check of an LSS ``window``: odd (centred on a layer) and at least 3 points."""
    return None if window >= 3 and window % 2 else "odd and >= 3 (a window centred on a layer)"


def some_blocks(blocks: list[int]) -> str | None:
    """The check of a block list: not empty (None is the model-relative default)."""
    return None if blocks else ("a non-empty list of blocks, e.g. [8, 9, 10], or None (blocks "
                                "8–15 relative to the model)")


@dataclass(frozen=True)
class Resolution:
    """What :meth:`ChapterParams.for_model` set: the parameters relative to the model, its shape."""

    names: tuple[str, ...]  # parameters whose value was set for the model, sorted
    n_layers: int
    d_model: int


@dataclass(frozen=True)
class ChapterParams:
    """Parameters every chapter shares; subclasses add their own declared fields."""

    model: str = param("smollm2-135m", doc="a name from `llmdyn models`, a local path or a hub id")
    seed: int = param(0, at_least=0,  # a negative seed would draw another seed's prompts
                      doc="seed of the chapter's prompt draw, if any (twins have their own: "
                          "twin_seeds)")
    device: str = param("cpu", doc="\"cuda\" where a GPU exists")
    resolution: Resolution | None = carried(doc="what for_model set (None: not resolved)")

    # list-of-blocks fields whose None means "these blocks, relative to the model"
    paper_blocks: ClassVar[dict[str, list[int]]] = {}
    # count -> (the count whose prompts it takes the first of, prompts in front of those: the
    # example): it may not exceed their sum
    drawn_from: ClassVar[dict[str, tuple[str, int]]] = {}

    def __post_init__(self) -> None:
        """Check every parameter against its type hint, its declared bounds and ``drawn_from``."""
        broken = violation(self)
        if broken is not None:
            _fail(*broken)
        for name, (pool, ahead) in self.drawn_from.items():
            few, many = getattr(self, name), getattr(self, pool) + ahead
            if few > many:
                also = f" + {ahead} (the example first)" if ahead else ""
                raise LlmdynError(f"notebook parameter {name!r} = {few} must be at most {pool!r}"
                                  f"{also} = {many}, whose prompts it takes the first of; lower "
                                  f"{name} or raise {pool}")

    @classmethod
    def from_cell(cls, namespace: Mapping[str, Any]):
        """Build from a notebook's globals (the parameters cell plus papermill's injection).

        Every field is read from ``namespace`` (missing ones keep their defaults). A lowercase
        name holding plain data (a number, text, list, dict or None) that is not a field is an
        unknown parameter and raises, naming the closest field: papermill only warns.
        """
        names = [f.name for f in parameter_fields(cls)]
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

    def for_model(self, n_layers: int, d_model: int, *, shallowest: int | None = None,
                  compare_models: list[str] | None = None) -> ChapterParams:
        """A new instance with every model-relative default (None) set for one model.

        The one place parameters are resolved (:func:`llmdyn.book.params.resolution.resolve`
        reads the shapes and calls it). Block lists in ``paper_blocks`` get the paper's blocks
        where the model has them all, else the same fractions of depth; ``k`` None gets
        :func:`~llmdyn.coupling.default_k.relative_k` and a given ``k`` is checked against
        d_model (:func:`~llmdyn.coupling.default_k.coupling_k`). Explicit values are kept,
        except an LSS ``window`` longer than the shallowest model's L + 1 points, which covers
        the same fraction of them (:func:`~llmdyn.book.params.relative.relative_window`).
        The result's ``resolution`` names what was set.

        Args:
            n_layers: the model's depth L (blocks).
            d_model: the width of its residual stream.
            shallowest: the depth of the shallowest model the chapter runs (None: n_layers).
            compare_models: the checked compare models (they are relative to the model when
                the field was None).
        """
        changes = self.relative_values(n_layers, d_model, shallowest or n_layers)
        names = set(changes)
        if compare_models is not None:
            if self.compare_models is None:
                names.add("compare_models")
            changes["compare_models"] = compare_models
        return dataclasses.replace(self, **changes,
                                   resolution=Resolution(tuple(sorted(names)), n_layers, d_model))

    def relative_values(self, n_layers: int, d_model: int, shallowest: int) -> dict[str, Any]:
        """``{parameter: value}`` of the parameters :meth:`for_model` sets for this model."""
        names = {f.name for f in parameter_fields(self)}
        changes: dict[str, Any] = {name: relative_blocks(blocks, n_layers)
                                   for name, blocks in self.paper_blocks.items()
                                   if getattr(self, name) is None}
        if "k" in names:
            try:
                k = coupling_k(self.k, d_model)
            except LlmdynError as err:  # the one check of k against the model, said as a parameter
                _fail("k", self.k, f"at most d_model = {d_model} of {self.model} ({err})")
            if k != self.k:
                changes["k"] = k
        if "window" in names and self.window > shallowest + 1:
            changes["window"] = relative_window(self.window, shallowest)
        return changes

    def _repr_markdown_(self) -> str:
        """The parameters in effect, as a table (shown collapsed on each chapter page)."""
        rows = markdown_table([{"parameter": markdown_code(f.name),
                                "value": markdown_code(repr(getattr(self, f.name)))}
                               for f in parameter_fields(self)])
        done = self.resolution
        note = (f"\n\n{', '.join(f'`{n}`' for n in done.names)}: relative to the model, set for "
                f"{markdown_text(self.model)} ({done.n_layers} blocks, d_model {done.d_model}); "
                "see methods, "
                "\"Defaults relative to the model\"" if done and done.names else "")
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

    compare_models: list[str] | None = param(
        None, doc="also run these beside `model` (None: the packaged models other than `model`, as"
                  " `llmdyn models` lists them; [] for none; `model` is skipped if listed here)")
    cut_long_prompts: bool = param(
        True, doc="a prompt beyond a model's context keeps its end (False: error)")

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

    n_prompts: int = param(
        QUESTIONS, at_least=1, doc="SQuAD question prompts (paper: 100 on SQuAD v2 \"Dog\")")
    squad_articles: list[str] | None = param(
        None, doc="None: llmdyn.data.squad_prompts' default articles")
    max_prompt_chars: int | None = param(
        None, at_least=10, doc="None: full prompts; else keep each prompt's last chars")
    window: int = param(
        11, check=odd_window, doc="LSS window of the phase-boundary estimate (paper: 11), if it "
                                  "fits")
    phase_criterion: str = param(
        "consensus", choices=SPLITS, doc="llmdyn.phases criterion splitting Thought/Fixation")
    lens: str = param(
        "paper", choices=("paper", "normed"), doc="logit lens: \"paper\" (softmax(M x^l), B §3.7) "
                                                  "or \"normed\" (M norm(x^l))")

    def other_lens(self) -> str:
        """The logit lens shown beside ``lens`` as the named variant."""
        return "normed" if self.lens == "paper" else "paper"
