"""Next-token prediction on a suite's token streams: batches, loss, the evaluation sets, saving.

The training task of `llmdyn.training.suite`. A run may train on a fraction of the training split
(its data budget), repeated for as many epochs as its steps need; its training loss is then
measured on windows it trained on. A suite with an out-of-distribution corpus also records the
loss on that corpus at every checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from llmdyn import LlmdynError
from llmdyn.models.quiet import quiet_transformers


def sequences(stream: np.ndarray, seq_len: int) -> torch.Tensor:
    """The stream cut into ``[n, seq_len + 1]`` windows (inputs plus the next token)."""
    n = len(stream) // (seq_len + 1)
    return torch.from_numpy(stream[: n * (seq_len + 1)].astype(np.int64)).view(n, seq_len + 1)


def spread_rows(seqs: torch.Tensor, n: int) -> torch.Tensor:
    """``n`` rows evenly spaced over ``seqs`` (all of them if there are fewer)."""
    if len(seqs) <= n:
        return seqs
    return seqs[np.linspace(0, len(seqs) - 1, n).round().astype(int)]


class LanguageModelTask:
    """Next-token prediction on fixed-length windows in an order fixed by the seed.

    Args:
        data: the suite's prepared streams (`llmdyn.training.suite.PreparedData`).
        suite: the `llmdyn.training.suite.Suite` (batch size, context, evaluation sets, device).
        seed: orders the windows in each epoch.
        data_fraction: the run trains on the first ``data_fraction`` of the training windows.
    """

    def __init__(self, data: Any, suite: Any, seed: int,
                 data_fraction: float = 1.0) -> None:
        self.data, self.suite, self.seed = data, suite, seed
        every = sequences(data.train, suite.seq_len)  # [n, seq_len + 1]
        kept = round(data_fraction * len(every))
        if kept < max(suite.batch_size, suite.eval_sequences):
            raise LlmdynError(f"data_fraction {data_fraction} keeps {kept} of {len(every)} "
                              f"training windows, fewer than the batch ({suite.batch_size}) or "
                              f"the evaluation set ({suite.eval_sequences}); raise it")
        self.train_seqs = every[:kept]  # the data budget: a prefix, the same for every seed
        self.heldout_seqs = sequences(data.heldout, suite.seq_len)
        self.ood_seqs = (spread_rows(sequences(data.ood, suite.seq_len), suite.eval_sequences)
                         if data.ood is not None else None)
        self.tokens_per_step = suite.tokens_per_step
        self._perm: tuple[int, np.ndarray] | None = None

    def batch(self, step: int) -> torch.Tensor:
        """Sequences of update ``step``: epoch e is a permutation seeded by (seed, e)."""
        n, b = len(self.train_seqs), self.suite.batch_size
        index = [self._permuted(*divmod(i, n)) for i in range(step * b, (step + 1) * b)]
        return self.train_seqs[index]  # [batch, seq_len + 1]

    def _permuted(self, epoch: int, pos: int) -> int:
        if self._perm is None or self._perm[0] != epoch:  # one permutation per epoch, cached
            n = len(self.train_seqs)
            self._perm = (epoch, np.random.default_rng([self.seed, epoch]).permutation(n))
        return int(self._perm[1][pos])

    def loss(self, model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
        """Mean token cross-entropy (nats)."""
        batch = batch.to(self.suite.device)
        logits = model(input_ids=batch[:, :-1]).logits  # [batch, seq_len, vocab]
        return F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())

    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """Mean token cross-entropy on fixed sets of windows.

        The train and held-out sets are their split's first windows, or windows spread evenly
        over it with ``eval_spread``; the OOD set is spread over the OOD corpus.
        """
        n = self.suite.eval_sequences
        if self.suite.eval_spread:  # the whole split, not its first document(s)
            sets = {"train_loss": spread_rows(self.train_seqs, n),
                    "heldout_loss": spread_rows(self.heldout_seqs, n)}
        else:
            sets = {"train_loss": self.train_seqs[:n], "heldout_loss": self.heldout_seqs[:n]}
        if self.ood_seqs is not None:
            sets["ood_loss"] = self.ood_seqs
        with torch.no_grad():
            return {name: float(self.loss(model, batch)) for name, batch in sets.items()}

    def save_model(self, model: torch.nn.Module, directory: Path) -> None:
        """Weights, config and tokenizer: a directory `from_pretrained` loads."""
        with quiet_transformers():
            model.save_pretrained(directory, safe_serialization=True)
        self.data.tokenizer.save_pretrained(directory)

    def load_weights(self, model: torch.nn.Module, directory: Path) -> None:
        """Weights from a checkpoint, through transformers (it renames some keys on saving)."""
        with quiet_transformers():
            saved = type(model).from_pretrained(directory, dtype=torch.float32)
        model.load_state_dict(saved.state_dict())
