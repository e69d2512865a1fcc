"""Logit-lens readouts of one token at every layer: entropy, top-k tokens, distance to the final."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.core.arrays import ArrayLike, checked_tensor
from llmdyn.core.store import ResultStore
from llmdyn.data.named import Prompt
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import Lens, check_lens, logit_lens
from llmdyn.trajectories.geometry import token_states

__all__ = ["LensReadout", "decode_top", "entropy", "entropy_spread", "lens_entropy",
           "lens_readouts", "readout_from_logits", "top_text", "total_variation", "tv_to_token"]

PromptLike = str | Prompt


# The distributions the lens reads: torch tensors or numpy arrays in, torch tensors out.


def entropy(logits: ArrayLike) -> torch.Tensor:
    """Entropy S(P) = -sum_v P(v) ln P(v) of P = softmax(logits) (paper B §3.7), in nats.

    Computed from log_softmax, so large logits are safe. [..., vocab] -> [...].
    """
    return _entropy(checked_tensor(logits, "logits", 1, "[..., vocab]"))


def _entropy(logits: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def _probs(p: ArrayLike, name: str) -> torch.Tensor:
    p = checked_tensor(p, name, 1, "[..., vocab]")
    if (p < 0).any() or not torch.allclose(p.sum(-1), p.new_ones(()), atol=1e-2):
        raise LlmdynError(f"{name}: expected probabilities (>= 0, summing to 1 over vocab)")
    return p


def total_variation(p: ArrayLike, q: ArrayLike) -> torch.Tensor:
    """Total variation distance 0.5 sum_v |p(v) - q(v)|. [..., vocab] x [..., vocab] -> [...]."""
    p, q = _probs(p, "p"), _probs(q, "q")
    if p.shape != q.shape:
        raise LlmdynError(f"q: got shape {tuple(q.shape)}; expected p's {tuple(p.shape)}")
    return _total_variation(p, q)


def _total_variation(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return 0.5 * (p - q.to(p.dtype)).abs().sum(-1)


def tv_to_token(probs: ArrayLike, token: int | ArrayLike) -> torch.Tensor:
    """Total variation distance to the one-hot distribution of ``token``: 1 - probs[token].

    ``probs`` [..., vocab] and ``token`` an int or integer ids [...] -> [...].
    """
    probs = _probs(probs, "probs")
    tok = torch.as_tensor(np.asarray(token) if not isinstance(token, torch.Tensor) else token)
    try:
        tok = tok.to(torch.long).expand(probs.shape[:-1])  # [...]
    except RuntimeError as err:
        want = tuple(probs.shape[:-1])
        raise LlmdynError(f"token: got shape {tuple(tok.shape)}; expected int or {want}") from err
    vocab = probs.shape[-1]
    if ((tok < 0) | (tok >= vocab)).any():
        raise LlmdynError(f"token: got ids outside [0, {vocab}); expected 0 <= token < vocab")
    return _tv_to_token(probs, tok)


def _tv_to_token(probs: torch.Tensor, tok: torch.Tensor) -> torch.Tensor:
    return 1 - torch.gather(probs, -1, tok.unsqueeze(-1)).squeeze(-1)


@dataclass(frozen=True)
class LensReadout:
    """What the logit lens reads from one prompt's token at every layer.

    Attributes:
        entropy: ``[layer+1]`` entropy S(P^l) in nats of the next-token distribution read from
            layer l (l = 0 is the embedding, l = L the model's own output).
        top_ids: ``[layer+1, k]`` token ids of the k most probable next tokens per layer.
        top_probs: ``[layer+1, k]`` their probabilities, in decreasing order.
        tv_final: ``[layer+1]`` total-variation distance δ(P^l, P_target) of P^l to the
            one-hot distribution of the model's final prediction argmax P^L (paper B App. A.1
            with the target set to the model's own answer); equals 1 - P^l(argmax P^L).
        tv_dist: ``[layer+1]`` total-variation distance of P^l to the whole final
            distribution P^L.
        log_vocab: ln(vocab), the largest possible entropy (uniform distribution).
    """

    entropy: np.ndarray
    top_ids: np.ndarray
    top_probs: np.ndarray
    tv_final: np.ndarray
    tv_dist: np.ndarray
    log_vocab: float

    def __post_init__(self) -> None:
        """Check that the fields describe the same layers and k."""
        n = self.entropy.shape[0]
        shapes = {"entropy": self.entropy.shape, "tv_final": self.tv_final.shape,
                  "tv_dist": self.tv_dist.shape, "top_ids": self.top_ids.shape,
                  "top_probs": self.top_probs.shape}
        if not (self.entropy.shape == self.tv_final.shape == self.tv_dist.shape == (n,)
                and self.top_ids.shape == self.top_probs.shape
                and self.top_ids.shape[0] == n):
            raise LlmdynError(f"LensReadout fields disagree: shapes {shapes}; expected [layer+1] "
                              f"and [layer+1, k] with layer+1 = {n} (a stale or corrupt cache "
                              f"entry: delete it to recompute)")

    @property
    def n_layers(self) -> int:
        """Number of blocks L (the readout has L + 1 layers)."""
        return self.entropy.shape[0] - 1


def _texts(prompts: Sequence[PromptLike]) -> list[str]:
    return checks.prompt_texts(prompts)


def readout_from_logits(logits: torch.Tensor, top_k: int = 5) -> LensReadout:
    """Entropy, top-k and distances to the last layer from per-layer logits of one token.

    ``S(P^l) = -Σ_v P^l(v) ln P^l(v)`` (paper B §3.7),
    ``δ(P^l, P_target) = ½ Σ_v |P^l(v) - P_target(v)|`` (paper B App. A.1) with P_target the
    one-hot distribution of ``argmax P^L``, and ``TV(P^l, P^L) = ½ Σ_v |P^l(v) - P^L(v)|``,
    where ``P^l = softmax(ℓ^l)``. Computed in float64.

    Args:
        logits: ``[layer+1, vocab]`` logit-lens logits, the last row the model's own output.
        top_k: number of most probable tokens kept per layer.

    Returns:
        The readout.
    """
    logits = torch.as_tensor(logits)
    if logits.ndim != 2 or logits.shape[0] < 1:
        raise LlmdynError(f"logits must be [layer+1, vocab], got {tuple(logits.shape)}")
    top_k = checks.top_k_value(top_k, logits.shape[1])
    # Checked once here: the probabilities below are a softmax of finite logits, so the public
    # functions' checks of each (a third of the lens's CPU over Gemma's 262k vocabulary)
    # would only repeat it. The same operations, so the same bits.
    logits = checked_tensor(logits, "logits", 2, "[layer+1, vocab]").double()
    probs = torch.softmax(logits, dim=-1)  # [layer+1, vocab]
    top = torch.topk(probs, top_k, dim=-1)  # [layer+1, k] each
    final = torch.full(probs.shape[:-1], int(probs[-1].argmax()), dtype=torch.long)
    return LensReadout(entropy=_entropy(logits).numpy(),
                       top_ids=top.indices.numpy().astype(np.int64),
                       top_probs=top.values.numpy(),
                       tv_final=_tv_to_token(probs, final).numpy(),
                       tv_dist=_total_variation(probs, probs[-1:].expand_as(probs)).numpy(),
                       log_vocab=float(np.log(logits.shape[1])))


def lens_readouts(model: LoadedModel, prompts: Sequence[PromptLike],
                  store: ResultStore | None = None, *, top_k: int = 5,
                  token: int = -1, lens: Lens = "paper", cut_long_prompts: bool = False
                  ) -> list[LensReadout]:
    """Logit-lens readouts of one token of several prompts at every layer.

    The hidden states come from :func:`llmdyn.trajectories.token_states`, cached per prompt text
    in `store` (one forward pass per prompt, shared with the trajectory measurements); the
    readouts are recomputed from them by :func:`llmdyn.trace.logit_lens`, which is cheap, so
    both lenses share one cache entry.

    Args:
        model: a loaded model.
        prompts: texts or :class:`~llmdyn.data.Prompt` objects (length: prompt).
        store: results cache (None: compute without caching).
        top_k: number of most probable tokens kept per layer.
        token: which token (default the last, whose next token is the prediction).
        lens: ``"paper"``: P^l = softmax(M x^l) for l < L (paper B §3.7, no final norm);
            ``"normed"``: P^l = softmax(M norm(x^l)) (the tuned-lens convention). Both read
            the model's own output at l = L.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        One readout per prompt, in order, over ``layer+1`` = L + 1 layers.
    """
    top_k = checks.top_k_value(top_k, model.vocab_size)
    check_lens(lens)
    states = token_states(model, _texts(prompts), store, token=token, last_point="final_norm",
                          cut_long_prompts=cut_long_prompts)  # [prompt, layer+1, d_model]
    return [readout_from_logits(logit_lens(model, torch.from_numpy(x), lens=lens,
                                           last_point="final_norm"), top_k)  # [layer+1, vocab]
            for x in states]


def lens_entropy(model: LoadedModel, prompts: Sequence[PromptLike],
                 store: ResultStore | None = None, *, token: int = -1,
                 lens: Lens = "paper", cut_long_prompts: bool = False) -> np.ndarray:
    """Logit-lens entropy of one token at every layer, for every prompt (paper B Fig. 5).

    ``S(P^l) = -Σ_v P^l(v) ln P^l(v)`` with ``P^l = softmax(M x^l)`` for l < L (paper B §3.7,
    ``lens="paper"``) or ``softmax(M norm(x^l))`` (``lens="normed"``); entry L is the entropy
    of the model's own prediction under both.

    Args:
        model: a loaded model.
        prompts: texts or :class:`~llmdyn.data.Prompt` objects (length: prompt).
        store: results cache of the hidden states (None: compute without caching).
        token: which token (default the last).
        lens: ``"paper"`` or ``"normed"`` (as in :func:`lens_readouts`).
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        ``[prompt, layer+1]`` entropies in nats; the maximum possible is ln(vocab).
    """
    return np.stack([r.entropy for r in lens_readouts(model, prompts, store, token=token,
                                                      lens=lens,
                                                      cut_long_prompts=cut_long_prompts)])


def decode_top(model: LoadedModel, readout: LensReadout) -> list[list[str]]:
    """The top-k token strings of a readout, ``[layer+1][k]``, decoded one token at a time."""
    return [[model.tokenizer.decode([int(i)]) for i in row] for row in readout.top_ids]


def entropy_spread(entropy: np.ndarray) -> np.ndarray:
    """Spread of the entropy over prompts per layer, the standard deviation: ``[layer+1]``.

    Paper B §4.4 sees almost identical confidence among prompts in the Thought phase and
    prompt-dependent confidence in Fixation; :func:`llmdyn.phases.entropy_spread_layer` finds
    the step in this curve.

    Args:
        entropy: ``[prompt, layer+1]`` with at least two prompts.
    """
    entropy = np.asarray(entropy, dtype=float)
    if entropy.ndim != 2 or entropy.shape[0] < 2 or entropy.shape[1] < 2:
        raise LlmdynError(f"entropy must be [prompt >= 2, layer+1 >= 2], got {entropy.shape}")
    return entropy.std(axis=0)


def top_text(tokens: Sequence[str], probs, n: int = 3) -> str:
    """The first ``n`` predictions of one layer as text: "‘Paris’ 0.86, ‘the’ 0.02".

    Args:
        tokens: decoded tokens, most probable first (a row of :func:`decode_top`).
        probs: their probabilities, ``[k]``.
        n: how many to show.
    """
    return ", ".join(f"‘{tok}’ {float(prob):.2f}"
                     for tok, prob in zip(tokens[:n], list(probs)[:n], strict=True))
