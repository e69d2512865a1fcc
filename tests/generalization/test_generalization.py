import math

import numpy as np
import pandas as pd
import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.generalization import published as gen
from llmdyn.models.loading import load_model
from llmdyn.stats import regression as stats


def test_model_facts_join_scores_and_shapes():
    facts = gen.model_facts()
    assert len(facts) == 47
    llama = facts.set_index("model").loc["meta-llama/Llama-2-7b-hf"]
    assert (llama.layers, llama.d_model, llama.params_b) == (32, 4096, 7.0)
    assert math.isnan(facts.set_index("model").loc["meta-llama/Meta-Llama-3-8B"].average)
    table = gen.facts_table(facts)
    assert "| meta-llama/Meta-Llama-3-8B | Llama-3 | 8 | 32 | 4096 | 15 |  |" in table


def test_fit_or_reason_refuses_meaningless_fits():
    assert "at least 3" in gen.fit_or_reason([1, 2], [3, 4])
    assert "constant" in gen.fit_or_reason([1, 1, 1], [1, 2, 3])
    assert "constant" in gen.fit_or_reason([1, 2, 3], [5, 5, 5])
    fit = gen.fit_or_reason([0, 1, 2, np.nan], [1, 3, 5, 7])  # NaN rows are dropped
    assert fit.slope == pytest.approx(2) and fit.r2 == pytest.approx(1) and fit.n == 3


def test_subset_and_k_tables():
    frame = pd.DataFrame({"x": [0, 1, 2, 3], "y": [0, 2, 4, 7], "diagonal_share_k10": [0, 1, 2, 3],
                          "heldout_loss": [1, 2, 3, 4]})
    table = gen.subset_table(frame, "x", "y", {"all": [True] * 4, "two": [1, 1, 0, 0]})
    assert "| all | 4 | 0.99 | 0.0056 | 2.3 |" in table
    assert "| two | 2 | — | — | 2 point(s)" in table
    assert "| k = 10 | 4 | 1.00 |" in gen.k_table(frame, [10])


def test_partial_regression_recovers_known_coefficients():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=200), rng.normal(size=200)
    y = 1.0 + 2.0 * a - 0.5 * b + 1e-3 * rng.normal(size=200)
    fit = stats.partial_regression(y, {"a": a, "b": b})
    assert fit.of("a")[0] == pytest.approx(2.0, abs=1e-3)
    assert fit.of("b")[0] == pytest.approx(-0.5, abs=1e-3)
    assert fit.of("a")[1] < 1e-10 and fit.r2 > 0.999
    noise = stats.partial_regression(y, {"a": a, "noise": rng.normal(size=200)})
    assert noise.of("noise")[1] > 0.01  # an unrelated predictor is not significant
    with pytest.raises(LlmdynError, match="constant"):
        stats.partial_regression(y, {"a": a, "c": np.ones(200)})
    with pytest.raises(LlmdynError, match="no predictor"):
        fit.of("z")


def test_bits_per_byte_of_a_uniform_model():
    # zero unembedding -> uniform next-token distribution: log2(V) bits per predicted token
    m = load_model("tiny-gpt2", seed=0)
    with torch.no_grad():
        m.head.weight.zero_()
        if getattr(m.head, "bias", None) is not None:
            m.head.bias.zero_()
    text = "the whale"  # byte tokenizer: one token per byte
    bits = gen.bits_per_byte(m, [text])
    assert bits[0] == pytest.approx(math.log2(m.vocab_size), rel=1e-5)
