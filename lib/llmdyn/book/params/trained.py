"""Parameters of the chapters that train their own models: 08 (a suite), 09, 10 (ViTs).

Like `llmdyn.book.params.chapters`, each class is its chapter's parameters cell, docs included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from llmdyn import LlmdynError
from llmdyn.book.params.base import ChapterParams
from llmdyn.core.paths import results_root


@dataclass(frozen=True)
class TrainingParams(ChapterParams):
    """Chapter 08: coupling and regularity over training checkpoints (paper A §5.3, Figs 27–30).

    ``model`` is not used here: the chapter trains and measures the checkpoints named by
    ``suite``; the field stays because the book passes ``model`` to every chapter.
    """

    #: unused here (the chapter trains `suite`); the book passes it to all
    model: str = "smollm2-135m"

    #: a suite from llmdyn.training.suite.SUITES, or a list of checkpoint dirs / hub revisions
    suite: str | list[str] = "default"
    #: where a named suite's runs are, trained here if missing (None: $LLMDYN_RESULTS/suite,
    #: else results/suite)
    suite_root: str | None = None
    checkpoints: list[int] | None = None  # steps to measure (None: every saved step)
    #: None: passages from the held-out documents of the suite's corpus
    prompts: list[str] | None = None
    n_prompts: int = 16  # held-out passages, the same for every checkpoint
    passage_chars: int = 240  # characters per passage (about 50 tokens)
    # An override of relative_k (d_model // 8 on these narrow models): the papers' K = 30, as
    # paper B states it; paper A does not state the K of Fig 1a, and its Fig 36 varies it.
    #: top singular vectors in the coupling matrices; overrides relative_k (d_model // 8 on these
    #: narrow models) with the papers' K
    k: int = 30
    window: int = 3  # points per LSS/expodistance window (paper: 11 of Pythia-12B's 37)
    #: checkpoints drawn as coupling graphs (None: four spread over training)
    graph_steps: list[int] | None = None
    #: the papers' convention; "block_output" stops before the final norm
    last_point: str = "final_norm"
    #: checkpoint intervals within which coupling and loss count as together
    timing_tolerance: float = 1.0

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if not self.timing_tolerance > 0:
            raise LlmdynError(f"timing_tolerance must be > 0 checkpoint intervals, got "
                              f"{self.timing_tolerance}")
        if isinstance(self.suite, list) and not self.suite:
            raise LlmdynError("suite must be a suite name or a non-empty list of checkpoints")
        if self.k < 2 or self.n_prompts < 2 or self.passage_chars < 20:
            raise LlmdynError(f"need k >= 2, n_prompts >= 2 (intervals) and passage_chars >= 20, "
                              f"got {self.k}, {self.n_prompts}, {self.passage_chars}")
        if self.window < 3 or self.window % 2 == 0:
            raise LlmdynError(f"window must be odd and >= 3, got {self.window}")
        if self.last_point not in ("final_norm", "block_output"):
            raise LlmdynError(f"last_point must be 'final_norm' or 'block_output', got "
                              f"{self.last_point!r}")

    @property
    def suite_dir(self) -> Path:
        """``suite_root``, or ``suite`` under the results root ($LLMDYN_RESULTS, else results)."""
        return Path(self.suite_root) if self.suite_root else results_root() / "suite"


@dataclass(frozen=True)
class GeneralizationParams(ChapterParams):
    """Chapter 09: coupling against generalization (paper A §5.4, Figs 1a, 7, 8, 31, 35, 36)."""

    #: placed as a labelled point beside the population (part 2's last panel)
    model: str = "smollm2-135m"

    suite: str = "population"  # independent runs, final checkpoints (llmdyn.training.suite.SUITES)
    suite_root: str | None = None  # where its runs are (None: $LLMDYN_RESULTS/suite)
    n_prompts: int = 16  # held-out passages, the same for every model
    passage_chars: int = 160  # about 50 tokens: the population's context is 64
    #: top singular vectors; overrides relative_k (d_model // 8 on these narrow models) with paper
    #: B's K (paper A does not state the K of Fig 1a, and Fig 36 varies it)
    k: int = 30
    #: Fig 36 (at most the narrowest model's width)
    k_sweep: list[int] = field(default_factory=lambda: [10, 20, 30])
    #: more pretrained models to place beside the population (each costs minutes)
    compare_models: list[str] = field(default_factory=list)
    #: passages for `model` and each compare model (bits per byte, coupling)
    n_compare_prompts: int = 4
    #: hub ids measured by `llmdyn measure coupling` (part 3; empty offline)
    sweep_models: list[str] = field(default_factory=list)
    sweep_root: str | None = None  # where their result files are (None: $LLMDYN_RESULTS/measure)
    sweep_n_per_task: int = 200  # prompts per task of the sweep files (paper: 200)
    #: the per-checkpoint table is written here (None: $LLMDYN_RESULTS/generalization)
    out_dir: str | None = None
    power_draws: int = 500  # simulated populations per scenario for each verdict rule's power

    def __post_init__(self) -> None:
        """Check types, then values."""
        super().__post_init__()
        if self.power_draws < 10:
            raise LlmdynError(f"power_draws must be >= 10, got {self.power_draws}")
        if self.k < 2 or self.n_prompts < 2 or self.passage_chars < 20:
            raise LlmdynError(f"need k >= 2, n_prompts >= 2 and passage_chars >= 20, got "
                              f"{self.k}, {self.n_prompts}, {self.passage_chars}")
        if not self.k_sweep or min(self.k_sweep) < 2:
            raise LlmdynError(f"k_sweep must list values >= 2, got {self.k_sweep}")
        if self.n_compare_prompts < 1:
            raise LlmdynError(f"n_compare_prompts must be >= 1, got {self.n_compare_prompts}")

    def models(self) -> list[str]:
        """``model`` first, then the compare models, each once."""
        return list(dict.fromkeys([self.model, *self.compare_models]))

    @property
    def suite_dir(self) -> Path:
        """``suite_root``, or ``suite`` under the results root ($LLMDYN_RESULTS, else results)."""
        return Path(self.suite_root) if self.suite_root else results_root() / "suite"

    @property
    def table_path(self) -> Path:
        """Where the population table goes: ``<out_dir>/<suite>.csv``."""
        out = Path(self.out_dir) if self.out_dir else results_root() / "generalization"
        return out / f"{self.suite}.csv"


@dataclass(frozen=True)
class VitParams(ChapterParams):
    """Chapter 10: coupling in vision transformers, SD × weight decay (paper A §3.4, Figs 6, 10)."""

    #: unused: the chapter trains its own ViTs (grid); the book passes its language model to
    #: every chapter, and this field accepts it
    model: str = "vit"
    #: a grid from llmdyn.vision.grids.GRIDS: default, paper (GPU), tiny (tests)
    grid: str = "default"
    dataset: str = "fashion-mnist"  # fashion-mnist, digits, or a CIFAR-10 binary-format directory
    grid_root: str | None = None  # where the grid's runs are (None: results/vit/<grid>/<dataset>)
    n_images: int = 24  # held-out test images for the class-token coupling
    k: int | None = None  # top singular vectors (None: relative_k, d_model // 8 for these ViTs)
    #: Fig 6b's weight decay, one of the grid's (paper: 0.04, here × 25)
    fixed_weight_decay: float = 1.0
    #: the ViT shown trained vs untrained (None: largest SD at fixed_weight_decay)
    example_run: str | None = None

    at_least: ClassVar[dict[str, int]] = {"n_images": 3}
