"""What a grid of ViTs can judge: cells against seeds, per-SD fits and intervals over ViTs.

Paper A's Fig 6a fits test accuracy on coupling among the ViTs of one stochastic-depth (SD)
rate, whose weight decays (WD) differ. Such a fit says something about regularisation only
when the WD cells of that SD rate differ in accuracy by more than the seeds of one cell do;
otherwise its R² describes seed noise. So every R² verdict here is gated by Fisher's one-way
ANOVA of test accuracy over the cells (`llmdyn.stats.anova`): over the whole grid, and over
the WD cells of each SD rate.

Intervals resample ViTs the way they were made: the cells (SD rate, WD) are the design, the
seeds of a cell are its independent replicates (every ViT has its own initial weights and
image order, `llmdyn.vision.suite.VitRun.init_seed`), so each bootstrap draw keeps every cell
and redraws its seeds with replacement (`llmdyn.stats.replicates`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmdyn import LlmdynError
from llmdyn.claims.claim import Measure
from llmdyn.stats import bootstrap
from llmdyn.stats.anova import OneWayAnova, cell_summary, one_way_anova
from llmdyn.stats.replicates import bootstrap_within_cells

COUPLING_COLUMNS = {"final_norm": "coupling", "block_output": "coupling_block_output"}


@dataclass(frozen=True)
class CellCheck:
    """Between-cell against within-cell spread of test accuracy, over the grid and per SD rate.

    Attributes:
        overall: the ANOVA over every cell of the grid.
        by_sd: ``{SD rate: ANOVA over that rate's WD cells}`` (rates with ≥ 2 WD cells).
    """

    overall: OneWayAnova
    by_sd: dict[float, OneWayAnova]

    def table(self) -> pd.DataFrame:
        """One row per scope: cells, F, degrees of freedom, p, variance ratio and interval."""
        rows = [("all cells", self.overall)] + [(f"SD {sd:g} (its weight decays)", a)
                                                 for sd, a in self.by_sd.items()]
        return pd.DataFrame([{
            "scope": scope, "cells": a.df_between + 1, "seeds per cell": a.n0,
            "F": a.f, "df": f"({a.df_between}, {a.df_within})", "p": a.p,
            "cells/seeds variance ratio": a.ratio, "ratio lo": a.ratio_lo,
            "ratio hi": a.ratio_hi, "cells differ (p < 0.05)": a.differs()}
            for scope, a in rows]).set_index("scope")

    def for_sd(self, measure: Measure, sd: float) -> Measure:
        """``measure`` (an R² at SD ``sd``), unjudged unless cells differ.

        Judged only when the grid's cells and that rate's weight decays both differ in
        accuracy by more than seeds do.
        """
        if not self.overall.differs():
            return withheld(measure, _because("the grid's cells", self.overall))
        if sd in self.by_sd and not self.by_sd[sd].differs():
            return withheld(measure, _because(f"the weight decays at SD {sd:g}", self.by_sd[sd]))
        if sd not in self.by_sd:
            return withheld(measure, f"SD {sd:g} has a single weight decay: no spread to test")
        return measure

    def for_trend(self, measure: Measure) -> Measure:
        """``measure`` (built from every SD rate's R²) unjudged unless every rate passes."""
        failed = [sd for sd, a in self.by_sd.items() if not a.differs()]
        if not self.overall.differs():
            return withheld(measure, _because("the grid's cells", self.overall))
        if failed or not self.by_sd:
            rates = ", ".join(f"{sd:g}" for sd in failed) or "every rate"
            return withheld(measure, f"the grid cannot test it: the weight decays "
                                     f"at SD {rates} do not move accuracy by more than seeds do "
                                     "(see the between/within table)")
        return measure


def check_cells(table: pd.DataFrame, column: str = "test_accuracy") -> CellCheck:
    """One-way ANOVAs of ``column`` over the grid's cells, and over each SD rate's WD cells.

    Args:
        table: one row per ViT with ``cell``, ``drop_path`` and ``column``
            (`llmdyn.vision.coupling.GridCoupling.table`).
        column: the outcome.
    """
    _require(table, ["cell", "drop_path", column])
    by_sd = {float(sd): one_way_anova(rows[column], rows.cell)
             for sd, rows in table.groupby("drop_path") if rows.cell.nunique() >= 2}
    return CellCheck(one_way_anova(table[column], table.cell), by_sd)


def seed_spread(table: pd.DataFrame, column: str = "test_accuracy", fmt: str = ".3f"
                ) -> pd.DataFrame:
    """``column``'s mean ± half-range over each cell's seeds; rows: SD rate, columns: WD."""
    _require(table, ["cell", "drop_path", "weight_decay", column])
    means, spreads = cell_summary(table[column], table.cell)
    cells = table.drop_duplicates("cell")[["drop_path", "weight_decay"]].assign(
        text=[f"{m:{fmt}} ± {s:{fmt}}" for m, s in zip(means, spreads, strict=True)])
    return cells.pivot(index="drop_path", columns="weight_decay", values="text")


def signed_r2(coupling: np.ndarray, accuracy: np.ndarray) -> float:
    """R² of accuracy on coupling signed by the slope, ``[vit], [vit] → float``."""
    return float(bootstrap.signed_r2(np.asarray(coupling, float)[None],
                                     np.asarray(accuracy, float)[None])[0])


def r2_by_sd(drop_path: np.ndarray, coupling: np.ndarray, accuracy: np.ndarray
             ) -> dict[float, float]:
    """Signed R² of accuracy on coupling among the ViTs of each SD rate (Fig 6a's fits)."""
    drop_path = np.asarray(drop_path, float)
    return {float(sd): signed_r2(np.asarray(coupling)[drop_path == sd],
                                 np.asarray(accuracy)[drop_path == sd])
            for sd in np.unique(drop_path)}


def r2_trend(drop_path: np.ndarray, coupling: np.ndarray, accuracy: np.ndarray) -> float:
    """OLS slope of the per-SD signed R² on the SD rate: positive when fits tighten with SD."""
    r2 = r2_by_sd(drop_path, coupling, accuracy)
    if len(r2) < 2:
        return float("nan")
    return float(bootstrap.slope(np.array(list(r2))[None], np.array(list(r2.values()))[None])[0])


def coupling_slope(drop_path: np.ndarray, coupling: np.ndarray) -> float:
    """OLS slope of a ViT's coupling on its SD rate (Figs 6b, 10)."""
    return float(bootstrap.slope(np.asarray(drop_path, float)[None],
                                 np.asarray(coupling, float)[None])[0])


def over_vits(statistic, table: pd.DataFrame, columns: list[str], quantity: str, *,
              seed: int = 0, **kw) -> Measure:
    """``statistic(*table[columns])`` with its interval from redrawing seeds within cells.

    Args:
        statistic: ``([vit], ...) -> float`` of the named columns.
        table: one row per ViT with ``cell`` and ``columns``.
        columns: the statistic's arguments, in order.
        quantity: the measure's noun phrase.
        seed: seed of the draws.
        **kw: `Measure` fields (fmt, unit, detail).
    """
    _require(table, ["cell", *columns])
    if table.empty:
        return Measure(quantity, None, missing="not run", reason="no ViTs in this part of the grid",
                       **kw)
    est = bootstrap_within_cells(statistic, *[table[c].to_numpy(float) for c in columns],
                                 cells=table.cell.to_numpy(), seed=seed)
    return Measure(quantity, est, **kw)


def withheld(measure: Measure, reason: str) -> Measure:
    """``measure`` with its estimate and interval kept but graded "no verdict" (``reason``)."""
    return Measure(measure.quantity, measure.estimate, fmt=measure.fmt, unit=measure.unit,
                   detail=measure.detail, missing="no verdict", reason=reason)


def _because(scope: str, gate: OneWayAnova) -> str:
    return (f"the grid cannot test it: {scope} do not differ in test accuracy by "
            f"more than seeds do ({gate.summary()})")


def _require(table: pd.DataFrame, columns: list[str]) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise LlmdynError(f"the grid table lacks columns {missing}; it has {list(table.columns)} "
                          "(from llmdyn.vision.coupling.measure_grid)")
