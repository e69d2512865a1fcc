"""One parameter class per chapter: its fields are the chapter's parameters cell, with bounds.

Each field's comment (or the ``#:`` lines above it) is the parameter's one description; the
notebook's cell is written from it (`llmdyn.book.params.cell`). Chapters 08–10 are in
`llmdyn.book.params.trained`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from llmdyn.book.params.base import (
    ChapterParams,
    CompareParams,
    QuestionParams,
    _fail,
)
from llmdyn.book.params.relative import relative_pair
from llmdyn.data.prompts import ALL_TASKS


@dataclass(frozen=True)
class DepthCouplingParams(CompareParams):
    """Chapter 05: coupling across depth (paper A §3.1, §5.1, Fig 3)."""

    #: the prompt of the single-prompt figures (the example; Figs 3, 20)
    example_prompt: str = "What is the capital of France? The capital is"
    #: None: SQuAD questions, the same draw as chapter 04 (cached once); or texts
    prompts: list[str] | None = None
    #: top singular vectors kept in each coupling matrix (None: relative_k, 30 where d_model ≥ 240,
    #: else d_model // 8)
    k: int | None = None
    #: 0-based blocks in the grid (None: 8-15, paper layers 9-16, or the same fractions of a
    #: shallower model)
    grid_layers: list[int] | None = None
    #: prompts after the example in the heatmaps and claims (~5 s each per model)
    n_prompts: int = 20
    #: SQuAD articles of the questions (None: as chapter 04's default)
    squad_articles: list[str] | None = None
    #: None: whole prompts (as chapter 04); an int keeps the last characters
    max_prompt_chars: int | None = None
    #: prompts for each compare model: the France prompt (Figs 3, 20), then chapter 04's questions
    n_compare_prompts: int = 16
    #: untrained twins' seeds: the first on every prompt, the others on n_seed_prompts
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    n_seed_prompts: int = 3  # prompts for the twins of the other seeds (the spread over seeds)

    at_least: ClassVar[dict[str, int]] = {"k": 2, "n_prompts": 1, "n_compare_prompts": 1,
                                          "n_seed_prompts": 1}
    paper_blocks: ClassVar[dict[str, list[int]]] = {"grid_layers": list(range(8, 16))}


@dataclass(frozen=True)
class UncertaintyParams(QuestionParams):
    """Chapter 03: logit-lens uncertainty per layer (paper B §4.4, App. A.1, B.2; Figs 5, 8–11)."""

    top_k: int = 5  # tokens per layer in the top-k tables (paper: 5)
    n_table_layers: int = 8  # evenly spaced layers shown in the top-k tables
    #: untrained twins' seeds (same config, fresh weights), each twin on every prompt ([]: none)
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])

    at_least: ClassVar[dict[str, int]] = {"n_prompts": 1, "top_k": 1, "n_table_layers": 2}
    twins_optional: ClassVar[bool] = True


@dataclass(frozen=True)
class JacobianAlignmentParams(QuestionParams):
    """Chapter 04: residual Jacobian alignment r(A) and Table 1 (paper B §3.6, §4.5; Figs 6, 7)."""

    #: prompt of the |A| grids (Fig 7)
    example_prompt: str = "What is the capital of France? The capital is"
    #: paper B's K in A_{i,j,K} (None: relative_k, 30 where d_model ≥ 240, else d_model // 8)
    k: int | None = None
    #: 0-based blocks of the |A| grids (None: 8-15, paper layers 9-16, or the same fractions of a
    #: shallower model)
    grid_layers: list[int] | None = None
    n_prompts: int = 20  # SQuAD questions in the r(A) heatmaps and claims (paper: 100); ~5 s each
    n_compare_prompts: int = 16  # of those, for each compare model (its claims' n; as chapter 05)
    n_lens_prompts: int = 20  # SQuAD questions for the boundary and the cheap Table 1 quantities
    #: untrained twins' seeds: the first on every question, the others on n_seed_prompts
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    n_seed_prompts: int = 2  # questions (spread over each model's) the extra twins see; ~7 s each

    at_least: ClassVar[dict[str, int]] = {"k": 2, "n_prompts": 1, "n_compare_prompts": 1,
                                          "n_lens_prompts": 2, "n_seed_prompts": 1}
    paper_blocks: ClassVar[dict[str, list[int]]] = {"grid_layers": list(range(8, 16))}


@dataclass(frozen=True)
class SpectraPromptsParams(CompareParams):
    """Chapter 11: spectra, linearisation, CoT, prompt length (paper A Figs 9, 15, 32–34)."""

    #: the first prompt of the spectra (the SQuAD questions follow it)
    example_prompt: str = "What is the capital of France? The capital is"
    n_prompts: int = 20  # SQuAD questions after the example for the spectra (chapter 04's texts)
    #: SQuAD articles of those questions (None: as chapter 04's default)
    squad_articles: list[str] | None = None
    #: of those, for each compare model (its claims' n; as chapters 04 and 05, whose Jacobians
    #: of the same prompts it reuses)
    n_compare_prompts: int = 16
    #: top singular vectors in A; also the singular values kept per layer (None: relative_k, 30
    #: where d_model ≥ 240, else d_model // 8)
    k: int | None = None
    n_top: int = 5  # singular values drawn per layer
    #: relative noise ||delta_t|| / ||x_t^0||
    noise_levels: list[float] = field(default_factory=lambda: [0.01, 0.03, 0.1, 0.3, 1.0])
    n_draws: int = 8  # noise draws per level
    #: prompts of the linearisation claims: the example, then SQuAD questions cut to
    #: lin_prompt_chars (a Jacobian pass over every block each)
    n_lin_prompts: int = 16
    #: the linearisation's SQuAD questions keep their last characters (64: the question and
    #: "The answer is:", 12–18 tokens; the pass grows with length)
    lin_prompt_chars: int = 64
    #: "all": every input embedding is perturbed; "last": the last one only
    noise_tokens: str = "all"
    n_gsm8k: int = 6  # GSM8K prompts, each also with the zero-shot CoT suffix (Fig 15)
    #: prompts of each other leaderboard task added to the length plot (paper: 200)
    n_per_task: int = 1
    #: None: full prompts; else keep each prompt's last characters
    max_prompt_chars: int | None = None
    #: untrained twins' seeds: the first on every prompt, the others on n_seed_prompts
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    n_seed_prompts: int = 2  # questions, spread evenly as in chapter 04, that the extra twins see

    at_least: ClassVar[dict[str, int]] = {"k": 2, "n_prompts": 1, "n_compare_prompts": 1,
                                          "n_top": 1, "n_draws": 1, "n_per_task": 1,
                                          "n_lin_prompts": 1, "lin_prompt_chars": 10,
                                          "n_gsm8k": 3,  # a regression needs 3 points
                                          "n_seed_prompts": 1}

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if not self.noise_levels or min(self.noise_levels) <= 0:
            _fail("noise_levels", self.noise_levels, "a non-empty list of positive levels")
        if self.noise_tokens not in ("all", "last"):
            _fail("noise_tokens", self.noise_tokens, "'all' or 'last'")


@dataclass(frozen=True)
class TrajectoriesParams(CompareParams):
    """Chapter 01: token trajectories in the PC plane of X^L (paper B Fig 1, paper A Fig 12)."""

    example_prompt: str = "What is the capital of France? The capital is"  # paper B's example
    #: prompts the claims are judged over: the example, then SQuAD questions (chapter 04's texts)
    n_prompts: int = 16
    #: SQuAD articles of those questions (None: as chapter 04's default)
    squad_articles: list[str] | None = None
    #: None: whole questions (as chapter 04); an int keeps each question's last characters
    max_prompt_chars: int | None = None
    #: seed of each model's untrained twin ([]: no twin)
    twin_seeds: list[int] = field(default_factory=lambda: [0])
    #: the shallow panel's layers, as fractions of the depth L
    shallow: list[float] = field(default_factory=lambda: [0.0, 0.5])
    #: the deep panel's layers, as fractions of the depth L
    deep: list[float] = field(default_factory=lambda: [0.5, 1.0])
    windows_skip_last: bool = True  # the shallow/deep panels stop at X^(L-1)
    drop_first: int = 1  # leading tokens left out of the fit and the plot (attention sinks)

    at_least: ClassVar[dict[str, int]] = {"drop_first": 0, "n_prompts": 1}
    twins_optional: ClassVar[bool] = True

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if len(self.twin_seeds) > 1:
            _fail("twin_seeds", self.twin_seeds, "[] or one seed (this chapter draws one twin)")
        for name in ("shallow", "deep"):
            value = getattr(self, name)
            if len(value) != 2 or not 0 <= value[0] < value[1] <= 1:
                _fail(name, value, "[start, end] fractions of depth with 0 <= start < end <= 1")


@dataclass(frozen=True)
class GeometryAlongDepthParams(CompareParams):
    """Chapter 02: norm, windowed LSS and equidistance along depth (paper B Figs 2-4, 12, 13)."""

    #: None: SQuAD questions with context in paper B's format; or a list of texts
    prompts: list[str] | None = None
    n_prompts: int = 20  # question prompts (paper: 100; about 3-8 s each per model on 2 CPU cores)
    #: SQuAD v1.1 article titles (None: the largest packaged articles)
    squad_articles: list[str] | None = None
    window: int = 11  # layers per LSS/equidistance window, centred (paper: 11)
    #: untrained twins' seeds, each twin on every prompt ([]: none)
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    min_size: int = 3  # fewest layers on either side of a change-point in llmdyn.phases.split
    #: the criteria "agree" if their estimates span at most this fraction of L
    agree_within: float = 0.1

    at_least: ClassVar[dict[str, int]] = {"n_prompts": 2, "min_size": 1}
    twins_optional: ClassVar[bool] = True

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if self.prompts is not None and len(self.prompts) < 2:
            _fail("prompts", self.prompts, "None or at least 2 texts")
        if not 0 <= self.agree_within <= 1:
            _fail("agree_within", self.agree_within, "a fraction of depth in [0, 1]")


@dataclass(frozen=True)
class TokenCouplingParams(ChapterParams):
    """Chapter 06: coupling across tokens at fixed layers (paper A §3.1, §5.2; Figs 4, 17–19)."""

    #: the prompt whose grids are drawn
    example_prompt: str = "What is the capital of France? The capital is"
    #: None: the named example prompts of both papers (the example first), then SQuAD questions
    prompts: list[str] | None = None
    #: prompts the claims are judged over (each costs one Jacobian pass per model)
    n_prompts: int = 16
    #: the SQuAD questions after the named prompts keep their last characters (64: the question
    #: and "The answer is:", 12–18 tokens; None: whole, 100–300 tokens, far costlier)
    max_prompt_chars: int | None = 64
    #: 0-based block l whose Jacobians are expressed (paper layer l + 1; None: 11, or its fraction
    #: of a shallower model)
    layer: int | None = None
    #: 0-based block l′ whose singular vectors form the bases (None: 12, or l + 1 as above)
    ref_layer: int | None = None
    #: top singular vectors kept in each coupling matrix (chance diagonal share 1/k; None:
    #: relative_k, 30, or d_model // 8 if d_model < 240)
    k: int | None = None
    input_token: int = 0  # t1 of fixed-input coupling (negative counts from the end)
    output_token: int = -1  # t2 of fixed-output coupling (negative counts from the end)
    #: also score the control with l′ the same as l (from the same Jacobians, no extra pass)
    same_layer_control: bool = True
    #: more 0-based (l, l′) pairs (None: [[3, 4], [23, 24]], early and late of 30 blocks, or their
    #: fractions of a shallower model)
    extra_layer_pairs: list[list[int]] | None = None
    #: prompts (the example first) for the extra pairs (a Jacobian pass each)
    n_pair_prompts: int = 1
    #: untrained twins' seeds: the first on every prompt, the others on n_seed_prompts
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    n_seed_prompts: int = 1  # prompts (the example first) the extra twins run on
    #: a prompt beyond a model's context keeps its end (False: an error)
    cut_long_prompts: bool = True

    at_least: ClassVar[dict[str, int]] = {"k": 2, "n_prompts": 1, "n_pair_prompts": 1,
                                          "n_seed_prompts": 1}
    paper_pair: ClassVar[tuple[int, int]] = (11, 12)  # (layer, ref_layer) on 30 blocks
    paper_extra_pairs: ClassVar[list[tuple[int, int]]] = [(3, 4), (23, 24)]  # early, late

    def __post_init__(self) -> None:
        """Check types and seeds, then the pairs."""
        super().__post_init__()
        if any(len(pair) != 2 or pair[0] == pair[1] for pair in self.extra_layer_pairs or []):
            _fail("extra_layer_pairs", self.extra_layer_pairs, "a list of [l, l′] pairs of two "
                  "different 0-based blocks, e.g. [[3, 4], [23, 24]] ([] for none)")

    def for_model(self, n_layers: int, d_model: int, *,
                  shallowest: int | None = None) -> TokenCouplingParams:
        """As :meth:`ChapterParams.for_model`, and the pairs relative to the model.

        ``layer``/``ref_layer`` default to blocks 11/12 where the model has them, else to the
        same fraction of depth (offset kept). The extra pairs default to [[3, 4], [23, 24]]
        where the model has blocks 11 and 12 (the pairs beyond its depth left out, as before:
        Gemma-3-270M's 18 blocks keep [[3, 4]]); on a shallower model they move to their
        fractions of depth too, and a pair that lands on an earlier one is left out.
        """
        resolved = super().for_model(n_layers, d_model, shallowest=shallowest)
        deep = max(self.paper_pair) < n_layers
        main = self.paper_pair if deep else relative_pair(self.paper_pair, n_layers)
        changes = {name: value for name, value in zip(("layer", "ref_layer"), main, strict=True)
                   if getattr(self, name) is None}
        if self.extra_layer_pairs is None:
            pairs = [list(p) if deep else list(relative_pair(p, n_layers))
                     for p in self.paper_extra_pairs if not deep or max(p) < n_layers]
            pairs = [p for i, p in enumerate(pairs) if p not in pairs[:i]]
            given = (changes.get("layer", self.layer), changes.get("ref_layer", self.ref_layer))
            changes["extra_layer_pairs"] = [p for p in pairs if tuple(p) != given]
        final = dataclasses.replace(resolved, **changes)
        names, *shape = resolved._resolved
        object.__setattr__(final, "_resolved", (sorted([*names, *changes]), *shape))
        return final

    def layer_pairs(self, n_layers: int, *, drop_missing: bool = False) -> list[tuple[int, int]]:
        """(``layer``, ``ref_layer``), then the ``extra_layer_pairs``, as 0-based blocks.

        Negatives count from the end. Args as :meth:`blocks`: ``drop_missing`` leaves out the
        extra pairs with a block the model does not have (a shallower model) instead of raising;
        the main pair must always exist.
        """
        main = (self.block("layer", n_layers), self.block("ref_layer", n_layers))
        kept = [pair for pair in self.extra_layer_pairs
                if all(-n_layers <= b < n_layers for b in pair)]
        if not drop_missing and len(kept) < len(self.extra_layer_pairs):
            _fail("extra_layer_pairs", self.extra_layer_pairs, f"pairs of blocks of {self.model} "
                  f"({n_layers} blocks: 0 … {n_layers - 1}, or −{n_layers} … −1 from the end)")
        pairs = [main, *((a % n_layers, b % n_layers) for a, b in kept)]
        if len(set(pairs)) < len(pairs) or any(a == b for a, b in pairs[1:]):
            _fail("extra_layer_pairs", self.extra_layer_pairs, f"pairs of two different blocks, "
                  f"each once and other than (layer, ref_layer) = {main} (after counting "
                  "negatives from the end)")
        return pairs


@dataclass(frozen=True)
class RegularityParams(CompareParams):
    """Chapter 07: LSS and expodistance of every token's trajectory (paper A §3.2–3.3, §5.5)."""

    #: leaderboard tasks the prompts are drawn from (paper A: the six of the Open LLM
    #: Leaderboard v1)
    tasks: list[str] = field(default_factory=lambda: ["arc_challenge", "gsm8k", "hellaswag",
                                                      "mmlu", "winogrande", "truthfulqa"])
    n_per_task: int = 20  # prompts drawn per task (paper: 200 per task, 1,200 in all)
    #: None: full prompts; else keep each prompt's last characters
    max_prompt_chars: int | None = None
    #: untrained twins' seeds: the first on every prompt, the others on n_seed_prompts
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    n_seed_prompts: int = 20  # prompts, evenly spread over the sample, that the extra twins run on

    at_least: ClassVar[dict[str, int]] = {"n_per_task": 1, "n_seed_prompts": 1}

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        bad = [t for t in self.tasks if t not in ALL_TASKS]
        if bad or not self.tasks:
            _fail("tasks", self.tasks, f"a non-empty list from {ALL_TASKS}")
