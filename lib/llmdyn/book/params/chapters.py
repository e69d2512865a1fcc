"""One parameter class per chapter: its fields are the chapter's parameters cell, with bounds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from llmdyn import LlmdynError
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

    example_prompt: str = "What is the capital of France? The capital is"
    prompts: list[str] | None = None  # None: the example, then chapter 04's SQuAD questions
    k: int | None = None  # top singular vectors kept in A (None: relative_k)
    grid_layers: list[int] | None = None  # grid blocks (None: 8–15 relative to the model)
    n_prompts: int = 20  # SQuAD questions after the example (the same draw as chapter 04)
    squad_articles: list[str] | None = None  # as chapter 04 (None: the default articles)
    max_prompt_chars: int | None = None  # as chapter 04 (None: whole prompts)
    n_compare_prompts: int = 1  # prompts for each compare model (1: the example, as Fig 20)
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # untrained twins' seeds
    n_seed_prompts: int = 3  # prompts for the twins after the first seed (their spread)

    at_least: ClassVar[dict[str, int]] = {"k": 2, "n_prompts": 1, "n_compare_prompts": 1,
                                          "n_seed_prompts": 1}
    paper_blocks: ClassVar[dict[str, list[int]]] = {"grid_layers": list(range(8, 16))}


@dataclass(frozen=True)
class UncertaintyParams(QuestionParams):
    """Chapter 03: logit-lens uncertainty per layer (paper B §4.4, App. A.1, B.2; Figs 5, 8–11)."""

    top_k: int = 5  # tokens per layer in the top-k tables (paper: 5)
    n_table_layers: int = 8  # evenly spaced layers shown in the top-k tables (paper: 5–8)
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # twins, every prompt

    at_least: ClassVar[dict[str, int]] = {"n_prompts": 1, "top_k": 1, "n_table_layers": 2}
    twins_optional: ClassVar[bool] = True


@dataclass(frozen=True)
class JacobianAlignmentParams(QuestionParams):
    """Chapter 04: residual Jacobian alignment r(A) and Table 1 (paper B §3.6, §4.5; Figs 6, 7)."""

    example_prompt: str = "What is the capital of France? The capital is"  # the |A| grids
    k: int | None = None  # paper B's K = 30 in A_{i,j,K} (None: relative_k)
    grid_layers: list[int] | None = None  # 0-based blocks (None: 8–15 relative to the model)
    n_prompts: int = 20  # SQuAD prompts in the r(A) heatmap and claims (paper: 100)
    n_compare_prompts: int = 2  # of those, for each compare model (Jacobians cost ~5 s each)
    n_lens_prompts: int = 20  # SQuAD prompts for the cheap per-layer quantities of Table 1
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # untrained twins' seeds
    n_seed_prompts: int = 2  # questions (evenly spread over the sample) the extra twins run on

    at_least: ClassVar[dict[str, int]] = {"k": 2, "n_prompts": 1, "n_compare_prompts": 1,
                                          "n_lens_prompts": 2, "n_seed_prompts": 1}
    paper_blocks: ClassVar[dict[str, list[int]]] = {"grid_layers": list(range(8, 16))}


@dataclass(frozen=True)
class SpectraPromptsParams(CompareParams):
    """Chapter 11: spectra, linearisation, CoT, prompt length (paper A Figs 9, 15, 32–34)."""

    example_prompt: str = "What is the capital of France? The capital is"
    n_prompts: int = 20  # SQuAD questions after the example (chapter 04's draw)
    squad_articles: list[str] | None = None  # as chapter 04 (None: the default articles)
    n_compare_prompts: int = 1  # of those, for each compare model
    k: int | None = None  # singular vectors in A and values kept (None: relative_k)
    n_top: int = 5  # singular values drawn per layer
    noise_levels: list[float] = field(default_factory=lambda: [0.01, 0.03, 0.1, 0.3, 1.0])
    n_draws: int = 8  # noise draws per level
    noise_tokens: str = "all"  # "all" or "last": which input embeddings the noise moves
    n_gsm8k: int = 6  # GSM8K prompts, each also with the zero-shot CoT suffix (Fig 15)
    n_per_task: int = 1  # leaderboard prompts per task added to the length plot (Fig 9)
    max_prompt_chars: int | None = None  # None: full prompts; else keep each prompt's last chars
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # untrained twins' seeds
    n_seed_prompts: int = 2  # questions (evenly spread, as chapter 04's) the extra twins run on

    at_least: ClassVar[dict[str, int]] = {"k": 2, "n_prompts": 1, "n_compare_prompts": 1,
                                          "n_top": 1, "n_draws": 1, "n_per_task": 1,
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

    prompt: str = "What is the capital of France? The capital is"  # paper B's example
    twin_seeds: list[int] = field(default_factory=lambda: [0])  # the twin's seed ([]: none)
    shallow: list[float] = field(default_factory=lambda: [0.0, 0.5])  # fractions of depth L
    deep: list[float] = field(default_factory=lambda: [0.5, 1.0])  # fractions of depth L
    windows_skip_last: bool = True  # shallow/deep panels stop at X^{L-1} (the last jump is big)
    drop_first: int = 1  # leading tokens left out (the first is an attention sink, huge norm)

    at_least: ClassVar[dict[str, int]] = {"drop_first": 0}
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

    prompts: list[str] | None = None  # None: SQuAD questions with context (paper B §3.2)
    n_prompts: int = 20  # question prompts (paper: 100)
    squad_articles: list[str] | None = None  # None: llmdyn.data.squad_prompts' default articles
    window: int = 11  # layers in each LSS/equidistance window, centred (paper: 11)
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # twins, every prompt
    min_size: int = 3  # fewest layers on each side of a change-point (llmdyn.phases.split)
    agree_within: float = 0.1  # criteria agree if their estimates span <= this fraction of L

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

    example_prompt: str = "What is the capital of France? The capital is"  # the drawn grids
    prompts: list[str] | None = None  # None: the named example prompts (example first)
    n_prompts: int = 3  # prompts pooled in the summary numbers (each costs a Jacobian pass)
    layer: int | None = None  # 0-based block l of the Jacobians (None: 11 relative to the model)
    ref_layer: int | None = None  # 0-based block l′ of the bases (None: 12 relative to the model)
    k: int | None = None  # top singular vectors per coupling matrix (None: relative_k)
    input_token: int = 0  # t1 of fixed-input coupling (negative counts from the end)
    output_token: int = -1  # t2 of fixed-output coupling (negative counts from the end)
    same_layer_control: bool = True  # also score l′ = l (from the same Jacobians, no extra pass)
    extra_layer_pairs: list[list[int]] | None = None  # more (l, l′) (None: [[3, 4], [23, 24]])
    n_pair_prompts: int = 1  # prompts (example first) the extra pairs run on
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # untrained twins' seeds
    n_seed_prompts: int = 1  # prompts (example first) the extra twins run on
    cut_long_prompts: bool = True  # prompts beyond the context keep their end; False: error

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

    tasks: list[str] = field(default_factory=lambda: ["arc_challenge", "gsm8k", "hellaswag",
                                                      "mmlu", "winogrande", "truthfulqa"])
    n_per_task: int = 20  # prompts drawn per task (paper: 200 per task, 1,200 in all)
    max_prompt_chars: int | None = None  # None: full prompts; else keep each prompt's last chars
    twin_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # untrained twins' seeds
    n_seed_prompts: int = 20  # prompts (evenly spread over the sample) the extra twins run on

    at_least: ClassVar[dict[str, int]] = {"n_per_task": 1, "n_seed_prompts": 1}

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        bad = [t for t in self.tasks if t not in ALL_TASKS]
        if bad or not self.tasks:
            _fail("tasks", self.tasks, f"a non-empty list from {ALL_TASKS}")



@dataclass(frozen=True)
class TrainingParams(ChapterParams):
    """Chapter 08: coupling and regularity over training checkpoints (paper A §5.3, Figs 27–30).

    ``model`` is not used here: the chapter trains and measures the checkpoints named by
    ``suite``; the field stays because the book passes ``model`` to every chapter.
    """

    suite: str | list[str] = "default"  # a suite from llmdyn.training.SUITES, or checkpoint specs
    suite_root: str = "results/suite"  # where a named suite's runs are (trained if missing)
    checkpoints: list[int] | None = None  # steps to measure (None: every saved step)
    prompts: list[str] | None = None  # None: passages from the suite corpus's held-out split
    n_prompts: int = 16  # held-out passages (the same for every checkpoint)
    prompt_chars: int = 240  # characters per passage (about 50 tokens of the suite's BPE)
    # An override of relative_k (d_model // 8 on these narrow models): the papers' K = 30, as
    # paper B states it; paper A does not state the K of Fig 1a, and its Fig 36 varies it.
    k: int = 30  # top singular vectors in the coupling matrices (override: the papers' K)
    window: int = 3  # points per LSS/expodistance window (paper: 11 of 36 layers)
    graph_steps: list[int] | None = None  # checkpoints drawn as graphs (None: four spread out)
    last_point: str = "final_norm"  # the papers' convention; or "block_output"
    timing_tolerance: float = 1.0  # checkpoint intervals within which coupling and loss agree

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if not self.timing_tolerance > 0:
            raise LlmdynError(f"timing_tolerance must be > 0 checkpoint intervals, got "
                              f"{self.timing_tolerance}")
        if isinstance(self.suite, list) and not self.suite:
            raise LlmdynError("suite must be a suite name or a non-empty list of checkpoints")
        if self.k < 2 or self.n_prompts < 2 or self.prompt_chars < 20:
            raise LlmdynError(f"need k >= 2, n_prompts >= 2 (intervals) and prompt_chars >= 20, "
                              f"got {self.k}, {self.n_prompts}, {self.prompt_chars}")
        if self.window < 3 or self.window % 2 == 0:
            raise LlmdynError(f"window must be odd and >= 3, got {self.window}")
        if self.last_point not in ("final_norm", "block_output"):
            raise LlmdynError(f"last_point must be 'final_norm' or 'block_output', got "
                              f"{self.last_point!r}")


@dataclass(frozen=True)
class GeneralizationParams(ChapterParams):
    """Chapter 09: coupling against generalization (paper A §5.4, Figs 1a, 7, 8, 31, 35, 36)."""

    suite: str = "population"  # independent runs, final checkpoints (llmdyn.training.SUITES)
    suite_root: str = "results/suite"  # where its runs are
    n_prompts: int = 16  # held-out passages, the same for every model
    prompt_chars: int = 160  # characters per passage (the population's context: 64 tokens)
    k: int = 30  # top singular vectors; override of relative_k (d_model // 8 here): papers' K
    k_sweep: list[int] = field(default_factory=lambda: [10, 20, 30])  # Fig 36's choices of K
    compare_models: list[str] = field(default_factory=list)  # also placed (minutes each)
    n_compare_prompts: int = 4  # passages for `model` and each compare model
    sweep_models: list[str] = field(default_factory=list)  # hub ids measured by `llmdyn measure`
    sweep_root: str = "results/measure"  # where their result files are
    sweep_n_per_task: int = 200  # prompts per task the sweep files were measured with (paper)
    out_dir: str = "results/generalization"  # the per-checkpoint table is written here
    power_draws: int = 500  # simulated populations per scenario for each verdict rule's power

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if self.power_draws < 10:
            raise LlmdynError(f"power_draws must be >= 10, got {self.power_draws}")
        if self.k < 2 or self.n_prompts < 2 or self.prompt_chars < 20:
            raise LlmdynError(f"need k >= 2, n_prompts >= 2 and prompt_chars >= 20, got "
                              f"{self.k}, {self.n_prompts}, {self.prompt_chars}")
        if not self.k_sweep or min(self.k_sweep) < 2:
            raise LlmdynError(f"k_sweep must list values >= 2, got {self.k_sweep}")
        if self.n_compare_prompts < 1:
            raise LlmdynError(f"n_compare_prompts must be >= 1, got {self.n_compare_prompts}")

    def models(self) -> list[str]:
        """``model`` first, then the compare models, each once."""
        return list(dict.fromkeys([self.model, *self.compare_models]))


@dataclass(frozen=True)
class VitParams(ChapterParams):
    """Chapter 10: coupling in vision transformers, SD × weight decay (paper A §3.4, Figs 6, 10)."""

    # not used: the chapter trains its own ViTs (``grid``); the book passes its language model
    # to every chapter, so the field stays to accept it, and the parameters cell says so
    model: str = "vit"
    grid: str = "default"  # a grid from llmdyn.vision.GRIDS (trained here if missing)
    dataset: str = "fashion-mnist"  # "fashion-mnist", "digits" or a CIFAR-10 binary directory
    grid_root: str | None = None  # where the grid's runs are (None: results/vit/<grid>/<dataset>)
    n_images: int = 24  # held-out test images whose class-token coupling is averaged
    k: int | None = None  # top singular vectors (None: relative_k, d_model // 8 for ViTs)
    fixed_weight_decay: float = 1.0  # Fig 6b's weight decay (paper: 0.04; the grid's are × 25)
    example_run: str | None = None  # run shown trained vs untrained (None: largest SD, Fig 6b WD)

    at_least: ClassVar[dict[str, int]] = {"n_images": 3}
