"""One parameter class per chapter: its fields are the chapter's parameters cell, with bounds.

Each field is declared once (:func:`llmdyn.core.declared.param`): its default, its one-line
doc, from which the notebook's cell is written (`llmdyn.book.params.cell`), and its bounds,
from which the checks are made. Chapters 08–10 are in `llmdyn.book.params.trained`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from llmdyn.book.params.base import (
    COMPARE_QUESTIONS,
    QUESTIONS,
    ChapterParams,
    CompareParams,
    QuestionParams,
    _fail,
    distinct_seeds,
    odd_window,
    some_blocks,
)
from llmdyn.book.params.relative import relative_pair
from llmdyn.core.declared import param, rule
from llmdyn.coupling.default_k import K_MIN
from llmdyn.data.prompts import ALL_TASKS

positive_levels = rule(lambda levels: levels and min(levels) > 0,
                       "a non-empty list of positive levels")
depth_fractions = rule(lambda v: len(v) == 2 and 0 <= v[0] < v[1] <= 1,
                       "[start, end] fractions of depth with 0 <= start < end <= 1")
depth_fraction = rule(lambda v: 0 <= v <= 1, "a fraction of depth in [0, 1]")
two_texts = rule(lambda texts: len(texts) >= 2, "None or at least 2 texts")
block_pairs = rule(lambda pairs: all(len(p) == 2 and p[0] != p[1] for p in pairs),
                   "a list of [l, l′] pairs of two different 0-based blocks, e.g. "
                   "[[3, 4], [23, 24]] ([] for none)")
some_tasks = rule(bool, f"a non-empty list from {ALL_TASKS}")


RELATIVE_K = "None: relative_k, 30 where d_model ≥ 240, else d_model // 8"
PAPER_GRID = "None: 8-15, paper layers 9-16, or the same fractions of a shallower model"


def k_param(what: str) -> Any:
    """A chapter's k: top singular vectors, None resolved relative to the model's width."""
    return param(None, at_least=K_MIN, doc=f"{what} ({RELATIVE_K})")


def grid_param(what: str) -> Any:
    """A chapter's grid of blocks, None resolved to paper A's blocks or their depth fractions."""
    return param(None, check=some_blocks, doc=f"{what} ({PAPER_GRID})")


def twins_param(unit: str = "prompt") -> Any:
    """Untrained twins' seeds: the first twin sees every ``unit``, the others n_seed_prompts."""
    return param([0, 1, 2], check=distinct_seeds(empty_ok=False),
                 doc=f"untrained twins' seeds: the first on every {unit}, the others on "
                     "n_seed_prompts")


@dataclass(frozen=True)
class DepthCouplingParams(CompareParams):
    """Chapter 05: coupling across depth (paper A §3.1, §5.1, Fig 3)."""

    example_prompt: str = param(
        "What is the capital of France? The capital is", doc="the prompt of the single-prompt "
                                                             "figures (the example; Figs 3, 20)")
    prompts: list[str] | None = param(
        None, doc="None: SQuAD questions, the same draw as chapter 04 (cached once); or texts")
    k: int | None = k_param("top singular vectors kept in each coupling matrix")
    grid_layers: list[int] | None = grid_param("0-based blocks in the grid")
    n_prompts: int = param(
        QUESTIONS, at_least=1, doc="prompts after the example in the heatmaps and claims")
    squad_articles: list[str] | None = param(
        None, doc="SQuAD articles of the questions (None: as chapter 04's default)")
    max_prompt_chars: int | None = param(
        None, at_least=10, doc="None: whole prompts (as chapter 04); an int keeps the last "
                               "characters")
    n_compare_prompts: int = param(
        COMPARE_QUESTIONS, at_least=1,
        doc="prompts for each compare model: the France prompt (Figs 3, 20), then chapter 04's "
            "questions")
    twin_seeds: list[int] = twins_param()
    n_seed_prompts: int = param(
        3, at_least=1, doc="prompts for the twins of the other seeds (the spread over seeds)")

    paper_blocks: ClassVar[dict[str, list[int]]] = {"grid_layers": list(range(8, 16))}
    # the example, then the questions: n_prompts + 1 prompts to take the first of
    drawn_from: ClassVar[dict[str, tuple[str, int]]] = {"n_compare_prompts": ("n_prompts", 1),
                                                        "n_seed_prompts": ("n_prompts", 1)}


