"""Logit-lens readouts of a prompt's last token at every layer: entropy, top-k, distance to final."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from llmdyn import LlmdynError, metrics
from llmdyn.data import Prompt
from llmdyn.models import LoadedModel
from llmdyn.store import ResultStore
from llmdyn.trace import logit_lens, trajectory

__all__ = ["LensReadout", "decode_top", "entropy_spread", "entropy_spread_boundary",
           "lens_entropy", "lens_readout", "lens_readouts"]

PromptLike = str | Prompt
_MEASUREMENT = "logit_lens"  # store key; bump its params' "version" when the readout changes


@dataclass(frozen=True)
class LensReadout:
    """What the logit lens reads from one prompt's last token at every layer.

    Attributes:
        entropy: ``[layer+1]`` entropy S(P^l) in nats of the next-token distribution read from
            layer l (l = 0 is the embedding, l = L the model's own output).
        top_ids: ``[layer+1, k]`` token ids of the k most probable next tokens per layer.
        top_probs: ``[layer+1, k]`` their probabilities, in decreasing order.
        tv_final: ``[layer+1]`` total-variation distance of P^l to the final distribution P^L.
        log_vocab: ln(vocab), the largest possible entropy (uniform distribution).
    """

    entropy: np.ndarray
    top_ids: np.ndarray
    top_probs: np.ndarray
    tv_final: np.ndarray
    log_vocab: float

    def __post_init__(self) -> None:
        """Check that the fields describe the same layers and k."""
        n = self.entropy.shape[0]
        assert self.entropy.shape == (n,) and self.tv_final.shape == (n,)
        assert self.top_ids.shape == self.top_probs.shape and self.top_ids.shape[0] == n

    @property
    def n_layers(self) -> int:
        """Number of blocks L (the readout has L + 1 layers)."""
        return self.entropy.shape[0] - 1

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The fields by name, for the results store."""
        return {"entropy": self.entropy, "top_ids": self.top_ids, "top_probs": self.top_probs,
                "tv_final": self.tv_final, "log_vocab": np.asarray(self.log_vocab)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> LensReadout:
        """Rebuild a readout from :meth:`as_arrays` output (e.g. loaded from the store)."""
        return cls(entropy=arrays["entropy"], top_ids=arrays["top_ids"],
                   top_probs=arrays["top_probs"], tv_final=arrays["tv_final"],
                   log_vocab=float(arrays["log_vocab"]))


def _text(prompt: PromptLike) -> str:
    if isinstance(prompt, Prompt):
        return prompt.text
    if isinstance(prompt, str) and prompt.strip():
        return prompt
    raise LlmdynError(f"each prompt must be a non-empty str or llmdyn.data.Prompt, "
                      f"got {type(prompt).__name__} {prompt!r:.60}")


def _check_k(top_k: int) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise LlmdynError(f"top_k must be an int >= 1, got {top_k!r}")


def readout_from_logits(logits: torch.Tensor, top_k: int = 5) -> LensReadout:
    """Entropy, top-k and distance to the last layer from per-layer logits of one token.

    ``S(P^l) = -Σ_v P^l(v) ln P^l(v)`` (paper B §3.7) and
    ``TV(P^l, P^L) = ½ Σ_v |P^l(v) - P^L(v)|``, with ``P^l = softmax(ℓ^l)``.

    Args:
        logits: ``[layer+1, vocab]`` logit-lens logits, the last row the model's own output.
        top_k: number of most probable tokens kept per layer.

    Returns:
        The readout.
    """
    _check_k(top_k)
    logits = torch.as_tensor(logits)
    if logits.ndim != 2 or logits.shape[0] < 1:
        raise LlmdynError(f"logits must be [layer+1, vocab], got {tuple(logits.shape)}")
    if top_k > logits.shape[1]:
        raise LlmdynError(f"top_k={top_k} exceeds the vocabulary size {logits.shape[1]}")
    logits = logits.double()
    probs = torch.softmax(logits, dim=-1)  # (layer+1, vocab)
    top = torch.topk(probs, top_k, dim=-1)  # (layer+1, k) each
    tv = metrics.total_variation(probs, probs[-1:].expand_as(probs))  # (layer+1,)
    return LensReadout(entropy=metrics.entropy(logits).numpy(),
                       top_ids=top.indices.numpy().astype(np.int64),
                       top_probs=top.values.numpy(),
                       tv_final=tv.numpy(),
                       log_vocab=float(np.log(logits.shape[1])))


def lens_readout(model: LoadedModel, prompt: PromptLike, *, top_k: int = 5) -> LensReadout:
    """Logit-lens readout of the last token of one prompt at every layer (uncached).

    Args:
        model: a loaded model.
        prompt: the text (or a :class:`~llmdyn.data.Prompt`).
        top_k: number of most probable tokens kept per layer.

    Returns:
        The readout, over ``layer+1`` = L + 1 layers (embedding, then each block's output).
    """
    traj = trajectory(model, _text(prompt))
    return readout_from_logits(logit_lens(model, traj.states[:, -1]), top_k)  # (layer+1, vocab)


def lens_readouts(model: LoadedModel, prompts: Sequence[PromptLike],
                  store: ResultStore | None = None, *, top_k: int = 5) -> list[LensReadout]:
    """Logit-lens readouts of the last token of several prompts, cached per prompt text.

    Args:
        model: a loaded model.
        prompts: texts or :class:`~llmdyn.data.Prompt` objects (length: prompt).
        store: results cache (None: compute without caching).
        top_k: number of most probable tokens kept per layer.

    Returns:
        One readout per prompt, in order.
    """
    _check_k(top_k)
    if isinstance(prompts, (str, Prompt)) or len(prompts) == 0:
        raise LlmdynError(f"prompts must be a non-empty list of prompts, got {prompts!r:.60}")
    texts = [_text(p) for p in prompts]

    def compute(text: str) -> dict[str, np.ndarray]:
        return lens_readout(model, text, top_k=top_k).as_arrays()

    if store is None:
        return [LensReadout.from_arrays(compute(t)) for t in texts]
    params = {"top_k": top_k, "token": -1, "dtype": "float32", "version": 1}
    results = store.map(_MEASUREMENT, params, texts, compute)
    return [LensReadout.from_arrays(r) for r in results]


def lens_entropy(model: LoadedModel, prompts: Sequence[PromptLike],
                 store: ResultStore | None = None) -> np.ndarray:
    """Logit-lens entropy of the last token at every layer, for every prompt (paper B Fig. 5).

    Args:
        model: a loaded model.
        prompts: texts or :class:`~llmdyn.data.Prompt` objects (length: prompt).
        store: results cache (None: compute without caching); shares the cache of
            :func:`lens_readouts`.

    Returns:
        ``[prompt, layer+1]`` entropies in nats; the maximum possible is ln(vocab).
    """
    return np.stack([r.entropy for r in lens_readouts(model, prompts, store)])


def decode_top(model: LoadedModel, readout: LensReadout) -> list[list[str]]:
    """The top-k token strings of a readout, ``[layer+1][k]``, decoded one token at a time."""
    return [[model.tokenizer.decode([int(i)]) for i in row] for row in readout.top_ids]


def entropy_spread(entropy: np.ndarray) -> np.ndarray:
    """Spread of the entropy over prompts per layer: the standard deviation, ``[layer+1]``.

    Paper B §4.4 sees almost identical confidence among prompts in the Thought phase and
    prompt-dependent confidence in Fixation; this spread measures that.

    Args:
        entropy: ``[prompt, layer+1]`` with at least two prompts.
    """
    entropy = np.asarray(entropy, dtype=float)
    if entropy.ndim != 2 or entropy.shape[0] < 2 or entropy.shape[1] < 2:
        raise LlmdynError(f"entropy must be [prompt >= 2, layer+1 >= 2], "
                          f"got {entropy.shape}")
    return entropy.std(axis=0)


def entropy_spread_boundary(entropy: np.ndarray, *, fraction: float = 0.5) -> int:
    """A simple Thought/Fixation boundary: where the entropy spread over prompts first rises.

    Returns the first layer ``l >= 1`` with ``spread[l] - spread_min >= fraction ·
    (spread_max - spread_min)``, where ``spread`` is :func:`entropy_spread` and the extremes are
    taken over layers 1 … L (layer 0, the embedding, is left out: there the distribution
    depends on the last token alone). Layers ``< l`` are Thought, layers ``>= l`` Fixation.

    Args:
        entropy: ``[prompt, layer+1]`` logit-lens entropies of at least two prompts.
        fraction: share of the spread's range that marks the rise, in (0, 1).

    Returns:
        The first Fixation layer, in 1 … L.
    """
    if not 0 < fraction < 1:
        raise LlmdynError(f"fraction must be in (0, 1), got {fraction!r}")
    spread = entropy_spread(entropy)[1:]  # (layer,) layers 1 … L
    lo, hi = spread.min(), spread.max()
    if hi - lo <= 0:
        return len(spread)  # no rise: everything but the output is Thought
    first = int(np.argmax(spread - lo >= fraction * (hi - lo)))
    return first + 1
