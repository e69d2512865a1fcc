"""Chapter 10's judgement of a grid: cells against seeds, gated R² verdicts, intervals over ViTs."""

import numpy as np
import pandas as pd
import pytest

from llmdyn import LlmdynError
from llmdyn.claims import Claim, Measure, above, at_least
from llmdyn.vision import analysis as va


def _grid(effect_sd: float, slope_by_sd: dict[float, float], seeds: int = 3, seed: int = 0):
    """A synthetic grid: 4 SD rates × 4 weight decays × ``seeds``.

    Coupling is set by the weight decay (cells 0.1 apart) plus seed noise 0.01; accuracy is
    ``slope_by_sd[sd] · coupling`` plus cell effects of sd ``effect_sd`` and seed noise 0.002.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for sd, slope in slope_by_sd.items():
        for j, wd in enumerate((0.1, 0.5, 1.0, 5.0)):
            cell_effect = rng.normal(0, effect_sd)
            for s in range(seeds):
                c = 0.1 * j + rng.normal(0, 0.01)
                rows.append({"cell": f"sd{sd:g}-wd{wd:g}", "drop_path": sd, "weight_decay": wd,
                             "seed": s, "strength": c,
                             "test_accuracy": 0.7 + slope * c + cell_effect
                             + rng.normal(0, 0.002)})
    return pd.DataFrame(rows)


SLOPES = {0.0: 0.0, 0.05: 0.1, 0.1: 0.2, 0.3: 0.4}  # accuracy follows coupling more with SD


def test_cells_that_differ_pass_and_identical_cells_do_not():
    differ = va.check_cells(_grid(0.02, SLOPES))
    assert differ.overall.differs() and all(a.differs() for a in differ.by_sd.values())
    same = va.check_cells(_grid(0.0, dict.fromkeys(SLOPES, 0.0)))  # only seed noise
    assert not same.overall.differs()
    assert list(same.by_sd) == list(SLOPES)
    table = differ.table()
    assert same.overall.f < 1  # θ̂ < 0 is shown as 0, never as a negative ratio
    assert same.table().iloc[0]["cells/seeds variance ratio [95 %]"].startswith("0 [0, 0.22]")
    assert list(table.index) == ["all cells"] + [f"SD {sd:g} (its weight decays)" for sd in SLOPES]
    assert table.loc["all cells", "cells"] == 16 and table.loc["all cells", "df"] == "(15, 32)"


def test_gates_withhold_verdicts_but_keep_the_numbers():
    check = va.check_cells(_grid(0.0, dict.fromkeys(SLOPES, 0.0)))
    m = Measure.single(0.9, "R²")
    held = check.for_sd(m, 0.3)
    claim = Claim("x", "A", "§3.4", "s", "p", held, at_least(0.3))
    assert claim.verdict.grade == "no verdict" and "cannot test it" in claim.verdict.reason
    assert "F(15, 32)" in claim.verdict.reason and held.estimate == m.estimate
    assert check.for_trend(m).missing == "no verdict"
    passing = va.check_cells(_grid(0.02, SLOPES))
    assert passing.for_sd(m, 0.3) is m and passing.for_trend(m) is m


def test_rate_that_fails_alone_withholds_its_r2_and_the_trend():
    table = _grid(0.02, SLOPES)
    at_zero = table.drop_path == 0.0
    cell_means = table[at_zero].groupby("cell").test_accuracy.transform("mean")
    table.loc[at_zero, "test_accuracy"] -= cell_means - 0.7  # SD 0's cells made identical
    check = va.check_cells(table)
    assert check.overall.differs() and not check.by_sd[0.0].differs()
    m = Measure.single(0.5, "R²")
    assert check.for_sd(m, 0.0).missing == "no verdict" and check.for_sd(m, 0.3) is m
    assert "SD 0 do not move" in check.for_trend(m).reason


def test_r2_by_sd_and_its_trend_known_answer():
    """Accuracy exactly linear in coupling at SD 0.3 and exactly flat at SD 0: signed R² 1 and
    0 there, and with rates 0, 0.3 only, the trend slope is (1 − 0) / 0.3."""
    c = np.array([0.1, 0.2, 0.3, 0.1, 0.2, 0.3])
    sd = np.array([0.0, 0.0, 0.0, 0.3, 0.3, 0.3])
    acc = np.array([0.5, 0.6, 0.5, 0.1, 0.2, 0.3])
    r2 = va.r2_by_sd(sd, c, acc)
    assert r2[0.3] == pytest.approx(1.0) and r2[0.0] == pytest.approx(0.0)
    assert va.r2_trend(sd, c, acc) == pytest.approx(1 / 0.3)
    assert va.signed_r2(c[:3], -c[:3]) == pytest.approx(-1.0)


def test_slope_t_interval_known_answer():
    """y = 1 + 2·sd + e with e = ±0.1 alternating over 2 seeds at 4 rates: slope 2 exactly
    (the noise is orthogonal to sd), residual variance 8·0.01/6, se = sqrt(that / Sxx)."""
    sd = np.repeat([0.0, 0.05, 0.1, 0.3], 2)
    e = np.tile([0.1, -0.1], 4)
    table = pd.DataFrame({"drop_path": sd, "weight_decay": 1.0, "strength": 1 + 2 * sd + e})
    m = va.slope_measure(table, "strength", "slope")
    se = np.sqrt(8 * 0.01 / 6 / ((sd - sd.mean()) ** 2).sum())
    half = 2.4469118511449692 * se  # t_{0.975, 6}
    assert m.estimate.value == pytest.approx(2.0)
    assert (m.estimate.lo, m.estimate.hi) == pytest.approx((2 - half, 2 + half))
    assert "6 residual df" in m.detail and m.estimate.n == 8 and m.sampling_unit == "ViT"
    # Pooled over two weight decays whose levels differ by 5: the offsets absorb the level.
    other = table.assign(weight_decay=5.0, strength=table.strength + 5)
    pooled = va.slope_measure(pd.concat([table, other]), "strength", "pooled",
                              weight_decay_offsets=True)
    assert pooled.estimate.value == pytest.approx(2.0) and "13 residual df" in pooled.detail
    by_wd = va.slopes_by_wd(pd.concat([table, other]))
    assert list(by_wd) == [1.0, 5.0] and by_wd[5.0].estimate.value == pytest.approx(2.0)
    assert "| 5 (not fitted) | 2.000 |" in va.slope_table(by_wd, [5.0])
    one_rate = va.slope_measure(table[table.drop_path == 0.0], "strength", "s")
    assert one_rate.missing == "not run"


def test_fit_check_leaves_out_a_weight_decay_that_does_not_fit():
    """Medians 0.3, 0.4, 0.5 and 1.85 (grid median 0.45): 1.85 > 2 × 0.45, so WD 5 is out."""
    table = pd.DataFrame({"weight_decay": np.repeat([0.1, 0.5, 1.0, 5.0], 2),
                          "train_loss": [0.3, 0.3, 0.4, 0.4, 0.5, 0.5, 1.8, 1.9]})
    fit = va.fit_check(table)
    assert fit.grid_median == pytest.approx(0.45) and fit.not_fitted == [5.0]
    assert list(fit.fitted(table).weight_decay.unique()) == [0.1, 0.5, 1.0]
    assert "WD 5 (a weight decay is not fitted" in fit.sentence()
    assert "2 × 0.45 = 0.90" in fit.sentence() and "WD 5: 1.85" in fit.sentence()
    assert va.fit_check(table[table.weight_decay < 5]).not_fitted == []
    with pytest.raises(LlmdynError, match="factor > 1"):
        va.fit_check(table, factor=1.0)


def test_trend_interval_over_vits_clears_zero_when_fits_tighten():
    """Slopes 0 → 0.4 with tiny seed noise: the signed R² climbs from ≈ 0 to ≈ 1, and redrawing
    seeds within cells leaves the trend's interval above 0."""
    table = _grid(0.0, SLOPES, seed=1)
    m = va.over_vits(va.r2_trend, table, ["drop_path", "strength", "test_accuracy"], "trend")
    assert m.estimate.lo > 0 and m.estimate.n == len(table) and m.sampling_unit == "ViT"
    assert Claim("t", "A", "§3.4", "s", "p", m, above(0)).verdict.grade == "holds"
    flat = va.over_vits(va.r2_trend, _grid(0.0, dict.fromkeys(SLOPES, 0.0), seed=1),
                        ["drop_path", "strength", "test_accuracy"], "trend")
    assert flat.estimate.lo < 0 < flat.estimate.hi  # nothing to find: the interval covers 0


