"""Many models' coupling result files joined with their leaderboard scores, ready to regress."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core.paths import data_file
from llmdyn.sweep.job import CouplingResult, MeasureParams, read_results, result_path

LEADERBOARD_CSV = data_file("leaderboard_v1.csv")
# The six Open LLM Leaderboard v1 tasks, as the CSV's columns (source: data/README.md).
SCORE_COLUMNS = ("MMLU", "ARC-C", "HellaSwag", "Winograd", "TruthfulQA", "GSM8K")


@dataclass(frozen=True)
class LeaderboardRow:
    """One model's published scores (fractions) and shape, from ``data/leaderboard_v1.csv``.

    Attributes:
        model: hub id, e.g. ``"EleutherAI/pythia-1b-deduped"``.
        family: model family, e.g. ``"Pythia"``.
        params_b: parameters in billions (NaN where the source has none).
        tokens_t: pre-training tokens in trillions (NaN where the source has none).
        scores: task -> score, NaN where the source has none.
    """

    model: str
    family: str
    params_b: float
    tokens_t: float
    scores: dict[str, float]

    @property
    def average(self) -> float:
        """The six-task average; NaN when a task is missing (e.g. Llama-3's ARC-C)."""
        return float(np.mean([self.scores[c] for c in SCORE_COLUMNS]))


def _float(text: str) -> float:
    return float(text) if text.strip() else math.nan


def leaderboard(path: str | os.PathLike = LEADERBOARD_CSV) -> dict[str, LeaderboardRow]:
    """Every model of the leaderboard table, keyed by hub id."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {r["Model"]: LeaderboardRow(
        model=r["Model"], family=r["Model Family"], params_b=_float(r["Model Size (B)"]),
        tokens_t=_float(r["Pretraining Data Size (T)"]),
        scores={c: _float(r[c]) for c in SCORE_COLUMNS}) for r in rows}


def leaderboard_score(model: str, table: dict[str, LeaderboardRow] | None = None) -> float:
    """A model's six-task leaderboard average.

    Raises:
        LlmdynError: the model is not in the table, or a task score is missing.
    """
    table = leaderboard() if table is None else table
    if model not in table:
        close = [m for m in table if model.split("/")[-1].lower() in m.lower()]
        hint = f" Did you mean {close}?" if close else ""
        raise LlmdynError(f"model {model!r} has no leaderboard score in {LEADERBOARD_CSV.name} "
                          f"(it has {len(table)} base models, keyed by hub id).{hint} Drop it "
                          "from sweep_models or add its scores with their source.")
    row = table[model]
    missing = [c for c in SCORE_COLUMNS if math.isnan(row.scores[c])]
    if missing:
        raise LlmdynError(f"model {model!r} has no {', '.join(missing)} score in "
                          f"{LEADERBOARD_CSV.name}, so its six-task average is undefined; drop "
                          "it from sweep_models")
    return row.average


@dataclass(frozen=True)
class SweepTable:
    """Coupling and leaderboard score of each swept model.

    Attributes:
        models: ``[model]`` hub ids.
        miscoupling: ``[model]`` mean m̃.
        diagonal_share: ``[model]`` mean diagonal share.
        score: ``[model]`` six-task leaderboard average.
        results: the result files read.
    """

    models: tuple[str, ...]
    miscoupling: np.ndarray
    diagonal_share: np.ndarray
    score: np.ndarray
    results: tuple[CouplingResult, ...]


def sweep_table(models: Sequence[str], expected: MeasureParams, *,
                root: str | os.PathLike | None = None) -> SweepTable:
    """Read each model's result file (:func:`llmdyn.sweep.result_path`) and its score.

    Raises:
        LlmdynError: a model without a leaderboard score, a missing result file, or a file
            measured with other parameters.
    """
    if isinstance(models, str) or not len(models):
        raise LlmdynError(f"models must be a non-empty list of hub ids, got {models!r}")
    table = leaderboard()
    scores = [leaderboard_score(m, table) for m in models]  # fail before reading any file
    results = read_results([result_path(m, root) for m in models], expected)
    for m, r in zip(models, results, strict=True):
        if r.name != m:
            raise LlmdynError(f"result file {r.path} holds model {r.name!r}, not {m!r}")
    return SweepTable(tuple(models), np.array([r.miscoupling for r in results]),
                      np.array([r.diagonal_share for r in results]), np.array(scores),
                      tuple(results))


def check_regression(x, y, *, x_name: str = "x", y_name: str = "y") -> None:
    """Refuse a regression that would print a meaningless R².

    Raises:
        LlmdynError: fewer than three points (two points give R² = 1 whatever they are), or
            constant x or y.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.size != y.size:
        raise LlmdynError(f"{x_name} and {y_name} differ in length: {x.size} and {y.size}")
    if x.size < 3:
        raise LlmdynError(f"a regression of {y_name} on {x_name} needs at least 3 points, got "
                          f"{x.size}; with 2 points any line fits exactly (R² = 1 says nothing)")
    for name, v in ((x_name, x), (y_name, y)):
        if np.ptp(v) == 0:
            raise LlmdynError(f"{name} is constant ({v[0]:.6g} for all {v.size} points); a "
                              "regression on it is undefined")
