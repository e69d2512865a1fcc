"""Parameters of the chapters that train their own models: 08 (a suite), 09, 10 (ViTs).

Like `llmdyn.book.params.chapters`, each class is its chapter's parameters cell: defaults, docs
and bounds declared on the fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from llmdyn.book.params.base import ChapterParams, odd_window
from llmdyn.core.declared import param, rule
from llmdyn.core.paths import results_root
from llmdyn.coupling.default_k import K_MIN

some_checkpoints = rule(lambda suite: isinstance(suite, str) or len(suite) > 0,
                        "a suite name or a non-empty list of checkpoints")
positive_intervals = rule(lambda t: t > 0, "> 0 checkpoint intervals")
some_ks = rule(bool, f"a non-empty list of values >= {K_MIN}")


@dataclass(frozen=True)
class TrainingParams(ChapterParams):
    """Chapter 08: coupling and regularity over training checkpoints (paper A §5.3, Figs 27–30).

    ``model`` is not used here: the chapter trains and measures the checkpoints named by
    ``suite``; the field stays because the book passes ``model`` to every chapter.
    """

    model: str = param(
        "smollm2-135m", doc="unused here (the chapter trains `suite`); the book passes it to all")

    suite: str | list[str] = param(
        "default", check=some_checkpoints, doc="a suite from llmdyn.training.suite.SUITES, or a "
                                               "list of checkpoint dirs / hub revisions")
    suite_root: str | None = param(
        None, doc="where a named suite's runs are, trained here if missing (None: "
                  "$LLMDYN_RESULTS/suite, else results/suite)")
    checkpoints: list[int] | None = param(None, doc="steps to measure (None: every saved step)")
    prompts: list[str] | None = param(
        None, doc="None: passages from the held-out documents of the suite's corpus")
    n_prompts: int = param(16, at_least=2, doc="held-out passages, the same for every checkpoint")
    passage_chars: int = param(240, at_least=20, doc="characters per passage (about 50 tokens)")
    # An override of relative_k (d_model // 8 on these narrow models): the papers' K = 30, as
    # paper B states it; paper A does not state the K of Fig 1a, and its Fig 36 varies it.
    k: int = param(
        30, at_least=K_MIN, doc="top singular vectors in the coupling matrices; overrides "
                                "relative_k (d_model // 8 on these narrow models) with the papers'"
                                " K")
    window: int = param(
        3, check=odd_window, doc="points per LSS/expodistance window (paper: 11 of Pythia-12B's "
                                 "37)")
    graph_steps: list[int] | None = param(
        None, doc="checkpoints drawn as coupling graphs (None: four spread over training)")
    last_point: str = param(
        "final_norm", choices=("final_norm", "block_output"),
        doc="the papers' convention; \"block_output\" stops before the final norm")
    timing_tolerance: float = param(
        1.0, check=positive_intervals, doc="checkpoint intervals within which coupling and loss "
                                           "count as together")

    @property
    def suite_dir(self) -> Path:
        """``suite_root``, or ``suite`` under the results root ($LLMDYN_RESULTS, else results)."""
        return Path(self.suite_root) if self.suite_root else results_root() / "suite"


@dataclass(frozen=True)
class GeneralizationParams(ChapterParams):
    """Chapter 09: coupling against generalization (paper A §5.4, Figs 1a, 7, 8, 31, 35, 36)."""

    model: str = param(
        "smollm2-135m", doc="placed as a labelled point beside the population (part 2's last "
                            "panel)")

    suite: str = param(
        "population", doc="independent runs, final checkpoints (llmdyn.training.suite.SUITES)")
    suite_root: str | None = param(None, doc="where its runs are (None: $LLMDYN_RESULTS/suite)")
    n_prompts: int = param(16, at_least=2, doc="held-out passages, the same for every model")
    passage_chars: int = param(
        160, at_least=20, doc="about 50 tokens: the population's context is 64")
    k: int = param(
        30, at_least=K_MIN, doc="top singular vectors; overrides relative_k (d_model // 8 on these"
                                " narrow models) with paper B's K (paper A does not state the K of"
                                " Fig 1a, and Fig 36 varies it)")
    k_sweep: list[int] = param(
        [10, 20, 30], at_least=K_MIN, check=some_ks, doc="Fig 36 (at most the narrowest model's "
                                                         "width)")
    compare_models: list[str] = param(
        [], doc="more pretrained models to place beside the population (each costs minutes)")
    n_compare_prompts: int = param(
        4, at_least=1, doc="passages for `model` and each compare model (bits per byte, coupling)")
    sweep_models: list[str] = param(
        [], doc="hub ids measured by `llmdyn measure coupling` (part 3; empty offline)")
    sweep_root: str | None = param(
        None, doc="where their result files are (None: $LLMDYN_RESULTS/measure)")
    sweep_n_per_task: int = param(200, doc="prompts per task of the sweep files (paper: 200)")
    out_dir: str | None = param(
        None, doc="the per-checkpoint table is written here (None: $LLMDYN_RESULTS/generalization)")
    power_draws: int = param(
        500, at_least=10, doc="simulated populations per scenario for each verdict rule's power")

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

    model: str = param(
        "vit", doc="unused: the chapter trains its own ViTs (grid); the book passes its language "
                   "model to every chapter, and this field accepts it")
    grid: str = param(
        "default", doc="a grid from llmdyn.vision.grids.GRIDS: default, paper (GPU), tiny (tests)")
    dataset: str = param(
        "fashion-mnist", doc="fashion-mnist, digits, or a CIFAR-10 binary-format directory")
    grid_root: str | None = param(
        None, doc="where the grid's runs are (None: results/vit/<grid>/<dataset>)")
    n_images: int = param(24, at_least=3, doc="held-out test images for the class-token coupling")
    k: int | None = param(
        None, at_least=K_MIN, doc="top singular vectors (None: relative_k, d_model // 8 for these "
                                  "ViTs)")
    fixed_weight_decay: float = param(
        1.0, doc="Fig 6b's weight decay, one of the grid's (paper: 0.04, here × 25)")
    example_run: str | None = param(
        None, doc="the ViT shown trained vs untrained (None: largest SD at fixed_weight_decay)")
