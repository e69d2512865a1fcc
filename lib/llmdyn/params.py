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
    compare_models: list[str] = field(default_factory=lambda: ["gemma3-270m"])  # also shown
    n_compare_prompts: int = 1  # prompts for each compare model (1: the example, as Fig 20)

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if self.k < 1:
            raise LlmdynError(f"k must be >= 1, got {self.k}")
        if self.n_prompts < 1 or self.n_compare_prompts < 1:
            raise LlmdynError(f"n_prompts and n_compare_prompts must be >= 1, got "
                              f"{self.n_prompts} and {self.n_compare_prompts}")
        if any(not m.strip() for m in self.compare_models):
            raise LlmdynError(f"compare_models must hold model names, got {self.compare_models!r}")

    def compared(self) -> list[str]:
        """The compare models other than the primary one, each once, in order."""
        return [m for m in dict.fromkeys(self.compare_models) if m != self.model]


def _check_compare(p: Any) -> None:
    """Shared checks of paper B's chapters 03–04 (compare models, question prompts)."""
    if any(not m.strip() for m in p.compare_models):
        raise LlmdynError(f"compare_models must hold model names, got {p.compare_models!r}")
    if p.n_questions < 1:
        raise LlmdynError(f"n_questions must be >= 1, got {p.n_questions}")
    if p.max_prompt_chars is not None and p.max_prompt_chars < 10:
        raise LlmdynError(f"max_prompt_chars must be None (full prompts) or >= 10, "
                          f"got {p.max_prompt_chars}")
    criteria = ("consensus", "lss_peak", "entropy_spread", "norm_velocity")
    if p.phase_criterion not in criteria:
        raise LlmdynError(f"phase_criterion must be one of {criteria} (llmdyn.phases), "
                          f"got {p.phase_criterion!r}")
    if p.window < 3 or p.window % 2 == 0:
        raise LlmdynError(f"window must be odd and >= 3, got {p.window}")


def _model_list(p: Any) -> list[str]:
    """The primary model, then the compare models, each once, in order."""
    return list(dict.fromkeys([p.model, *p.compare_models]))


@dataclass(frozen=True)
class UncertaintyParams(ChapterParams):
    """Chapter 03: logit-lens uncertainty per layer (paper B §4.4, App. A.1, B.2; Figs 5, 8–11)."""

    compare_models: list[str] = field(default_factory=lambda: ["gemma3-270m"])  # also run these
    n_questions: int = 20  # SQuAD question prompts (paper: 100 on SQuAD v2 "Dog")
    squad_articles: list[str] | None = None  # None: llmdyn.data.squad_prompts' default articles
    max_prompt_chars: int | None = None  # None: full prompts; else keep each prompt's last chars
    top_k: int = 5  # tokens per layer in the top-k tables (paper: 5)
    n_table_layers: int = 8  # evenly spaced layers shown in the top-k tables (paper: 5–8)
    window: int = 11  # LSS window of the phase-boundary estimate (paper: 11), if it fits
    phase_criterion: str = "consensus"  # llmdyn.phases estimate drawn as the boundary
    untrained: bool = True  # also read the untrained twin's entropy

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        _check_compare(self)
        if self.top_k < 1 or self.n_table_layers < 2:
            raise LlmdynError(f"top_k must be >= 1 and n_table_layers >= 2, got {self.top_k} "
                              f"and {self.n_table_layers}")

    def models(self) -> list[str]:
        """The primary model, then the compare models, each once."""
        return _model_list(self)