@dataclass(frozen=True)
class UncertaintyParams(QuestionParams):
    """Chapter 03: logit-lens uncertainty per layer (paper B §4.4, App. A.1, B.2; Figs 5, 8–11)."""

    top_k: int = param(5, at_least=1, doc="tokens per layer in the top-k tables (paper: 5)")
    n_table_layers: int = param(8, at_least=2, doc="evenly spaced layers shown in the top-k tables")
    twin_seeds: list[int] = param(
        [0, 1, 2], check=distinct_seeds(empty_ok=True), doc="untrained twins' seeds (same config, "
                                                            "fresh weights), each twin on every "
                                                            "prompt ([]: none)")


@dataclass(frozen=True)
class JacobianAlignmentParams(QuestionParams):
    """Chapter 04: residual Jacobian alignment r(A) and Table 1 (paper B §3.6, §4.5; Figs 6, 7)."""

    example_prompt: str = param(
        "What is the capital of France? The capital is", doc="prompt of the |A| grids (Fig 7)")
    k: int | None = k_param("paper B's K in A_{i,j,K}")
    grid_layers: list[int] | None = grid_param("0-based blocks of the |A| grids")
    n_prompts: int = param(
        QUESTIONS, at_least=1, doc="SQuAD questions in the r(A) heatmaps and claims (paper: 100)")
    n_compare_prompts: int = param(
        COMPARE_QUESTIONS, at_least=1,
        doc="of those, for each compare model (its claims' n; as chapter 05)")
    n_lens_prompts: int = param(
        QUESTIONS, at_least=2,
        doc="SQuAD questions for the boundary and the cheap Table 1 quantities")
    twin_seeds: list[int] = twins_param("question")
    n_seed_prompts: int = param(
        2, at_least=1, doc="questions (spread over each model's) the extra twins see")

    paper_blocks: ClassVar[dict[str, list[int]]] = {"grid_layers": list(range(8, 16))}
    drawn_from: ClassVar[dict[str, tuple[str, int]]] = {"n_compare_prompts": ("n_prompts", 0),
                                                        "n_seed_prompts": ("n_prompts", 0)}


@dataclass(frozen=True)
class SpectraPromptsParams(CompareParams):
    """Chapter 11: spectra, linearisation, CoT, prompt length (paper A Figs 9, 15, 32–34)."""

    example_prompt: str = param(
        "What is the capital of France? The capital is", doc="the first prompt of the spectra (the"
                                                             " SQuAD questions follow it)")
    n_prompts: int = param(
        QUESTIONS, at_least=1,
        doc="SQuAD questions after the example for the spectra (chapter 04's texts)")
    squad_articles: list[str] | None = param(
        None, doc="SQuAD articles of those questions (None: as chapter 04's default)")
    n_compare_prompts: int = param(
        COMPARE_QUESTIONS, at_least=1,
        doc="of those, for each compare model (its claims' n; as chapters 04 and 05, whose "
            "Jacobians of the same prompts it reuses)")
    k: int | None = k_param("top singular vectors in A; also the singular values kept per layer")
    n_top: int = param(5, at_least=1, doc="singular values drawn per layer")
    noise_levels: list[float] = param(
        [0.01, 0.03, 0.1, 0.3, 1.0], check=positive_levels, doc="relative noise ||delta_t|| / "
                                                                "||x_t^0||")
    n_draws: int = param(8, at_least=1, doc="noise draws per level")
    n_lin_prompts: int = param(
        16, at_least=1, doc="prompts of the linearisation claims: the example, then SQuAD "
                            "questions cut to lin_prompt_chars (a Jacobian pass over every block "
                            "each)")
    lin_prompt_chars: int = param(
        64, at_least=10, doc="the linearisation's SQuAD questions keep their last characters (64:"
                             " the question and \"The answer is:\", 12–18 tokens; the pass grows "
                             "with length)")
    noise_tokens: str = param(
        "all", choices=("all", "last"), doc="\"all\": every input embedding is perturbed; \"last\":"
                                            " the last one only")
    # a regression needs 3 points
    n_gsm8k: int = param(
        6, at_least=3, doc="GSM8K prompts, each also with the zero-shot CoT suffix (Fig 15)")
    n_per_task: int = param(
        1, at_least=1, doc="prompts of each other leaderboard task added to the length plot "
                           "(paper: 200)")
    max_prompt_chars: int | None = param(
        None, at_least=10, doc="None: full prompts; else keep each prompt's last characters")
    twin_seeds: list[int] = twins_param()
    n_seed_prompts: int = param(
        2, at_least=1, doc="questions, spread evenly as in chapter 04, that the extra twins see")

    # the compare models run the example, then the questions; the twins questions only
    drawn_from: ClassVar[dict[str, tuple[str, int]]] = {"n_compare_prompts": ("n_prompts", 1),
                                                        "n_seed_prompts": ("n_prompts", 0)}


