"""Reference losses of count models: known answers on corpora small enough to do by hand."""

import math

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.training import baselines

ALTERNATING = np.array([0, 1] * 5)  # 10 tokens: c(0) = c(1) = 5, c(2) = 0


def test_unigram_is_add_one():
    # V = 3, N = 10: p = (6/13, 6/13, 1/13); eval [0, 1, 2] scores all three tokens
    got = baselines.reference_losses(ALTERNATING, [0, 1, 2], 3, weight=0.5)
    want = -(2 * math.log(6 / 13) + math.log(1 / 13)) / 3
    assert got["unigram"] == pytest.approx(want, abs=1e-12)


def test_bigram_interpolates_with_the_unigram():
    # contexts in train[:-1]: c(0) = 5 (always followed by 1), c(1) = 4 (always by 0)
    got = baselines.reference_losses(ALTERNATING, [0, 1, 2], 3, weight=0.5)
    p_1_after_0 = 0.5 * 1 + 0.5 * 6 / 13
    p_2_after_1 = 0.5 * 0 + 0.5 * 1 / 13
    want = -(math.log(p_1_after_0) + math.log(p_2_after_1)) / 2
    assert got["bigram"] == pytest.approx(want, abs=1e-12)


def test_unseen_context_falls_back_to_the_unigram():
    got = baselines.reference_losses(ALTERNATING, [2, 0], 3, weight=0.7)
    assert got["bigram"] == pytest.approx(-math.log(6 / 13), abs=1e-12)


def test_weight_zero_is_the_unigram_on_the_same_tokens():
    rng = np.random.default_rng(0)
    train, ev = rng.integers(0, 7, 500), rng.integers(0, 7, 200)
    got = baselines.reference_losses(train, ev, 7, weight=0.0)
    models = baselines.fit_counts(train, 7, 0.0)
    assert got["bigram"] == pytest.approx(-np.log(models.unigram[ev[1:]]).mean(), abs=1e-12)


def test_a_deterministic_successor_gets_weight_near_one():
    train = np.tile([0, 1, 2, 3], 50)  # each token fixes the next
    assert baselines.choose_weight(train, 5) > 0.999
    got = baselines.reference_losses(train, np.tile([0, 1, 2, 3], 5), 5)
    assert got["bigram"] < 1e-3 < got["unigram"]
    # the unigram of 4 equally frequent tokens among V = 5 (add-one): ln((200 + 5) / 51)
    assert got["unigram"] == pytest.approx(math.log(205 / 51), abs=1e-12)


def test_chosen_weight_is_the_dev_optimum():
    # a noisy first-order chain: the best λ lies inside (0, 1); check it against a fine grid
    rng = np.random.default_rng(1)
    ids = [0]
    for _ in range(3000):
        ids.append((ids[-1] + 1) % 6 if rng.random() < 0.6 else int(rng.integers(0, 6)))
    train = np.array(ids)
    lam = baselines.choose_weight(train, 6)
    cut = int(round(train.size * 0.9))
    models = baselines.fit_counts(train[:cut], 6, 0.0)
    dev = train[cut:]

    def loss(w):
        return -np.log(baselines._bigram_probs(models, dev, w)).mean()

    grid = np.linspace(0, 0.999, 1000)
    assert 0.05 < lam < 0.999
    assert loss(lam) <= min(loss(w) for w in grid) + 1e-9


@pytest.mark.parametrize("train, ev, vocab, match", [
    ([0, 1, 5, 1], [0, 1], 3, "outside the vocabulary"),
    ([0.0, 1.0, 0.0, 1.0], [0, 1], 3, "integer token ids"),
    ([0, 1], [0, 1], 3, "at least 4"),
    ([0, 1, 0, 1], [0, 1], 1, "vocab_size"),
])
def test_bad_input_says_what_to_do(train, ev, vocab, match):
    with pytest.raises(LlmdynError, match=match):
        baselines.reference_losses(train, ev, vocab)


def test_weight_one_is_refused():
    with pytest.raises(LlmdynError, match=r"\[0, 1\)"):
        baselines.reference_losses(ALTERNATING, [0, 1], 3, weight=1.0)