@dataclass(frozen=True)
class JacobianAlignmentParams(ChapterParams):
    """Chapter 04: residual Jacobian alignment r(A) and Table 1 (paper B §3.6, §4.5; Figs 6, 7)."""

    compare_models: list[str] = field(default_factory=lambda: ["gemma3-270m"])  # also run these
    example_prompt: str = "What is the capital of France? The capital is"  # the |A| grids
    k: int = 30  # top singular vectors in A_{i,j,K} (paper: 30)
    grid_layers: list[int] = field(default_factory=lambda: list(range(8, 16)))  # 0-based blocks
    n_questions: int = 2  # SQuAD prompts averaged in the r(A) heatmap (paper: 100)
    n_lens_questions: int = 20  # SQuAD prompts for the cheap per-layer quantities of Table 1
    squad_articles: list[str] | None = None  # None: llmdyn.data.squad_prompts' default articles
    max_prompt_chars: int | None = None  # None: full prompts; else keep each prompt's last chars
    window: int = 11  # LSS/equidistance window (paper: 11), if it fits the model's depth
    phase_criterion: str = "consensus"  # llmdyn.phases estimate splitting Thought/Fixation

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        _check_compare(self)
        if self.k < 2:
            raise LlmdynError(f"k must be >= 2 (r(A) divides by k - 1), got {self.k}")
        if self.n_lens_questions < 2:
            raise LlmdynError(f"n_lens_questions must be >= 2, got {self.n_lens_questions}")
        if not self.grid_layers:
            raise LlmdynError("grid_layers must name at least one block")

    def models(self) -> list[str]:
        """The primary model, then the compare models, each once."""
        return _model_list(self)


@dataclass(frozen=True)
class SpectraPromptsParams(ChapterParams):
    """Chapter 11: spectra, linearisation, CoT, prompt length (paper A Figs 9, 15, 32–34)."""

    compare_models: list[str] = field(default_factory=lambda: ["gemma3-270m"])  # spectra too
    example_prompt: str = "What is the capital of France? The capital is"
    n_spectra_prompts: int = 3  # named prompts (the example first) for the spectra
    n_compare_prompts: int = 1  # of those, for each compare model
    k: int = 30  # top singular vectors in A; also the singular values kept
    n_top: int = 5  # singular values drawn per layer
    noise_levels: list[float] = field(default_factory=lambda: [0.01, 0.03, 0.1, 0.3, 1.0])
    n_draws: int = 8  # noise draws per level
    noise_tokens: str = "all"  # "all" or "last": which input embeddings the noise moves
    n_gsm8k: int = 6  # GSM8K prompts, each also with the zero-shot CoT suffix (Fig 15)
    n_per_task: int = 1  # leaderboard prompts per task added to the length plot (Fig 9)
    max_prompt_chars: int | None = None  # None: full prompts; else keep each prompt's last chars

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if self.k < 2:
            raise LlmdynError(f"k must be >= 2, got {self.k}")
        for name in ("n_spectra_prompts", "n_compare_prompts", "n_top", "n_draws",
                     "n_per_task"):
            if getattr(self, name) < 1:
                raise LlmdynError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.n_gsm8k < 3:
            raise LlmdynError(f"n_gsm8k must be >= 3 (a regression needs 3 points), "
                              f"got {self.n_gsm8k}")
        if not self.noise_levels or min(self.noise_levels) <= 0:
            raise LlmdynError(f"noise_levels must be positive, got {self.noise_levels}")
        if self.noise_tokens not in ("all", "last"):
            raise LlmdynError(f"noise_tokens must be 'all' or 'last', got {self.noise_tokens!r}")
        if self.max_prompt_chars is not None and self.max_prompt_chars < 10:
            raise LlmdynError(f"max_prompt_chars must be None (full prompts) or >= 10, "
                              f"got {self.max_prompt_chars}")
        if any(not m.strip() for m in self.compare_models):
            raise LlmdynError(f"compare_models must hold model names, got {self.compare_models!r}")

    def compared(self) -> list[str]:
        """The compare models other than the primary one, each once, in order."""
        return [m for m in dict.fromkeys(self.compare_models) if m != self.model]


def _check_fractions(name: str, value: list[float]) -> None:
    if len(value) != 2 or not 0 <= value[0] < value[1] <= 1:
        raise LlmdynError(f"{name} must be [start, end] fractions of depth with "
                          f"0 <= start < end <= 1, got {value!r}")


