"""Chapter 09 at its true scale: reference losses, where the models sit, power, the cost of more.

A population of small models tests paper A's §5.4 only as far as its models have learned
something. This module places them between two count models fitted on the same training tokens
(`llmdyn.training.baselines`), gives the power of each verdict's own rule at the population's n
(`llmdyn.stats.power.rule_power`), and estimates from measured run times what a population
whose models clearly beat the bigram reference would cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from llmdyn import LlmdynError
from llmdyn.claims import Measure, Rule
from llmdyn.core.tables import markdown_grid, markdown_table
from llmdyn.stats.power import RulePower, linear_draw, rule_power
from llmdyn.stats.regression import partial_regression
from llmdyn.training.baselines import reference_losses
from llmdyn.training.suite import Suite, prepare_data

REFERENCE_SETS = {"heldout_loss": "heldout", "ood_loss": "ood"}  # loss column -> eval stream
MARGIN = 0.1  # nats: "clearly beats the bigram" means at least this far below it (~10 % perplexity)


def population_references(suite: Suite, root: str | Path | None = None,
                          corpus_dir: str | Path | None = None) -> dict[str, dict[str, float]]:
    """Unigram and bigram reference losses of the suite's held-out and OOD tokens.

    Both count models are fitted on the suite's training split with its tokenizer (byte-level
    BPE, ``suite.vocab_size`` tokens) and scored on the whole held-out split and the whole OOD
    corpus. Returns loss column → ``{"unigram": nats/token, "bigram": nats/token}``;
    ``corpus_dir`` replaces the suite's corpus as in `prepare_data`.
    """
    data = prepare_data(suite, root, corpus_dir)
    streams = {"heldout": data.heldout, "ood": data.ood}
    return {column: reference_losses(data.train, streams[name], suite.vocab_size)
            for column, name in REFERENCE_SETS.items() if streams[name] is not None}


def position_counts(losses, reference: Mapping[str, float]) -> dict[str, int]:
    """How many models lie below the bigram, between the two, and above the unigram reference."""
    losses = np.asarray(losses, float)
    below = int(np.sum(losses < reference["bigram"]))
    above = int(np.sum(losses > reference["unigram"]))
    return {"below bigram": below, "between": losses.size - below - above,
            "above unigram": above}


LEVELS = {"above unigram": "have not yet learned even the token frequencies",
          "between": "have learned the token frequencies but less than what the previous token "
                     "tells",
          "below bigram": "use more than the previous token"}


def level_sentence(counts: Mapping[str, Mapping[str, int]], labels: Mapping[str, str]) -> str:
    """Where most models sit, per loss: e.g. "by the held-out loss, 20 of 27 have learned ..."."""
    parts = []
    for column, c in counts.items():
        most = max(c, key=c.get)
        parts.append(f"by the {labels[column]}, {c[most]} of {sum(c.values())} models "
                     f"{LEVELS[most]}")
    return "; ".join(parts)


def position_markdown(frame: pd.DataFrame, references: Mapping[str, Mapping[str, float]],
                      labels: Mapping[str, str]) -> str:
    """One row per loss: the two references, the models' range, and where the models sit."""
    rows = []
    for column, ref in references.items():
        counts = position_counts(frame[column], ref)
        rows.append({"loss": labels[column], "unigram": f"{ref['unigram']:.2f}",
                     "bigram": f"{ref['bigram']:.2f}",
                     "models: best – worst": f"{frame[column].min():.2f} – "
                                             f"{frame[column].max():.2f}",
                     **{level: counts[level] for level in ("below bigram", "between",
                                                           "above unigram")}})
    return markdown_table(rows)


def stand_in_note(counts: Mapping[str, int], what: str = "OOD loss") -> str:
    """The note a stand-in's verdict carries: what was measured and at what level.

    ``counts`` is `position_counts` of that loss, e.g. "stand-in: OOD loss of 27 models trained
    here, between unigram and bigram level".
    """
    n = sum(counts.values())
    where = {"between": "between unigram and bigram level", "below bigram": "below bigram level",
             "above unigram": "above unigram level"}
    parts = [where[k] if c == n else f"{c} {where[k]}" for k, c in counts.items() if c]
    return f"stand-in: {what} of {n} models trained here, {', '.join(parts)}"


