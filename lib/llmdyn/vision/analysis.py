"""What a grid of ViTs can judge: fitted cells, cells against seeds, per-SD fits, slopes.

Paper A's Fig 6a fits test accuracy on coupling among the ViTs of one stochastic-depth (SD)
rate, whose weight decays (WD) differ. Such a fit says something about regularisation only
when the WD cells of that SD rate differ in accuracy by more than the seeds of one cell do;
otherwise its R² describes seed noise. So every R² verdict here is gated by Fisher's one-way
ANOVA of test accuracy over the cells (`llmdyn.stats.anova`): over the whole grid, and over
the WD cells of each SD rate. The gate and the R² fits use only the weight decays whose ViTs
fit their training images (`fit_check`, a rule fixed before any result was seen: a WD whose
ViTs' median final train loss is more than twice the grid's median is "not fitted"); a WD at
which the ViTs cannot fit makes the cells differ for a reason that has nothing to do with
regularising a model that learns.

R² intervals resample ViTs the way they were made: the cells (SD rate, WD) are the design, the
seeds of a cell are its independent replicates (every ViT has its own initial weights and
image order, `llmdyn.vision.grids.VitRun.init_seed`), so each bootstrap draw keeps every cell
and redraws its seeds with replacement (`llmdyn.stats.replicates`). Slopes of coupling on the
SD rate take the OLS t interval instead (`slope_measure`): with 2 seeds per cell the
within-cell bootstrap is about √2 too narrow, while the t interval uses the seeds' pooled
residual variance with its n − p degrees of freedom.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from llmdyn import LlmdynError
from llmdyn.claims.claim import Measure
from llmdyn.core.tables import markdown_table
from llmdyn.stats import bootstrap
from llmdyn.stats.anova import OneWayAnova, cell_summary, one_way_anova
from llmdyn.stats.bootstrap import LEVEL
from llmdyn.stats.replicates import bootstrap_within_cells

COUPLING_COLUMNS = {"final_norm": "strength", "block_output": "strength_block_output"}
NOT_FITTED_FACTOR = 2.0  # a WD is "not fitted" when its median train loss exceeds this × the grid's


@dataclass(frozen=True)
class FitCheck:
    """Which weight decays' ViTs fit their training images.

    Attributes:
        median_by_wd: ``{WD: median final train loss of its ViTs}``.
        grid_median: the median final train loss over every ViT of the grid.
        factor: a WD is not fitted when its median exceeds ``factor × grid_median``.
    """

    median_by_wd: dict[float, float]
    grid_median: float
    factor: float = NOT_FITTED_FACTOR

    @property
    def not_fitted(self) -> list[float]:
        """The weight decays whose ViTs do not fit their training images."""
        return [wd for wd, m in self.median_by_wd.items() if m > self.factor * self.grid_median]

    def fitted(self, table: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``table`` (one per ViT) at the fitted weight decays."""
        _require(table, ["weight_decay"])
        return table[~np.isin(table.weight_decay, self.not_fitted)]

    def sentence(self) -> str:
        """The rule and its outcome, with the numbers."""
        losses = ", ".join(f"WD {wd:g}: {m:.2f}" for wd, m in self.median_by_wd.items())
        rule = (f"a weight decay is not fitted when its ViTs' median final train loss exceeds "
                f"{self.factor:g} × the grid's median ({self.factor:g} × "
                f"{self.grid_median:.2f} = {self.factor * self.grid_median:.2f}); "
                f"median train loss by weight decay: {losses}")
        if not self.not_fitted:
            return f"Every weight decay fits ({rule})."
        left = ", ".join(f"{wd:g}" for wd in self.not_fitted)
        return (f"Not fitted, and left out of the between/within check and of the R² rows: "
                f"WD {left} ({rule}).")


def fit_check(table: pd.DataFrame, factor: float = NOT_FITTED_FACTOR) -> FitCheck:
    """Median final train loss per weight decay against ``factor`` × the grid's median.

    Args:
        table: one row per ViT with ``weight_decay`` and ``train_loss`` (its final train loss).
        factor: the rule's multiple of the grid's median.
    """
    _require(table, ["weight_decay", "train_loss"])
    if table.empty or not factor > 1:
        raise LlmdynError(f"fit_check needs ViTs and a factor > 1, got {len(table)} rows and "
                          f"factor {factor}")
    by_wd = table.groupby("weight_decay").train_loss.median()
    return FitCheck({float(w): float(m) for w, m in by_wd.items()},
                    float(table.train_loss.median()), factor)


