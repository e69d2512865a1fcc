"""Small builders shared by tests: a tiny English-like corpus on disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np

_WORDS = ("the whale ship sea captain crew harbour nation congress people law year report "
          "war peace trade duty oil boat deck wind storm union state free great new old long "
          "sailed spoke found made saw gave kept took of to in and with for on by as").split()


def write_corpus(directory: Path, *, n_docs: int = 8, words: int = 120, seed: int = 0) -> Path:
    """``n_docs`` text files of seeded pseudo-English sentences; returns the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n_docs):
        sentences = []
        for _ in range(words // 8):
            chosen = rng.choice(_WORDS, size=8)
            sentences.append(" ".join(chosen).capitalize() + ".")
        (directory / f"doc{i:02d}.txt").write_text(" ".join(sentences))
    return directory


def route_rtol(model) -> float:
    """Relative tolerance at which two exact routes of one float64 tiny model must agree.

    GPT-2 computes in float64 throughout: two routes differ only by float64 rounding (1e-12).
    HF's RMSNorm (Llama, Gemma) and NeoX's attention softmax cast to float32 whatever the model
    dtype, so two routes that batch those ops differently differ by float32 rounding: up to a few
    ulps of the largest entry (eps32 ≈ 1.2e-7; measured 6e-8 of max|J| on tiny Gemma 3, on an
    AMD EPYC; on other CPUs the routes can happen to agree bitwise). We allow 1e-6 (8 ulps).
    """
    return 1e-12 if model.hf.config.model_type == "gpt2" else 1e-6
