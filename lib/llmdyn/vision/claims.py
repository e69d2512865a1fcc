"""Chapter 10's claims (paper A §3.4, Figs 6 and 10), built from a measured ViT grid.

Every R² claim is computed over the ViTs of the fitted weight decays (`analysis.FitCheck`) and
gated by the between/within-cell check of those cells (`analysis.CellCheck`): a fit among ViTs
whose cells do not differ in accuracy more than seeds do is shown without a verdict. The slopes
of coupling on the SD rate use every ViT, each with its OLS t interval: pooled over weight
decays (one intercept per weight decay), and at each weight decay (Fig 10's "at every weight
decay"; Fig 6b's is the row at the fixed weight decay).

Paper A trains its ViTs on CIFAR-10. On any other data set (Fashion-MNIST, the default here,
or scikit-learn's digits) every claim is a verdict on a stand-in (`stand_in_for`), and says so.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from llmdyn.claims.claim import Claim, above, at_least, slug
from llmdyn.stats.power import linear_draw, rule_power
from llmdyn.stats.replicates import bootstrap_within_cells
from llmdyn.vision import analysis as va

PAPER_R2 = {0.0: 0.35, 0.05: 0.48, 0.1: 0.74, 0.3: 0.83}  # paper A Fig 6a, by SD rate
MIN_R2 = 0.3  # the paper's lowest R² is 0.35: "accuracy tracks coupling" needs at least this
POWER_DRAWS = 200  # simulated grids per power figure: Monte Carlo error of a share <= 0.035


def r2_power(rows: pd.DataFrame, column: str, paper_r2: float, *, seed: int,
             n_draws: int = POWER_DRAWS) -> str:
    """The power of the R² row's own rule at this SD rate's ViTs, by simulation.

    Accuracy is drawn as y = √R² · z + √(1 − R²) · ε on the rate's measured couplings (z, the
    couplings standardised; ε ~ N(0, 1) per ViT; `llmdyn.stats.power.linear_draw`), and each draw
    is judged as the row is: the within-cell bootstrap interval of the signed R² against
    ``MIN_R2``. Reported: P(holds) and P(does not hold) at the paper's R², P(holds) at R² = 0.
    """
    x, cells, rule = rows[column].to_numpy(float), rows.cell.to_numpy(), at_least(MIN_R2)

    def judge(xs: np.ndarray, ys: np.ndarray, s: int) -> str:
        return rule.judge(bootstrap_within_cells(va.signed_r2, xs, ys, cells=cells, seed=s))[0]

    effect = rule_power(judge, linear_draw(x, paper_r2), n_draws=n_draws, seed=seed)
    null = rule_power(judge, linear_draw(x, 0.0), n_draws=n_draws, seed=seed + n_draws)
    return (f"power of this rule at n = {len(x)} ViTs ({n_draws} simulated grids, seed {seed}): "
            f"P(holds) {effect.share('holds'):.2f}, P(does not hold) "
            f"{effect.share('does not hold'):.2f} if R² were the paper's {paper_r2:g}; "
            f"P(holds) {null.share('holds'):.2f} with no effect")


def stand_in_for(dataset: str) -> str:
    """What stands in for paper A's CIFAR-10, from the data set's name ("" for CIFAR-10)."""
    return "" if dataset == "CIFAR-10" else f"{dataset} in place of CIFAR-10"


def grid_claims(table: pd.DataFrame, fitted: va.FitCheck, check: va.CellCheck, end: str,
                *, fits: dict, fixed_weight_decay: float, n_images: int, seed: int,
                dataset: str, power_draws: int = POWER_DRAWS) -> list[Claim]:
    """The chapter's claims with the trajectory ending at ``end`` ("final_norm"/"block_output").

    Args:
        table: one row per ViT (``llmdyn.vision.coupling.measure_grid(...).table``).
        fitted: which weight decays fit their training images; the R² rows use only those.
        check: the between/within-cell check of test accuracy over the fitted cells.
        end: which coupling column of ``analysis.COUPLING_COLUMNS`` to use.
        fits: ``{SD rate: LinearFit | None}`` (``coupling.fits_by_sd``), shown as detail.
        fixed_weight_decay: the WD of Fig 6b.
        n_images: held-out images per ViT (for the detail text).
        seed: seed of the bootstrap draws.
        dataset: the images' data set, as `llmdyn.vision.images.ImageData.name` gives it
            ("Fashion-MNIST", "CIFAR-10", …); any but CIFAR-10 marks every claim a stand-in.
        power_draws: simulated grids for the power of each R² row that is judged (rows
            withheld by the check carry no power: they have no verdict to power).
    """
    cols = [va.COUPLING_COLUMNS[end], "test_accuracy"]
    claims = (_r2_claims(fitted.fitted(table), check, cols, fits if end == "final_norm" else {},
                         seed, power_draws)
              + _slope_claims(table, cols[0], fixed_weight_decay, n_images))
    return [replace(c, stand_in=stand_in_for(dataset)) for c in claims]


def _r2_claims(table, check, cols, fits, seed, power_draws) -> list[Claim]:
    """One "accuracy tracks coupling" claim per SD rate, then the trend of R² over SD."""
    out = []
    for i, (sd, rows) in enumerate(table.groupby("drop_path")):
        fit = fits.get(float(sd))
        m = va.over_vits(va.signed_r2, rows, cols, "R² × sign of slope, accuracy on coupling "
                         f"at SD {sd:g}", seed=seed, fmt=".2f", detail=fit.summary() if fit else "")
        gated = check.for_sd(m, float(sd))
        if gated is m and float(sd) in PAPER_R2:  # judged: say how often its rule could pass
            power = r2_power(rows, cols[0], PAPER_R2[float(sd)], seed=seed, n_draws=power_draws)
            gated = replace(m, detail="; ".join(filter(None, [m.detail, power])))
        out.append(Claim(f"vit_r2_sd{i}", "A", "§3.4, Fig 6a",
                         f"Accuracy tracks coupling at SD {sd:g}",
                         f"R² = {PAPER_R2.get(sd, 'n/a')}", gated, at_least(MIN_R2)))
    r2s = va.r2_by_sd(table.drop_path, table[cols[0]], table.test_accuracy)
    trend = va.over_vits(va.r2_trend, table, ["drop_path", *cols],
                         "slope of the signed R² on the SD rate", seed=seed, fmt=".2f",
                         detail=", ".join(f"SD {s:g}: {r:.2f}" for s, r in r2s.items()))
    out.append(Claim("vit_r2_trend", "A", "§3.4, Fig 6a", "The fit tightens as SD rises",
                     "R² 0.35 → 0.83 from SD 0 to 0.3", check.for_trend(trend), above(0)))
    return out


def _slope_claims(table, col, fixed_weight_decay, n_images) -> list[Claim]:
    """Coupling rises with the SD rate: pooled over weight decays, then at each weight decay."""
    pooled = va.slope_measure(table, col, "slope of coupling on SD rate (all ViTs, one "
                              "intercept per weight decay)", weight_decay_offsets=True)
    pooled = replace(pooled, detail=f"{len(table)} ViTs, {n_images} test images; "
                                    f"{pooled.detail}")
    # "at every weight decay" is one claim per weight decay (the rows below); the pooled slope
    # tests only the average rise, and says so
    out = [Claim("vit_sd_all", "A", "§3.4, Fig 10", "Coupling rises with the SD rate on "
                 "average over weight decays", "an increase (the paper: at every weight decay, "
                 "judged by the rows per weight decay)", pooled, above(0))]
    for wd, m in va.slopes_by_wd(table, col).items():
        fixed = bool(np.isclose(wd, fixed_weight_decay))
        out.append(Claim("vit_sd_fixed" if fixed else f"vit_sd_wd{slug(f'{wd:g}')}", "A",
                         "§3.4, Fig 6b" if fixed else "§3.4, Fig 10",
                         f"Coupling rises with SD at WD {wd:g}",
                         "increase at WD 0.04" if fixed else "increase at every weight decay",
                         m, above(0)))
    return out