@dataclass(frozen=True)
class CellCheck:
    """Between-cell against within-cell spread of test accuracy, over the grid and per SD rate.

    Attributes:
        overall: the ANOVA over every cell of the grid.
        by_sd: ``{SD rate: ANOVA over that rate's WD cells}`` (rates with ≥ 2 WD cells).
    """

    overall: OneWayAnova
    by_sd: dict[float, OneWayAnova]
    scope: str = "all cells"  # which cells were checked, e.g. "fitted cells (WD 5 left out)"

    def table(self) -> pd.DataFrame:
        """One row per scope: cells, F, degrees of freedom, p, variance ratio and interval."""
        rows = [(self.scope, self.overall)] + [(f"SD {sd:g} (its weight decays)", a)
                                                for sd, a in self.by_sd.items()]
        return pd.DataFrame([{
            "scope": scope, "cells": a.df_between + 1, "seeds per cell": a.n0,
            "F": a.f, "df": f"({a.df_between}, {a.df_within})", "p": a.p,
            "cells/seeds variance ratio [95 %]": a.ratio_text(),
            "cells differ (p < 0.05)": a.differs()}
            for scope, a in rows]).set_index("scope")

    @property
    def _cells(self) -> str:
        return f"the grid's {self.scope.removeprefix('all ')}"

    def for_sd(self, measure: Measure, sd: float) -> Measure:
        """``measure`` (an R² at SD ``sd``), unjudged unless cells differ.

        Judged only when the grid's cells and that rate's weight decays both differ in
        accuracy by more than seeds do.
        """
        if not self.overall.differs():
            return withheld(measure, _because(self._cells, self.overall))
        if sd in self.by_sd and not self.by_sd[sd].differs():
            return withheld(measure, _because(f"the weight decays at SD {sd:g}", self.by_sd[sd]))
        if sd not in self.by_sd:
            return withheld(measure, f"SD {sd:g} has a single weight decay: no spread to test")
        return measure

    def for_trend(self, measure: Measure) -> Measure:
        """``measure`` (built from every SD rate's R²) unjudged unless every rate passes."""
        failed = [sd for sd, a in self.by_sd.items() if not a.differs()]
        if not self.overall.differs():
            return withheld(measure, _because(self._cells, self.overall))
        if failed or not self.by_sd:
            rates = ", ".join(f"{sd:g}" for sd in failed) or "every rate"
            return withheld(measure, f"the grid cannot test it: the weight decays "
                                     f"at SD {rates} do not move accuracy by more than seeds do "
                                     "(see the between/within table)")
        return measure


def check_cells(table: pd.DataFrame, column: str = "test_accuracy", *,
                scope: str = "all cells") -> CellCheck:
    """One-way ANOVAs of ``column`` over the grid's cells, and over each SD rate's WD cells.

    Args:
        table: one row per ViT with ``cell``, ``drop_path`` and ``column``
            (`llmdyn.vision.coupling.GridCoupling.table`; `FitCheck.fitted` of it for the gate).
        column: the outcome.
        scope: which cells these are, for the table and the reasons (e.g. "fitted cells").
    """
    _require(table, ["cell", "drop_path", column])
    by_sd = {float(sd): one_way_anova(rows[column], rows.cell)
             for sd, rows in table.groupby("drop_path") if rows.cell.nunique() >= 2}
    return CellCheck(one_way_anova(table[column], table.cell), by_sd, scope)


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


