"""Chapter 09's population: independent final models, their coupling and generalization (§5.4).

Paper A's Fig 1a has one point per pretrained LLM. Our offline stand-in is a suite of
independently initialised runs (`llmdyn.training.suite.population_runs`), one point per run: its
final checkpoint. Each point carries its predictors (coupling, parameters, depth, width, tokens)
and three generalization measures: held-out loss (in distribution), the gap held-out − train,
and the loss on an out-of-distribution corpus. Inference is over models, the independent unit,
with the interval that the coverage table (`llmdyn.stats.coverage`) allows at their number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmdyn import LlmdynError
from llmdyn.claims.measure import Measure
from llmdyn.core.store import ResultStore
from llmdyn.core.tables import markdown_grid, markdown_table
from llmdyn.coupling.depth import DepthCoupling, depth_coupling
from llmdyn.coupling.scores import mean_diagonal_share, offdiagonal_mean
from llmdyn.models.loading import load_model
from llmdyn.models.quiet import quiet_transformers
from llmdyn.stats import bootstrap, coverage, intervals
from llmdyn.stats.bootstrap import Estimate
from llmdyn.stats.regression import partial_regression
from llmdyn.training.checkpoints import Checkpoint, by_run

MEASURES = {"ood_loss": "OOD loss (Moby-Dick)", "heldout_loss": "held-out loss",
            "gap": "gap (held-out − train)"}
SIZE_AND_SHAPE = ("log params", "depth", "width", "log tokens")  # Fig 35's rivals, and tokens
# The rest of the design: data budget (log of the fraction of the training split) and the two
# regularisers. Log epochs = log tokens − log data − log(train tokens): collinear with the two,
# so it never enters a regression beside them.
BUDGET_AND_REGULARISATION = ("log data", "weight decay", "dropout")


def coupling_scores(couplings: Sequence[DepthCoupling]) -> dict[str, float]:
    """Three summaries of one model's depth coupling, each averaged over prompts.

    - ``diagonal_share`` (ours): mean over l ≠ l′ of the diagonal share 1 − m̃(A^{ll′})².
    - ``miscoupling``: mean over l ≠ l′ of m̃(A^{ll′}) (paper A eq. 14; lower is more coupled).
    - ``neg_miscoupling_all_pairs`` (§5.4): −m̃(A^{ll′}) averaged over *all* l, l′ ∈
      {1, …, L}, the diagonal included. A^{ll} = U_lᵀ J_l V_l is diagonal, so m̃ = 0 there
      and ``neg_miscoupling_all_pairs`` equals −(L − 1)/L · ``miscoupling``: the diagonal
      pulls deeper models less towards 0.
    """
    if not couplings:
        raise LlmdynError("coupling_scores needs the coupling of at least one prompt")
    maps = np.stack([c.miscoupling for c in couplings])  # [prompt, layer, layer]
    return {"diagonal_share": float(np.mean([mean_diagonal_share(m) for m in maps])),
            "miscoupling": float(np.mean([offdiagonal_mean(m) for m in maps])),
            "neg_miscoupling_all_pairs": float(-maps.mean())}


def finals(checkpoints: Sequence[Checkpoint]) -> list[Checkpoint]:
    """The last checkpoint of each run; step 0 is never a model of the population."""
    out = [runs[-1] for runs in by_run(checkpoints).values()]
    if any(c.step == 0 for c in out):
        raise LlmdynError("a run's last checkpoint is step 0: an untrained model is not a "
                          "member of the population; train the runs first")
    return out


def measure_models(checkpoints: Sequence[Checkpoint], texts: Sequence[str], *,
                   ks: Sequence[int], device: str = "cpu") -> dict[str, dict[int, dict]]:
    """`coupling_scores` of each checkpoint at each k (cached per prompt): spec → k → scores."""
    out = {}
    for c in checkpoints:
        with quiet_transformers():
            model = load_model(c.spec, device=device)
        store = ResultStore(model.model_id, provenance=model.identity)
        out[c.spec] = {k: coupling_scores(depth_coupling(model, texts, k=k, store=store))
                       for k in ks if k <= model.d_model}
        del model
    return out


def population_frame(checkpoints: Sequence[Checkpoint], runs: Mapping[str, object],
                     scores: Mapping[str, Mapping[int, dict]], *, k: int,
                     train_tokens: int) -> pd.DataFrame:
    """One row per model: predictors, coupling at ``k`` (and each measured k), three measures.

    Args:
        checkpoints: the final checkpoints (`finals`).
        runs: run name → `llmdyn.training.suite.Run`.
        scores: `measure_models`'s output.
        k: the k of the main coupling columns.
        train_tokens: tokens of the full training split (for the data budget and epochs).
    """
    rows = []
    for c in checkpoints:
        run, by_k = runs[c.run], scores[c.spec]
        if k not in by_k:
            raise LlmdynError(f"{c.run}: coupling at k = {k} not measured (k above d_model?)")
        data_tokens = run.data_fraction * train_tokens
        rows.append({
            "run": c.run, "depth": run.size.n_layers, "width": run.size.d_model,
            "params": c.params, "tokens": c.tokens_seen, "steps": c.step,
            "data_fraction": run.data_fraction, "epochs": c.tokens_seen / data_tokens,
            "weight_decay": run.weight_decay, "dropout": run.dropout, "seed": run.seed,
            "diagonal_share": by_k[k]["diagonal_share"], "miscoupling": by_k[k]["miscoupling"],
            "neg_miscoupling_all_pairs": by_k[k]["neg_miscoupling_all_pairs"],
            "train_loss": c.train_loss,
            "heldout_loss": c.heldout_loss, "gap": c.heldout_loss - c.train_loss,
            "ood_loss": c.ood_loss,
            **{f"diagonal_share_k{kk}": s["diagonal_share"] for kk, s in by_k.items()}})
    frame = pd.DataFrame(rows)
    frame["log params"], frame["log tokens"] = np.log(frame.params), np.log(frame.tokens)
    frame["log data"], frame["log epochs"] = np.log(frame.data_fraction), np.log(frame.epochs)
    frame["weight decay"] = frame.weight_decay
    return frame


def single_fits(frame: pd.DataFrame, y: str, predictors: Sequence[str]) -> pd.DataFrame:
    """R², p and slope of ``y`` on each predictor alone (statsmodels OLS), one row each."""
    rows = []
    for name in predictors:
        fit = partial_regression(frame[y], {name: frame[name]})
        rows.append({"predictor": name, "n": fit.n, "r2": fit.r2, "p": float(fit.p[0]),
                     "slope": float(fit.coef[0])})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Advantage:
    """Coupling's correlation with ``y`` against each rival's, judged together (Bonferroni).

    Attributes:
        by_rival: ``{rival: (d, lo, hi)}``: d = r(y, coupling) − r(y, rival) with Zou's interval
            at the Bonferroni level ``level``, so that all of them cover together with 95 %.
        n: models.
        level: the level of each rival's interval, 1 − 0.05 / rivals.
    """

    by_rival: dict[str, tuple[float, float, float]]
    n: int
    level: float

    @property
    def smallest(self) -> tuple[float, float, float]:
        """``(min d, min lo, min hi)``: a simultaneous 95 % interval of the smallest advantage.

        When every d_j lies in its interval, min_j d_j lies in [min_j lo_j, min_j hi_j]: the
        interval lies above 0 exactly when every rival's does (coupling beats all four), and
        wholly below 0 when some rival's does.
        """
        d, lo, hi = zip(*self.by_rival.values(), strict=True)
        return min(d), min(lo), min(hi)

    def detail(self, fmt: str = ".2f") -> str:
        """Each rival's advantage with its interval."""
        return "; ".join(f"{rival}: {d:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"
                         for rival, (d, lo, hi) in self.by_rival.items())

    def measure(self, quantity: str) -> Measure:
        """The smallest advantage as a measure over models, Zou's interval (coverage table)."""
        d, lo, hi = self.smallest
        return Measure.from_interval(
            d, lo, hi, self.n, quantity, kind="correlation_difference", method="zou", fmt=".2f",
            sampling_unit="model",
            detail=f"{self.n} models; Zou's interval of each difference at the Bonferroni level "
                   f"{self.level:.2%}: {self.detail()}")


