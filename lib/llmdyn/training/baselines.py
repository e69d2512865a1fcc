"""Reference losses of count models: where a trained LM sits between unigram and bigram level.

A language model's cross-entropy means little alone. Two count models fitted on the same
training tokens, with the same tokenizer, bracket what "learning something" means at small
scale: the **unigram** model knows only token frequencies, the **bigram** model also the
previous token. A model whose held-out loss lies above the unigram reference has not yet learned
the frequencies; one below the bigram reference uses more than one token of context.

Smoothing (fixed here, chosen before any model was compared with it):

- **unigram**, add-one (Laplace): p(w) = (c(w) + 1) / (N + V), with N training tokens and V the
  vocabulary size, so that a token unseen in training still has a finite loss.
- **bigram**, interpolated with the unigram (Jelinek-Mercer):
  p(w | v) = λ c(v, w) / c(v) + (1 − λ) p(w), and p(w | v) = p(w) when c(v) = 0.
  λ ∈ [0, 1] minimises the cross-entropy on a development split: the last ``dev_fraction`` of
  the *training* tokens, with the counts taken from the rest. That objective is convex in λ,
  so the bounded minimiser finds its optimum. The counts are then refitted on all training
  tokens with that λ. The evaluation tokens never choose λ.

Cross-entropy is −(1/T) Σ_t ln p(x_t | x_{t−1}) in nats per token over the evaluation tokens
x_1 … x_T (the unigram scores every token, x_0 included; the bigram scores x_1 … x_T, which
have a previous token).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmdyn import LlmdynError

DEV_FRACTION = 0.1  # the tail of the training tokens that chooses the bigram's λ


@dataclass(frozen=True)
class CountModels:
    """Unigram and bigram count models on one vocabulary.

    Attributes:
        vocab_size: V.
        unigram: ``[vocab]`` add-one probabilities p(w).
        pair_codes: ``[pair]`` sorted codes v · V + w of the bigrams seen in training.
        pair_counts: ``[pair]`` their counts c(v, w).
        context_counts: ``[vocab]`` c(v), the times v was followed by a token.
        weight: λ, the weight of the bigram's maximum-likelihood estimate.
    """

    vocab_size: int
    unigram: np.ndarray
    pair_codes: np.ndarray
    pair_counts: np.ndarray
    context_counts: np.ndarray
    weight: float


def _ids(ids, vocab_size: int, name: str, minimum: int) -> np.ndarray:
    """``ids`` as a 1-D int64 array, checked against the vocabulary."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.size < minimum:
        raise LlmdynError(f"{name} must be a 1-D sequence of at least {minimum} token ids, "
                          f"got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise LlmdynError(f"{name} must hold integer token ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= vocab_size:
        raise LlmdynError(f"{name} holds ids in [{arr.min()}, {arr.max()}], outside the "
                          f"vocabulary [0, {vocab_size}); pass the tokenizer's vocab_size")
    return arr


def fit_counts(train_ids: np.ndarray, vocab_size: int, weight: float) -> CountModels:
    """Count models of ``train_ids`` (``[tok]`` int64) with bigram weight λ = ``weight``."""
    counts = np.bincount(train_ids, minlength=vocab_size)  # [vocab]
    unigram = (counts + 1.0) / (train_ids.size + vocab_size)
    codes, pair_counts = np.unique(train_ids[:-1] * vocab_size + train_ids[1:],
                                   return_counts=True)  # [pair], [pair]
    context = np.bincount(train_ids[:-1], minlength=vocab_size)  # [vocab]
    return CountModels(vocab_size, unigram, codes, pair_counts, context, float(weight))


def _bigram_parts(models: CountModels, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(maximum-likelihood bigram p(w|v), unigram p(w)) of each of x_1 … x_T: ``[tok-1]``."""
    prev, nxt = ids[:-1], ids[1:]
    codes = prev * models.vocab_size + nxt  # [tok-1]
    # fit_counts saw at least one pair, so pair_codes is not empty
    at = np.minimum(np.searchsorted(models.pair_codes, codes), models.pair_codes.size - 1)
    pair = np.where(models.pair_codes[at] == codes, models.pair_counts[at], 0)
    context = models.context_counts[prev]
    ml = np.divide(pair, context, out=np.zeros(codes.size), where=context > 0)
    return ml, models.unigram[nxt]


def _bigram_probs(models: CountModels, ids: np.ndarray, weight: float) -> np.ndarray:
    """Interpolated p(x_t | x_{t−1}) for t = 1 … T; the unigram alone where c(v) = 0."""
    ml, uni = _bigram_parts(models, ids)
    unseen = models.context_counts[ids[:-1]] == 0
    return np.where(unseen, uni, weight * ml + (1 - weight) * uni)


def choose_weight(train_ids: np.ndarray, vocab_size: int,
                  dev_fraction: float = DEV_FRACTION) -> float:
    """λ that minimises the bigram's cross-entropy on the training tokens' last ``dev_fraction``.

    The counts come from the first 1 − ``dev_fraction`` of ``train_ids``. −Σ ln(λ a + (1 − λ) b)
    is convex in λ, so scipy's bounded scalar minimiser on [0, 1] finds the optimum.
    """
    from scipy import optimize

    cut = int(round(train_ids.size * (1 - dev_fraction)))
    if cut < 2 or train_ids.size - cut < 2:
        raise LlmdynError(f"{train_ids.size} training tokens are too few to split off a "
                          f"development part of {dev_fraction:g}")
    models = fit_counts(train_ids[:cut], vocab_size, 0.0)
    dev = train_ids[cut:]
    ml, uni = _bigram_parts(models, dev)
    known = models.context_counts[dev[:-1]] > 0
    ml, uni = ml[known], uni[known]

    def loss(lam: float) -> float:
        return -float(np.mean(np.log(lam * ml + (1 - lam) * uni)))

    if not known.any():
        return 0.0
    best = optimize.minimize_scalar(loss, bounds=(0.0, 1.0 - 1e-9), method="bounded",
                                    options={"xatol": 1e-6})
    return float(best.x)


def cross_entropies(models: CountModels, eval_ids: np.ndarray) -> dict[str, float]:
    """Unigram and bigram cross-entropies of ``eval_ids`` (``[tok]``) in nats per token."""
    return {"unigram": -float(np.mean(np.log(models.unigram[eval_ids]))),
            "bigram": -float(np.mean(np.log(_bigram_probs(models, eval_ids, models.weight))))}


def reference_losses(train_ids, eval_ids, vocab_size: int, *,
                     weight: float | None = None) -> dict[str, float]:
    """Unigram and bigram reference cross-entropies of ``eval_ids``, fitted on ``train_ids``.

    Args:
        train_ids: ``[tok]`` token ids of the training split (documents joined as trained).
        eval_ids: ``[tok]`` token ids to score (held-out split, or an OOD corpus), same tokenizer.
        vocab_size: V, the tokenizer's vocabulary size (the add-one denominator).
        weight: the bigram's λ; None (default) chooses it on the training tokens' last 10 %
            (`choose_weight`), never on ``eval_ids``.

    Returns:
        ``{"unigram": nats/token, "bigram": nats/token}`` (module docstring: add-one unigram,
        Jelinek-Mercer interpolated bigram).
    """
    if not isinstance(vocab_size, (int, np.integer)) or vocab_size < 2:
        raise LlmdynError(f"vocab_size must be an int >= 2, got {vocab_size!r}")
    train = _ids(train_ids, vocab_size, "train_ids", 4)
    evaluation = _ids(eval_ids, vocab_size, "eval_ids", 2)
    if weight is None:
        weight = choose_weight(train, vocab_size)
    elif not 0 <= weight < 1:  # λ = 1 gives an unseen pair probability 0: infinite loss
        raise LlmdynError(f"weight (the bigram's λ) must lie in [0, 1), got {weight}")
    return cross_entropies(fit_counts(train, vocab_size, weight), evaluation)


__all__ = ["DEV_FRACTION", "CountModels", "fit_counts", "choose_weight", "cross_entropies",
           "reference_losses"]
