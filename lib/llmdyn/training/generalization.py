"""Coupling against generalization: published model facts and a population trained here (§5.4).

Paper A correlates the mean depth coupling of 24 pretrained LLMs with their Open LLM Leaderboard
average (Fig 1a, R² = 0.75). Offline we cannot run those models, so this module serves two
populations: the published facts of the leaderboard models (scores, sizes, tokens, shapes;
no coupling), and our own suite's checkpoints, where coupling and held-out loss are both
measured here.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore
from llmdyn.coupling.depth import depth_coupling, diagonal_share, offdiagonal_mean
from llmdyn.models.loading import load_model
from llmdyn.stats.regression import LinearFit, ols
from llmdyn.sweep.join import SCORE_COLUMNS, leaderboard
from llmdyn.trace import encode
from llmdyn.training.emergence import RunSeries, measure_checkpoints
from llmdyn.training.suite import Suite

SHAPES_CSV = Path(__file__).resolve().parents[3] / "data" / "model_shapes.csv"
POPULATION_COLUMNS = ("model", "run", "size", "seed", "weight_decay", "dropout", "step",
                      "params", "tokens", "coupling_mis", "coupling_share", "heldout_loss",
                      "train_loss", "gap")


def model_facts() -> pd.DataFrame:
    """One row per leaderboard model: family, size, tokens, shape and the six scores.

    Columns: ``model, family, params_b, tokens_t, layers, d_model, <six tasks>, average``;
    ``average`` is NaN when a task is missing. Sources: ``data/README.md``.
    """
    with open(SHAPES_CSV, newline="") as f:
        shapes = {r["Model"]: r for r in csv.DictReader(f)}
    rows = []
    for model, row in leaderboard().items():
        shape = shapes.get(model, {})
        rows.append({"model": model, "family": row.family, "params_b": row.params_b,
                     "tokens_t": row.tokens_t,
                     "layers": float(shape["Layers"]) if shape.get("Layers") else math.nan,
                     "d_model": float(shape["d_model"]) if shape.get("d_model") else math.nan,
                     **row.scores, "average": row.average})
    return pd.DataFrame(rows)


def population(series: Mapping[str, RunSeries], suite: Suite,
               shares_by_k: Mapping[int, Mapping[str, np.ndarray]] | None = None
               ) -> pd.DataFrame:
    """One row per checkpoint of the suite: its run's settings, coupling and losses.

    Args:
        series: measured runs (`llmdyn.training.run_series`), K of the main measurement.
        suite: the suite the runs belong to (for size, seed and regularisation).
        shares_by_k: optional K → ``"<run>@step<N>"`` → mean diagonal share at that K (for
            some checkpoints, e.g. `final_shares`), added as ``coupling_share_k<K>`` columns
            (paper A Fig 36); NaN for the checkpoints not given.

    Returns:
        Columns `POPULATION_COLUMNS` (+ the K columns); ``gap`` is held-out − train loss.
    """
    runs = {r.name: r for r in suite.runs}
    missing = sorted(set(series) - set(runs))
    if missing:
        raise LlmdynError(f"runs {missing} are not in suite {suite.name!r}")
    rows = []
    for name, s in series.items():
        run = runs[name]
        for i, step in enumerate(s.steps):
            profile = s.profiles[i]
            row = {"model": f"{name}@step{step}", "run": name, "size": run.size.name,
                   "seed": run.seed, "weight_decay": run.weight_decay, "dropout": run.dropout,
                   "step": int(step), "params": s.params, "tokens": s.tokens[i],
                   "coupling_mis": float(profile.mis.mean()),
                   "coupling_share": float(profile.share.mean()),
                   "heldout_loss": s.heldout_loss[i], "train_loss": s.train_loss[i],
                   "gap": s.heldout_loss[i] - s.train_loss[i]}
            for k, by_spec in (shares_by_k or {}).items():
                row[f"coupling_share_k{k}"] = by_spec.get(f"{name}@step{step}", math.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def bits_per_byte(model, texts: Sequence[str]) -> np.ndarray:
    """Next-token loss of each text in bits per UTF-8 byte: ``[text]``.

    Σ_t −log₂ p(x_{t+1} | x_≤t) over the text's tokens, divided by the bytes those predicted
    tokens cover. Unlike nats per token, it does not depend on the tokenizer, so models with
    different vocabularies can be placed on one axis.
    """
    import torch
    import torch.nn.functional as F

    out = []
    for text in texts:
        ids = encode(model, text)  # (1, tok)
        with torch.no_grad():
            logits = model.hf(input_ids=ids).logits[0, :-1].float()  # (tok-1, vocab)
        nats = F.cross_entropy(logits, ids[0, 1:], reduction="sum").item()
        first = model.tokenizer.decode(ids[0, :1])
        predicted = len(text.encode()) - len(first.encode())
        if predicted <= 0:
            raise LlmdynError(f"text {text[:30]!r} is one token long; nothing is predicted")
        out.append(nats / math.log(2) / predicted)
    return np.array(out)


def fit_or_reason(x, y) -> LinearFit | str:
    """The OLS fit of y on x, or why there is none (fewer than 3 points, constant values)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3:
        return f"{x.size} point(s): a regression needs at least 3"
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return "constant values: no regression"
    return ols(x, y)