def correlation_advantage(frame: pd.DataFrame, y: str, coupling: str = "diagonal_share",
                          rivals: Sequence[str] = SIZE_AND_SHAPE, sign: float = -1.0
                          ) -> Advantage:
    """r(sign·y, coupling) − r(sign·y, rival) for each rival, Zou's interval, Bonferroni level.

    ``sign`` = −1 turns a loss into a score (higher is better), so a positive r is the paper's
    direction for coupling and the expected one for every rival (larger, deeper, wider models
    trained on more tokens generalize better). Zou's (2007) interval is for the difference of
    two correlations that share ``y`` (`llmdyn.stats.intervals.zou`).
    """
    score = sign * frame[y].to_numpy(float)
    level = intervals.bonferroni_level(len(rivals))
    by_rival = {}
    for rival in rivals:
        samples = (score, frame[coupling].to_numpy(float), frame[rival].to_numpy(float))
        d = float(bootstrap.correlation_difference(*[s[None] for s in samples])[0])
        lo, hi = coverage.interval("correlation_difference", "zou", *samples, level=level)
        by_rival[rival] = (d, float(lo), float(hi))
    return Advantage(by_rival, len(frame), level)


def partial_coefficient(frame: pd.DataFrame, y: str, predictors: Sequence[str], name: str,
                        seed: int = 0) -> Estimate:
    """Coefficient of ``name`` in y ~ 1 + predictors (statsmodels OLS) with its OLS t interval.

    The t interval (n − p − 1 degrees of freedom) is the slope method that the coverage table
    (`llmdyn.stats.coverage`, data/coverage.csv) allows at the population's n; a bootstrap of
    this coefficient over 27 models is not (the "other" kind covers only at n = 120).
    ``seed`` is kept for the callers' signature; the interval draws nothing.
    """
    import statsmodels.api as sm  # heavy; only the regression rows need it

    if name not in predictors:
        raise LlmdynError(f"{name!r} is not among the predictors {list(predictors)}")
    X = sm.add_constant(frame[list(predictors)].to_numpy(float), has_constant="add")
    fit = sm.OLS(frame[y].to_numpy(float), X).fit()
    col = 1 + list(predictors).index(name)
    lo, hi = fit.conf_int(1 - bootstrap.LEVEL)[col]
    return Estimate(float(fit.params[col]), float(lo), float(hi), len(frame), method="ols_t")