def test_seed_spread_table():
    table = pd.DataFrame({"cell": ["a", "a", "b", "b"], "drop_path": [0.0, 0.0, 0.3, 0.3],
                          "weight_decay": [1.0, 1.0, 1.0, 1.0],
                          "test_accuracy": [0.70, 0.74, 0.80, 0.80]})
    out = va.seed_spread(table)
    assert out.loc[0.0, 1.0] == "0.720 ± 0.020" and out.loc[0.3, 1.0] == "0.800 ± 0.000"


def test_missing_columns_are_named():
    with pytest.raises(LlmdynError, match=r"lacks columns \['cell'\]"):
        va.check_cells(pd.DataFrame({"drop_path": [0.0], "test_accuracy": [0.5]}))


def test_judged_r2_rows_state_their_rules_power_and_withheld_rows_do_not():
    """A grid whose cells differ is judged, and each judged R² row says how often its own rule
    would pass if the paper's R² were true and with no effect (few draws here: a smoke check)."""
    from llmdyn.vision.claims import grid_claims

    # cell effects of sd 0.04: an R² of 0.98 whose interval is wider than its printed digit
    table = _grid(0.04, {0.0: 0.0, 0.3: 0.4}).assign(train_loss=0.4)
    kw = dict(fits={}, fixed_weight_decay=1.0, n_images=3, seed=0, power_draws=10,
              dataset="Fashion-MNIST")
    claims = {c.id: c for c in grid_claims(table, va.fit_check(table), va.check_cells(table),
                                           "final_norm", **kw)}
    r2 = claims["vit_r2_sd1"]
    assert r2.verdict.grade in ("holds", "inconclusive", "does not hold")
    assert "power of this rule at n = 12 ViTs (10 simulated grids, seed 0)" in r2.measure.detail
    assert "if R² were the paper's 0.83" in r2.measure.detail
    assert {"vit_sd_all", "vit_sd_fixed", "vit_sd_wd0_1", "vit_sd_wd5"} <= set(claims)
    # every row counts ViTs, each one number (its coupling averaged over the test images)
    assert {c.measure.sampling_unit for c in claims.values()} == {"ViT"}
    assert "(n = 12 ViTs," in r2.result_text()
    assert "3 test images" in claims["vit_sd_all"].measure.detail
    same = _grid(0.0, {0.0: 0.0, 0.3: 0.0}).assign(train_loss=0.4)
    held = grid_claims(same, va.fit_check(same), va.check_cells(same), "final_norm", **kw)[0]
    assert held.verdict.grade == "no verdict" and "power" not in held.measure.detail
    assert held.measure.sampling_unit == "ViT"  # a withheld row keeps its unit
    # paper A's ViTs learn CIFAR-10: on any other data set each row is a verdict on a stand-in
    assert {c.stand_in for c in claims.values()} == {"Fashion-MNIST in place of CIFAR-10"}
    kw["dataset"] = "CIFAR-10"
    assert {c.stand_in for c in grid_claims(table, va.fit_check(table), va.check_cells(table),
                                            "final_norm", **kw)} == {""}