def subset_table(frame: pd.DataFrame, x: str, y: str,
                 subsets: Mapping[str, Sequence[bool] | np.ndarray]) -> str:
    """Paper A Table 4's layout: R², p and n of y on x for each named subset of rows."""
    rows = []
    for name, mask in subsets.items():
        part = frame[np.asarray(mask, bool)]
        rows.append(_fit_row(name, len(part), fit_or_reason(part[x], part[y])))
    return _fit_table("subset", rows)


def k_table(frame: pd.DataFrame, ks: Sequence[int], y: str = "heldout_loss") -> str:
    """R², p and slope of ``y`` on the diagonal share measured at each k (paper A Fig 36)."""
    rows = [_fit_row(f"k = {k}", len(frame), fit_or_reason(frame[f"coupling_share_k{k}"],
                                                            frame[y])) for k in ks]
    return _fit_table("coupling measured at", rows)


def _fit_row(name: str, n_rows: int, fit: LinearFit | str) -> str:
    """One markdown row: name, n, R², p and slope of a fit, or the reason there is none."""
    if isinstance(fit, str):
        return f"| {name} | {n_rows} | — | — | {fit} |"
    return f"| {name} | {fit.n} | {fit.r2:.2f} | {fit.p:.2g} | {fit.slope:.3g} |"


def _fit_table(first: str, rows: list[str]) -> str:
    """A markdown table of fit rows under the header ``first | n | R² | p | slope``."""
    return "\n".join([f"| {first} | n | R² | p | slope |", "| --- | --- | --- | --- | --- |",
                      *rows])


def final_shares(checkpoints: Sequence, texts: Sequence[str], *, k: int,
                 device: str = "cpu") -> dict[str, float]:
    """Mean diagonal share at ``k`` of each checkpoint, keyed ``"<run>@step<N>"`` (cached)."""
    profiles = measure_checkpoints(checkpoints, texts, k=k, device=device, progress=False)
    return {f"{c.run}@step{c.step}": float(profiles[c.spec].share.mean()) for c in checkpoints}


def coupling_and_bits(spec: str, texts: Sequence[str], *, k: int,
                      device: str = "cpu") -> tuple[float, float]:
    """(mean diagonal share, mean bits per byte) of one model on ``texts``, coupling cached."""
    model = load_model(spec, device=device)
    store = ResultStore(model.model_id, provenance=model.identity)
    coupling = depth_coupling(model, texts, k=min(k, model.d_model), store=store)
    share = float(np.mean([offdiagonal_mean(diagonal_share(c.normalized)) for c in coupling]))
    return share, float(bits_per_byte(model, texts).mean())


def facts_table(facts: pd.DataFrame) -> str:
    """Our copy of paper A's Table 1: parameters, shape, tokens and leaderboard average."""
    def cell(v, fmt):
        return "" if not np.isfinite(v) else format(v, fmt)

    lines = ["| model | family | parameters (B) | blocks | d_model | tokens (T) | "
             "leaderboard average |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for _, r in facts.sort_values(["family", "params_b"]).iterrows():
        lines.append(f"| {r.model} | {r.family} | {cell(r.params_b, 'g')} | "
                     f"{cell(r.layers, '.0f')} | {cell(r.d_model, '.0f')} | "
                     f"{cell(r.tokens_t, 'g')} | {cell(r.average, '.3f')} |")
    return "\n".join(lines)


__all__ = ["SCORE_COLUMNS", "POPULATION_COLUMNS", "bits_per_byte", "coupling_and_bits",
           "final_shares",
           "model_facts", "population", "fit_or_reason", "subset_table", "k_table",
           "facts_table"]