def population_markdown(frame: pd.DataFrame) -> str:
    """The population as a markdown table: each model's predictors and its three measures."""
    return markdown_table([
        {"run": r.run, "L": r.depth, "d": r.width, "params": f"{r.params:,.0f}",
         "tokens": f"{r.tokens:,.0f}", "data": f"{r.data_fraction:g}", "epochs": f"{r.epochs:.2g}",
         "wd": f"{r.weight_decay:g}", "drop": f"{r.dropout:g}", "share": f"{r.diagonal_share:.3f}",
         "§5.4": f"{r.neg_miscoupling_all_pairs:.3f}", "held-out": f"{r.heldout_loss:.3f}",
         "gap": f"{r.gap:.3f}", "OOD": f"{r.ood_loss:.3f}"}
        for _, r in frame.sort_values(["depth", "width", "steps"]).iterrows()])


def fits_markdown(frame: pd.DataFrame, predictors: Sequence[str],
                  measures: Mapping[str, str] = MEASURES) -> str:
    """R², p and slope of each measure on each predictor alone, one column group per measure."""
    fits = {y: single_fits(frame, y, predictors).set_index("predictor") for y in measures}
    header = ["predictor", *(h for label in measures.values() for h in (f"{label}: R²", "p",
                                                                        "slope"))]
    rows = [[name, *(cell for y in measures for cell in (
        f"{fits[y].r2[name]:.2f}", f"{fits[y].p[name]:.2g}", f"{fits[y].slope[name]:.3g}"))]
        for name in predictors]
    return markdown_grid(header, rows)  # a grid: "p" and "slope" head every measure's group