@dataclass(frozen=True)
class TrajectoriesParams(ChapterParams):
    """Chapter 01: token trajectories in the PC plane of X^L (paper B Fig 1, paper A Fig 12)."""

    prompt: str = "What is the capital of France? The capital is"  # paper B's example
    compare_models: list[str] = field(default_factory=lambda: ["gemma3-270m"])  # drawn beside
    untrained: bool = True  # also draw each model's untrained twin
    shallow: list[float] = field(default_factory=lambda: [0.0, 0.5])  # fractions of depth L
    deep: list[float] = field(default_factory=lambda: [0.5, 1.0])  # fractions of depth L
    windows_skip_last: bool = True  # shallow/deep panels stop at X^{L-1} (the last jump is big)
    drop_first: int = 1  # leading tokens left out (the first is an attention sink, huge norm)

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        _check_fractions("shallow", self.shallow)
        _check_fractions("deep", self.deep)
        if self.drop_first < 0:
            raise LlmdynError(f"drop_first must be >= 0, got {self.drop_first}")
        if any(not m.strip() for m in self.compare_models):
            raise LlmdynError(f"compare_models must hold model names, got {self.compare_models!r}")

    def models(self) -> list[str]:
        """The primary model, then the compare models, each once."""
        return _model_list(self)


@dataclass(frozen=True)
class GeometryAlongDepthParams(ChapterParams):
    """Chapter 02: norm, windowed LSS and equidistance along depth (paper B Figs 2-4, 12, 13)."""

    compare_models: list[str] = field(default_factory=lambda: ["gemma3-270m"])  # drawn beside
    prompts: list[str] | None = None  # None: SQuAD questions with context (paper B §3.2)
    n_prompts: int = 20  # question prompts (paper: 100)
    squad_articles: list[str] | None = None  # None: llmdyn.data.squad_prompts' default articles
    window: int = 11  # layers in each LSS/equidistance window, centred (paper: 11)
    n_untrained: int = 3  # prompts traced through each untrained twin (0: no twins)
    min_size: int = 3  # fewest layers on each side of a change-point (llmdyn.phases)
    agree_within: float = 0.1  # criteria agree if their estimates span <= this fraction of L

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if any(not m.strip() for m in self.compare_models):
            raise LlmdynError(f"compare_models must hold model names, got {self.compare_models!r}")
        if self.n_prompts < 2:
            raise LlmdynError(f"n_prompts must be >= 2 (bands and spreads need two), "
                              f"got {self.n_prompts}")
        if self.prompts is not None and len(self.prompts) < 2:
            raise LlmdynError(f"prompts must hold at least 2 texts, got {self.prompts!r}")
        if self.window < 3 or self.window % 2 == 0:
            raise LlmdynError(f"window must be odd and >= 3, got {self.window}")
        if self.n_untrained < 0 or self.min_size < 1:
            raise LlmdynError(f"n_untrained must be >= 0 and min_size >= 1, got "
                              f"{self.n_untrained} and {self.min_size}")
        if not 0 <= self.agree_within <= 1:
            raise LlmdynError(f"agree_within must be a fraction of depth in [0, 1], "
                              f"got {self.agree_within}")

    def models(self) -> list[str]:
        """The primary model, then the compare models, each once."""
        return _model_list(self)


@dataclass(frozen=True)
class TokenCouplingParams(ChapterParams):
    """Chapter 06: coupling across tokens at fixed layers (paper A §3.1, §5.2; Figs 4, 17–19)."""

    example_prompt: str = "What is the capital of France? The capital is"  # the drawn grids
    prompts: list[str] | None = None  # None: the named example prompts (example first)
    n_prompts: int = 1  # prompts pooled in the summary numbers (each costs a Jacobian pass)
    layer: int = 11  # 0-based block l whose Jacobians are expressed (paper layer l + 1)
    ref_layer: int = 12  # 0-based block l′ whose singular vectors form the bases
    k: int = 30  # top singular vectors kept in each coupling matrix
    input_token: int = 0  # t1 of fixed-input coupling (negative counts from the end)
    output_token: int = -1  # t2 of fixed-output coupling (negative counts from the end)
    same_layer_control: bool = True  # also compute l′ = l (costs one more block per model)

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if self.k < 1:
            raise LlmdynError(f"k must be >= 1, got {self.k}")
        if self.n_prompts < 1:
            raise LlmdynError(f"n_prompts must be >= 1, got {self.n_prompts}")