def slope_measure(table: pd.DataFrame, column: str, quantity: str, *,
                  weight_decay_offsets: bool = False, fmt: str = ".3f") -> Measure:
    """OLS slope of ``column`` on the SD rate with its t interval (Figs 6b, 10).

    Fits ``y_i = a + b · sd_i (+ c_w for the ViT's weight decay w) + e_i`` over the ViTs of
    ``table`` by OLS (statsmodels) and reports b with b ± t_{0.975, n − p} · se(b). The seeds of
    a cell are independent replicates, so the residuals estimate the seed noise with n − p
    degrees of freedom; the within-cell bootstrap would understate it by about √2 with 2 seeds.

    Args:
        table: one row per ViT with ``drop_path``, ``weight_decay`` and ``column``.
        column: the outcome (a coupling column of `COUPLING_COLUMNS`).
        quantity: the measure's noun phrase.
        weight_decay_offsets: one intercept per weight decay (a pooled slope over weight decays
            that does not mistake a WD's level for an SD effect).
        fmt: format of the numbers.
    """
    import statsmodels.api as sm  # heavy; only the slope rows need it

    _require(table, ["drop_path", "weight_decay", column])
    offsets = (pd.get_dummies(table.weight_decay, prefix="wd", drop_first=True, dtype=float)
               if weight_decay_offsets else pd.DataFrame(index=table.index))
    design = pd.concat([pd.Series(1.0, table.index, name="const"),
                        table.drop_path.astype(float), offsets], axis=1)  # [vit, p]
    if table.drop_path.nunique() < 2 or len(table) <= design.shape[1]:
        return Measure(quantity, None, fmt=fmt, missing="not run",
                       reason=f"{len(table)} ViTs over {table.drop_path.nunique()} SD rate(s) "
                              "leave no slope with an interval")
    fit = sm.OLS(table[column].to_numpy(float), design.to_numpy(float)).fit()
    lo, hi = fit.conf_int(1 - LEVEL)[1]
    # through the coverage table, like every other judged interval
    return Measure.from_interval(float(fit.params[1]), float(lo), float(hi), len(table),
                                 quantity, kind="slope", method="ols_t", fmt=fmt,
                                 sampling_unit="ViT",
                                 detail=f"OLS t interval, {fit.df_resid:.0f} residual df, "
                                        f"p = {fit.pvalues[1]:.2g}")


def slopes_by_wd(table: pd.DataFrame, column: str = "strength") -> dict[float, Measure]:
    """`slope_measure` of ``column`` on the SD rate among the ViTs of each weight decay."""
    return {float(wd): slope_measure(rows, column, f"slope of coupling on SD rate at WD {wd:g}")
            for wd, rows in table.groupby("weight_decay")}


def slope_table(slopes: dict[float, Measure], not_fitted: list[float] = ()) -> str:
    """Markdown: each weight decay's slope with its 95 % t interval, p and ViTs."""
    rows = []
    for wd, m in slopes.items():
        e, note = m.estimate, " (not fitted)" if wd in not_fitted else ""
        if e is None:
            cells = ("n/a", m.reason, "", "")
        else:
            cells = (m.number(e.value), f"[{m.number(e.lo)}, {m.number(e.hi)}]",
                     m.detail.rsplit("p = ", 1)[-1], e.n)
        rows.append(dict(zip(("weight decay", "slope of coupling on SD rate", "95 % t interval",
                              "p", "ViTs"), (f"{wd:g}{note}", *cells), strict=True)))
    return markdown_table(rows)


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

    Each ViT is one independent draw (its own initial weights, SD masks and image order), so
    the measure's sampling unit is the ViT: n counts ViTs, never test images.
    """
    _require(table, ["cell", *columns])
    if table.empty:
        return Measure(quantity, None, missing="not run", reason="no ViTs in this part of the grid",
                       **kw)
    est = bootstrap_within_cells(statistic, *[table[c].to_numpy(float) for c in columns],
                                 cells=table.cell.to_numpy(), seed=seed)
    return Measure(quantity, est, sampling_unit="ViT", **kw)


def withheld(measure: Measure, reason: str) -> Measure:
    """``measure`` with its estimate and interval kept but graded "no verdict" (``reason``)."""
    return replace(measure, missing="no verdict", reason=reason)


def _because(scope: str, gate: OneWayAnova) -> str:
    return (f"the grid cannot test it: {scope} do not differ in test accuracy by "
            f"more than seeds do ({gate.summary()})")


def _require(table: pd.DataFrame, columns: list[str]) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise LlmdynError(f"the grid table lacks columns {missing}; it has {list(table.columns)} "
                          "(from llmdyn.vision.coupling.measure_grid)")
