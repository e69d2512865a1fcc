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

import numpy as np
import pandas as pd

from llmdyn import LlmdynError
from llmdyn.core.paths import data_file
from llmdyn.core.store import ResultStore
from llmdyn.core.tables import markdown_table
from llmdyn.coupling.depth import depth_coupling
from llmdyn.coupling.scores import mean_diagonal_share
from llmdyn.models.loading import load_model
from llmdyn.stats.regression import LinearFit, ols
from llmdyn.sweep.join import SCORE_COLUMNS, leaderboard
from llmdyn.trace import encode

SHAPES_CSV = data_file("model_shapes.csv")


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
        ids = encode(model, text)  # [1, tok]
        with torch.no_grad():
            logits = model.hf(input_ids=ids).logits[0, :-1].float()  # [tok-1, vocab]
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
    rows = [_fit_row(f"k = {k}", len(frame), fit_or_reason(frame[f"diagonal_share_k{k}"],
                                                            frame[y])) for k in ks]
    return _fit_table("coupling measured at", rows)


def _fit_row(name: str, n_rows: int, fit: LinearFit | str) -> tuple:
    """One row: name, n, R², p and slope of a fit, or the reason there is none."""
    if isinstance(fit, str):
        return name, n_rows, "—", "—", fit
    return name, fit.n, f"{fit.r2:.2f}", f"{fit.p:.2g}", f"{fit.slope:.3g}"


def _fit_table(first: str, rows: list[tuple]) -> str:
    """A markdown table of fit rows under the header ``first | n | R² | p | slope``."""
    return markdown_table([dict(zip((first, "n", "R²", "p", "slope"), row, strict=True))
                           for row in rows])


def coupling_and_bits(spec: str, texts: Sequence[str], *, k: int,
                      device: str = "cpu") -> tuple[float, float]:
    """(mean diagonal share, mean bits per byte) of one model on ``texts``, coupling cached."""
    model = load_model(spec, device=device)
    store = ResultStore(model.model_id, provenance=model.identity)
    coupling = depth_coupling(model, texts, k=min(k, model.d_model), store=store)
    share = float(np.mean([mean_diagonal_share(c.miscoupling) for c in coupling]))
    return share, float(bits_per_byte(model, texts).mean())


def facts_table(facts: pd.DataFrame) -> str:
    """The leaderboard population (ObsScaling): parameters, shape, tokens and average."""
    def cell(v, fmt):
        return "" if not np.isfinite(v) else format(v, fmt)

    return markdown_table([
        {"model": r.model, "family": r.family, "parameters (B)": cell(r.params_b, "g"),
         "blocks": cell(r.layers, ".0f"), "d_model": cell(r.d_model, ".0f"),
         "tokens (T)": cell(r.tokens_t, "g"), "leaderboard average": cell(r.average, ".3f")}
        for _, r in facts.sort_values(["family", "params_b"]).iterrows()])


__all__ = ["SCORE_COLUMNS", "bits_per_byte", "coupling_and_bits",
           "model_facts", "fit_or_reason", "subset_table", "k_table",
           "facts_table"]
