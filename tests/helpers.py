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