@dataclass(frozen=True)
class TrajectoriesParams(CompareParams):
    """Chapter 01: token trajectories in the PC plane of X^L (paper B Fig 1, paper A Fig 12)."""

    example_prompt: str = param(
        "What is the capital of France? The capital is", doc="paper B's example")
    n_prompts: int = param(
        16, at_least=1, doc="prompts the claims are judged over: the example, then SQuAD questions"
                            " (chapter 04's texts)")
    squad_articles: list[str] | None = param(
        None, doc="SQuAD articles of those questions (None: as chapter 04's default)")
    max_prompt_chars: int | None = param(
        None, at_least=10, doc="None: whole questions (as chapter 04); an int keeps each "
                               "question's last characters")
    twin_seeds: list[int] = param(
        [0], check=distinct_seeds(empty_ok=True, most=1), doc="seed of each model's untrained twin"
                                                              " ([]: no twin)")
    shallow: list[float] = param(
        [0.0, 0.5], check=depth_fractions, doc="the shallow panel's layers, as fractions of the "
                                               "depth L")
    deep: list[float] = param(
        [0.5, 1.0], check=depth_fractions, doc="the deep panel's layers, as fractions of the depth"
                                               " L")
    windows_skip_last: bool = param(True, doc="the shallow/deep panels stop at X^(L-1)")
    drop_first: int = param(
        1, at_least=0, doc="leading tokens left out of the fit and the plot (attention sinks)")


@dataclass(frozen=True)
class GeometryAlongDepthParams(CompareParams):
    """Chapter 02: norm, windowed LSS and equidistance along depth (paper B Figs 2-4, 12, 13)."""

    prompts: list[str] | None = param(
        None, check=two_texts, doc="None: SQuAD questions with context in paper B's format; or a "
                                   "list of texts")
    n_prompts: int = param(
        QUESTIONS, at_least=2, doc="question prompts (paper: 100)")
    squad_articles: list[str] | None = param(
        None, doc="SQuAD v1.1 article titles (None: the largest packaged articles)")
    window: int = param(
        11, check=odd_window, doc="layers per LSS/equidistance window, centred (paper: 11)")
    twin_seeds: list[int] = param(
        [0, 1, 2], check=distinct_seeds(empty_ok=True), doc="untrained twins' seeds, each twin on "
                                                            "every prompt ([]: none)")
    min_size: int = param(
        3, at_least=1, doc="fewest layers on either side of a change-point in llmdyn.phases.split")
    agree_within: float = param(
        0.1, check=depth_fraction, doc="the criteria \"agree\" if their estimates span at most this"
                                       " fraction of L")