@dataclass(frozen=True)
class RegularityParams(ChapterParams):
    """Chapter 07: LSS and expodistance of every token's trajectory (paper A §3.2–3.3, §5.5)."""

    compare_models: list[str] = field(default_factory=lambda: ["gemma3-270m"])  # also run these
    tasks: list[str] = field(default_factory=lambda: ["arc_challenge", "gsm8k", "hellaswag",
                                                      "mmlu", "winogrande", "truthfulqa"])
    n_per_task: int = 20  # prompts drawn per task (paper: 200 per task, 1,200 in all)
    max_prompt_chars: int | None = None  # None: full prompts; else keep each prompt's last chars

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        from llmdyn.data import ALL_TASKS

        if any(not m.strip() for m in self.compare_models):
            raise LlmdynError(f"compare_models must hold model names, got {self.compare_models!r}")
        bad = [t for t in self.tasks if t not in ALL_TASKS]
        if bad or not self.tasks:
            raise LlmdynError(f"tasks must be a non-empty list from {ALL_TASKS}, got "
                              f"{self.tasks!r}")
        if self.n_per_task < 1:
            raise LlmdynError(f"n_per_task must be >= 1, got {self.n_per_task}")
        if self.max_prompt_chars is not None and self.max_prompt_chars < 10:
            raise LlmdynError(f"max_prompt_chars must be None (full prompts) or >= 10, "
                              f"got {self.max_prompt_chars}")

    def models(self) -> list[str]:
        """The primary model, then the compare models, each once."""
        return _model_list(self)


@dataclass(frozen=True)
class TrainingParams(ChapterParams):
    """Chapter 08: coupling and regularity over training checkpoints (paper A §5.3, Figs 27–30).

    ``model`` is not used here: the chapter runs on the checkpoints named by ``suite``.
    """

    suite: str | list[str] = "default"  # a suite from llmdyn.suite.SUITES, or checkpoint specs
    suite_root: str = "results/suite"  # where a named suite's runs are (trained if missing)
    checkpoints: list[int] | None = None  # steps to measure (None: every saved step)
    prompts: list[str] | None = None  # None: passages from the suite corpus's held-out split
    n_prompts: int = 16  # held-out passages (the same for every checkpoint)
    prompt_chars: int = 240  # characters per passage (about 50 tokens of the suite's BPE)
    k: int = 30  # top singular vectors in the coupling matrices (paper: 30)
    window: int = 3  # points per LSS/expodistance window (paper: 11 of 36 layers)
    graph_steps: list[int] | None = None  # checkpoints drawn as graphs (None: four spread out)
    last_point: str = "final_norm"  # the papers' convention; or "block_output"

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
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

    suite: str = "generalization"  # a suite from llmdyn.suite.SUITES (trained if missing)
    suite_root: str = "results/suite"  # where its runs are
    n_prompts: int = 16  # held-out passages, the same for every checkpoint
    prompt_chars: int = 240  # characters per passage
    k: int = 30  # top singular vectors (paper: 30)
    k_sweep: list[int] = field(default_factory=lambda: [10, 30, 50])  # Fig 36's choices of K
    packaged_models: list[str] = field(default_factory=lambda: ["gemma3-270m"])  # also placed
    n_packaged_prompts: int = 8  # passages for `model` and each packaged model
    sweep_models: list[str] = field(default_factory=list)  # hub ids measured by `llmdyn measure`
    sweep_root: str = "results/measure"  # where their result files are
    sweep_n_per_task: int = 200  # prompts per task the sweep files were measured with (paper)
    out_dir: str = "results/generalization"  # the per-checkpoint table is written here

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if self.k < 2 or self.n_prompts < 2 or self.prompt_chars < 20:
            raise LlmdynError(f"need k >= 2, n_prompts >= 2 and prompt_chars >= 20, got "
                              f"{self.k}, {self.n_prompts}, {self.prompt_chars}")
        if not self.k_sweep or min(self.k_sweep) < 2:
            raise LlmdynError(f"k_sweep must list values >= 2, got {self.k_sweep}")
        if self.n_packaged_prompts < 1:
            raise LlmdynError(f"n_packaged_prompts must be >= 1, got {self.n_packaged_prompts}")

    def packaged(self) -> list[str]:
        """``model`` first, then the packaged models, each once."""
        return list(dict.fromkeys([self.model, *self.packaged_models]))