@dataclass(frozen=True)
class VerdictPower:
    """The power of one verdict's rule at the population's n.

    Attributes:
        effect: grades over populations simulated with the paper's effect (R² = ``paper_r2``).
        null: grades over populations simulated with no effect (R² = 0).
        paper_r2: the effect size assumed true.
        n: models per simulated population (the real design's coupling values).
    """

    effect: RulePower
    null: RulePower
    paper_r2: float
    n: int

    def sentence(self) -> str:
        """The three figures, and how they were computed."""
        e, z = self.effect, self.null
        return (f"power of this rule in a population of n = {self.n}: P(holds) = "
                f"{e.share('holds'):.2f} and P(does not hold) = {e.share('does not hold'):.2f} "
                f"if the paper's R² = {self.paper_r2:g} were true; P(holds) = "
                f"{z.share('holds'):.2f} with no effect ({e.n_draws} simulated populations "
                f"each, seed {e.seed}; Monte Carlo 95 % margin ≤ ±{self.margin():.2f})")

    def margin(self) -> float:
        """The largest Monte Carlo margin of the three figures."""
        return max(self.effect.margin("holds"), self.effect.margin("does not hold"),
                   self.null.margin("holds"))


def verdict_power(x, y, measure: Callable[..., Measure], rule: Rule, *, paper_r2: float,
                  sign: float, n_draws: int, seed: int) -> VerdictPower:
    """Simulate the rule's grades with and without the paper's effect on the design ``x``.

    Args:
        x: ``[model]`` the predictor as measured (the design is kept fixed).
        y: ``[model]`` the measured response; only its spread is used (the simulated y's scale).
        measure: the chapter's measure, ``(x, y, quantity, seed=) -> Measure`` (e.g.
            ``Measure.r2``), so that the simulation judges exactly as the verdict does.
        rule: the verdict's rule.
        paper_r2: the effect assumed true: y = sign·√R²·z(x) + noise (`linear_draw`).
        sign: the slope's sign under the paper's effect (−1: loss falls as coupling rises).
        n_draws: simulated populations per scenario.
        seed: seed of the simulation (the same noise in both scenarios).
    """
    def judge(xs: np.ndarray, ys: np.ndarray, s: int) -> str:
        return rule.judge(measure(xs, ys, "simulated", seed=s).estimate)[0]

    scale = float(np.std(np.asarray(y, float)))
    effect = rule_power(judge, linear_draw(x, paper_r2, sign=sign, scale=scale),
                        n_draws=n_draws, seed=seed)
    null = rule_power(judge, linear_draw(x, 0.0, scale=scale), n_draws=n_draws, seed=seed)
    return VerdictPower(effect, null, paper_r2, int(np.size(x)))


@dataclass(frozen=True)
class BigramCost:
    """What a population whose every model beats the bigram by ``MARGIN`` would cost.

    Attributes:
        target: held-out loss to reach (the bigram reference − ``MARGIN``), nats/token.
        per_doubling: fitted change of held-out loss per doubling of tokens (full-data runs).
        factor: how many times more tokens every run needs (set by the slowest size); NaN when
            the fit does not fall with tokens.
        measured_hours: CPU wall hours the population took (the runs' ``run.json``).
        hours: ``factor`` × ``measured_hours`` (the time per token held fixed).
        tokens: tokens the largest budget would then be.
        reason: why there is no estimate (too few full-data runs, a loss that does not fall).
    """

    target: float
    per_doubling: float
    factor: float
    measured_hours: float
    hours: float
    tokens: float
    reason: str = ""