@dataclass(frozen=True)
class TokenCouplingParams(ChapterParams):
    """Chapter 06: coupling across tokens at fixed layers (paper A §3.1, §5.2; Figs 4, 17–19)."""

    example_prompt: str = param(
        "What is the capital of France? The capital is", doc="the prompt whose grids are drawn")
    prompts: list[str] | None = param(
        None, doc="None: the named example prompts of both papers (the example first), then SQuAD "
                  "questions")
    n_prompts: int = param(
        16, at_least=1, doc="prompts the claims are judged over (each costs one Jacobian pass per "
                            "model)")
    max_prompt_chars: int | None = param(
        64, at_least=10, doc="the SQuAD questions after the named prompts keep their last "
                             "characters (64: the question and \"The answer is:\", 12–18 tokens; "
                             "None: whole, 100–300 tokens, far costlier)")
    layer: int | None = param(
        None, doc="0-based block l whose Jacobians are expressed (paper layer l + 1; None: 11, or "
                  "its fraction of a shallower model)")
    ref_layer: int | None = param(
        None, doc="0-based block l′ whose singular vectors form the bases (None: 12, or l + 1 as "
                  "above)")
    k: int | None = param(
        None, at_least=K_MIN, doc="top singular vectors kept in each coupling matrix (chance "
                                  "diagonal share 1/k; None: relative_k, 30, or d_model // 8 if "
                                  "d_model < 240)")
    input_token: int = param(0, doc="t1 of fixed-input coupling (negative counts from the end)")
    output_token: int = param(-1, doc="t2 of fixed-output coupling (negative counts from the end)")
    same_layer_control: bool = param(
        True, doc="also score the control with l′ the same as l (from the same Jacobians, no extra"
                  " pass)")
    extra_layer_pairs: list[list[int]] | None = param(
        None, check=block_pairs, doc="more 0-based (l, l′) pairs (None: [[3, 4], [23, 24]], early "
                                     "and late of 30 blocks, or their fractions of a shallower "
                                     "model)")
    n_pair_prompts: int = param(
        1, at_least=1, doc="prompts (the example first) for the extra pairs (a Jacobian pass each)")
    twin_seeds: list[int] = twins_param()
    n_seed_prompts: int = param(
        1, at_least=1, doc="prompts (the example first) the extra twins run on")
    cut_long_prompts: bool = param(
        True, doc="a prompt beyond a model's context keeps its end (False: an error)")

    paper_pair: ClassVar[tuple[int, int]] = (11, 12)  # (layer, ref_layer) on 30 blocks
    paper_extra_pairs: ClassVar[list[tuple[int, int]]] = [(3, 4), (23, 24)]  # early, late

    def relative_values(self, n_layers: int, d_model: int, shallowest: int) -> dict[str, Any]:
        """As :meth:`ChapterParams.relative_values`, and the pairs relative to the model.

        ``layer``/``ref_layer`` default to blocks 11/12 where the model has them, else to the
        same fraction of depth (offset kept). The extra pairs default to [[3, 4], [23, 24]]
        where the model has blocks 11 and 12 (the pairs beyond its depth left out, as before:
        Gemma-3-270M's 18 blocks keep [[3, 4]]); on a shallower model they move to their
        fractions of depth too, and a pair that lands on an earlier one is left out.
        """
        changes = super().relative_values(n_layers, d_model, shallowest)
        deep = max(self.paper_pair) < n_layers
        main = self.paper_pair if deep else relative_pair(self.paper_pair, n_layers)
        changes.update({name: value for name, value in zip(("layer", "ref_layer"), main,
                                                           strict=True)
                        if getattr(self, name) is None})
        if self.extra_layer_pairs is None:
            pairs = [list(p) if deep else list(relative_pair(p, n_layers))
                     for p in self.paper_extra_pairs if not deep or max(p) < n_layers]
            pairs = [p for i, p in enumerate(pairs) if p not in pairs[:i]]
            given = (changes.get("layer", self.layer), changes.get("ref_layer", self.ref_layer))
            changes["extra_layer_pairs"] = [p for p in pairs if tuple(p) != given]
        return changes

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

    tasks: list[str] = param(
        list(ALL_TASKS), choices=ALL_TASKS, check=some_tasks,
        doc="leaderboard tasks the prompts are drawn from (paper A: the six of the Open LLM "
            "Leaderboard v1)")
    n_per_task: int = param(
        20, at_least=1, doc="prompts drawn per task (paper: 200 per task, 1,200 in all)")
    max_prompt_chars: int | None = param(
        None, at_least=10, doc="None: full prompts; else keep each prompt's last characters")
    twin_seeds: list[int] = twins_param()
    n_seed_prompts: int = param(
        20, at_least=1, doc="prompts, evenly spread over the sample, that the extra twins run on")