def hours_text(hours: float) -> str:
    """A duration in words at the unit that reads: "about 3 hours", "about 40 minutes".

    Rounding to whole hours would print a population that trains in minutes as "about 0 hours".
    """
    if not math.isfinite(hours) or hours < 0:
        raise LlmdynError(f"hours_text: a duration is a finite number of hours >= 0, got {hours}")
    if hours >= 1.5:
        return f"about {hours:,.0f} hours"
    minutes = hours * 60
    return f"about {minutes:.0f} minutes" if minutes >= 1.5 else "under two minutes"


def bigram_cost(frame: pd.DataFrame, wall_s: Mapping[str, float], bigram: float,
                margin: float = MARGIN) -> BigramCost:
    """Extrapolate the full-data runs' held-out loss in log tokens to the bigram − ``margin``.

    Fit held-out loss ~ 1 + log₂ tokens + log₂ params over the runs trained on the whole split
    (no repetition). The size whose predicted loss at the largest budget is highest sets the
    factor f = 2^((target − prediction) / slope); the cost is f times the measured wall time of
    all runs. Loss curves flatten with tokens, so the straight line in log tokens is optimistic:
    the factor is a lower bound.
    """
    missing = set(frame.run) - set(wall_s)
    if missing:
        raise LlmdynError(f"no measured wall time for runs {sorted(missing)}; train them first")
    target, nan = bigram - margin, math.nan
    measured = float(sum(wall_s[r] for r in frame.run)) / 3600
    full = frame[frame.data_fraction == 1.0]  # the whole training split: no repetition
    if len(full) < 4:
        return BigramCost(target, nan, nan, measured, nan, nan,
                          f"{len(full)} run(s) trained on the whole split; the fit needs 4")
    design = np.column_stack([np.ones(len(full)), np.log2(full.tokens),
                              np.log2(full.params)])  # [run, 3]
    intercept, slope, per_param = np.linalg.lstsq(design, full.heldout_loss.to_numpy(float),
                                                  rcond=None)[0]
    # the size predicted worst at the largest budget sets the factor every run needs
    hardest = math.log2(frame.params.min() if per_param < 0 else frame.params.max())
    worst = intercept + slope * math.log2(frame.tokens.max()) + per_param * hardest
    if slope >= 0:
        return BigramCost(target, float(slope), nan, measured, nan, nan,
                          "the held-out loss does not fall with tokens in the full-data runs")
    factor = max(1.0, 2 ** ((target - worst) / slope))
    return BigramCost(target, float(slope), factor, measured, factor * measured,
                      factor * float(frame.tokens.max()))


def coefficient_rows(frame: pd.DataFrame, measures: Mapping[str, str],
                     sets: Mapping[str, Sequence[str]], coefficient: Callable,
                     name: str = "diagonal_share") -> str:
    """Markdown: ``name``'s coefficient (95 % interval, p) for each measure and predictor set.

    ``coefficient(frame, y, predictors, name) -> Estimate`` is the bootstrapped coefficient
    (`llmdyn.generalization.population.partial_coefficient`).
    """
    rows = []
    for y, label in measures.items():
        cells = []
        for predictors in sets.values():
            if len(frame) < len(predictors) + 5:  # residual degrees of freedom below 3
                cells.append(f"— ({len(frame)} models, too few for {len(predictors) + 2} "
                             "coefficients)")
                continue
            fit = partial_regression(frame[y], {n: frame[n] for n in [name, *predictors]})
            ci = coefficient(frame, y, [name, *predictors], name)
            cells.append(f"{fit.of(name)[0]:.3g} [{ci.lo:.3g}, {ci.hi:.3g}] "
                         f"(p {fit.of(name)[1]:.2g}, R² {fit.r2:.2f})")
        rows.append([label, *cells])
    return markdown_grid(["measure", *sets], rows)  # a grid: a set may be called "measure"


__all__ = ["REFERENCE_SETS", "MARGIN", "LEVELS", "level_sentence", "population_references",
           "position_counts", "stand_in_note",
           "position_markdown", "VerdictPower", "verdict_power", "BigramCost", "bigram_cost",
           "coefficient_rows"]
