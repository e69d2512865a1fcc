"""Does x^L ≈ ∏(I + J^l) x^0 hold? The linearised last-token dynamics against the true states."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.core.store import ResultStore
from llmdyn.jacobians.cache import cached_per_prompt
from llmdyn.jacobians.last_token import last_token_jacobians
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, encode, one_logit, with_final_norm

NoiseTokens = Literal["all", "last"]


def propagate(jacobians, x0) -> np.ndarray:
    """The linearised system x̂^l = (I + J^l) x̂^{l−1}, x̂^0 = x^0 (paper A §6.1, eq. 23).

    Args:
        jacobians: ``[layer, d_model, d_model]`` block Jacobians J^1 … J^L (rows = outputs).
        x0: starting points ``[..., d_model]``.

    Returns:
        ``[..., layer+1, d_model]`` float64: x̂^0 … x̂^L.
    """
    J = np.asarray(jacobians, dtype=np.float64)
    x = np.asarray(x0, dtype=np.float64)
    if J.ndim != 3 or J.shape[1] != J.shape[2] or x.shape[-1] != J.shape[-1]:
        raise LlmdynError(f"jacobians must be [layer, d_model, d_model] and x0 [..., d_model] "
                          f"with the same d_model, got {J.shape} and {x.shape}")
    out = [x]
    for Jl in J:
        x = x + x @ Jl.T  # [..., d_model]: (I + J) x for row vectors
        out.append(x)
    return np.stack(out, axis=-2)  # [..., layer+1, d_model]


def cosine(a, b) -> np.ndarray:
    """Cosine similarity along the last axis; ``[..., d] × [..., d] → [...]``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    if (den == 0).any():
        raise LlmdynError("cosine of a zero vector is undefined")
    return (a * b).sum(-1) / den


def relative_noise(x0: torch.Tensor, level: float, n_draws: int, generator: torch.Generator,
                   tokens: NoiseTokens = "all") -> torch.Tensor:
    """Gaussian directions scaled to ``level`` × each token's embedding norm.

    Args:
        x0: input embeddings X^0, ``[tok, d_model]``.
        level: relative size ‖δ_t‖ / ‖x_t^0‖.
        n_draws: independent draws.
        generator: torch generator (seeded by the caller).
        tokens: perturb every token (``"all"``) or only the last one (``"last"``).

    Returns:
        ``[draw, tok, d_model]``.
    """
    if level < 0:
        raise LlmdynError(f"noise level must be >= 0, got {level}")
    if tokens not in ("all", "last"):
        raise LlmdynError(f"tokens must be 'all' or 'last', got {tokens!r}")
    g = torch.randn((n_draws, *x0.shape), generator=generator, dtype=torch.float64)
    g = g / g.norm(dim=-1, keepdim=True)  # [draw, tok, d_model] unit directions
    noise = level * x0.norm(dim=-1, keepdim=True).double() * g
    if tokens == "last":
        noise[:, :-1] = 0
    return noise.to(x0.dtype)


def perturbed_last_states(model: LoadedModel, input_ids: torch.Tensor,
                          noise: torch.Tensor | None = None, *,
                          last_point: LastPoint = "final_norm"
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the model with X^0 + noise and keep the last token's state at every block boundary.

    The noise is added to the input of the first block (the embeddings as the blocks see them,
    after any embedding scale or position embedding), through a forward pre-hook.

    Args:
        model: a loaded model.
        input_ids: ``[1, tok]``.
        noise: ``[draw, tok, d_model]`` (None: one clean run).
        last_point: ``"final_norm"`` (the papers': x^L after the final norm) or
            ``"block_output"``.

    Returns:
        The clean X^0 ``[tok, d_model]`` and the last token's states ``[draw, layer+1, d_model]``,
        on the CPU whatever the model's device (the noise may be on either).
    """
    n_draws = 1 if noise is None else noise.shape[0]
    x0: list[torch.Tensor] = []
    states: list[torch.Tensor] = []

    def add_noise(_module, args, kwargs):
        hidden = args[0]  # [draw, tok, d_model]
        x0.append(hidden[0].detach().clone())
        if noise is not None:
            hidden = hidden + noise.to(hidden.device, hidden.dtype)
        states.append(hidden[:, -1].detach())
        return (hidden, *args[1:]), kwargs

    def keep(_module, _args, output):
        out = output[0] if isinstance(output, tuple) else output
        states.append(out[:, -1].detach())  # [draw, d_model]

    blocks = model.blocks
    handles = [blocks[0].register_forward_pre_hook(add_noise, with_kwargs=True)]
    handles += [b.register_forward_hook(keep) for b in blocks]
    try:
        with torch.no_grad():
            model.hf(input_ids.expand(n_draws, -1), use_cache=False, **one_logit(model))
    finally:
        for handle in handles:
            handle.remove()
    out = torch.stack(states, dim=1)  # [draw, layer+1, d_model]
    if check_last_point(last_point) == "final_norm":
        out = with_final_norm(model, out.transpose(0, 1)).transpose(0, 1)
    # on the host, where the check's float64 numpy arithmetic runs (a no-op on the CPU)
    return x0[0].cpu(), out.cpu()  # [tok, d_model], [draw, layer+1, d_model]


@dataclass(frozen=True)
class LinearizationCheck:
    """Cosine similarity of linearised and true last-token states (paper A Fig 32).

    Attributes:
        levels: ``[level]`` relative noise sizes ‖δ_t‖ / ‖x_t^0‖.
        cos_clean: ``[layer+1]`` cos(∏(I + J) x^0, x^l) on the clean prompt.
        cos_state: ``[level, draw, layer+1]`` the paper's check: cos(∏(I + J) x̃^0, x̃^l), with
            x̃ the true states of the perturbed input and J the clean Jacobians.
        cos_step: ``[level, draw, layer+1]`` one block at a time: cos((I + J^l) x̃^{l−1},
            x̃^l) from the true perturbed input of each block (1 at l = 0).
        cos_delta: ``[level, draw, layer+1]`` first-order check: the last token alone is
            perturbed by δ and cos(∏(I + J) δ, x̃^l − x^l) is taken; → 1 as δ → 0 if the
            Jacobians are right, whatever the bias terms.
    """

    levels: np.ndarray
    cos_clean: np.ndarray
    cos_state: np.ndarray
    cos_step: np.ndarray
    cos_delta: np.ndarray

    def __post_init__(self) -> None:
        """Check that the shapes agree."""
        if self.cos_state.ndim != 3:
            raise LlmdynError(f"cos_state must be [level, draw, layer+1], got shape "
                              f"{self.cos_state.shape}")
        n_level, n_draw, n_points = self.cos_state.shape
        if not (self.levels.shape == (n_level,) and self.cos_clean.shape == (n_points,)
                and self.cos_step.shape == self.cos_delta.shape == (n_level, n_draw, n_points)):
            raise LlmdynError(
                f"LinearizationCheck fields disagree: levels {self.levels.shape}, cos_clean "
                f"{self.cos_clean.shape}, cos_step {self.cos_step.shape}, cos_delta "
                f"{self.cos_delta.shape}; expected ({n_level},), ({n_points},) and "
                f"{(n_level, n_draw, n_points)} from cos_state (a stale or corrupt cache entry: "
                f"delete it to recompute)")

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The fields by name, for the results store."""
        names = ("levels", "cos_clean", "cos_state", "cos_step", "cos_delta")
        return {k: getattr(self, k) for k in names}

    def draw_mean(self, field: Literal["cos_state", "cos_step", "cos_delta"], level: int,
                  layer: int) -> float:
        """The mean over the noise draws of one cosine at one level and layer.

        The draws perturb one prompt, so they are not independent units: a claim takes this
        one number per prompt (`llmdyn.claims.units`).
        """
        return float(getattr(self, field)[level, :, layer].mean())


def draw_means(checks: Sequence[LinearizationCheck], ids: Sequence[str],
               field: Literal["cos_state", "cos_step", "cos_delta"], level: int,
               layer: int) -> dict[str, float]:
    """``{prompt id: mean over its noise draws}`` of one cosine: one number per prompt.

    Args:
        checks: ``[prompt]`` one check per prompt, in the order of ``ids``.
        ids: ``[prompt]`` the prompts' ids.
        field: which cosine.
        level: index of the noise level.
        layer: the layer read.
    """
    return {i: c.draw_mean(field, level, layer) for i, c in zip(ids, checks, strict=True)}


def linearization_check(
    model: LoadedModel,
    prompt: str,
    levels: Sequence[float],
    *,
    n_draws: int = 8,
    seed: int = 0,
    tokens: NoiseTokens = "all",
    jacobians: torch.Tensor | np.ndarray | None = None,
    last_point: LastPoint = "final_norm",
    cut_long_prompts: bool = False,
) -> LinearizationCheck:
    """Compare the product of (I + J^l_{nn}) along depth with the true last-token states.

    J^l_{nn} are the last token's block Jacobians at the clean prompt. For each noise level,
    ``n_draws`` perturbed copies of the input embeddings are run through the real model.

    Args:
        model: a loaded model.
        prompt: the text.
        levels: relative noise sizes, each > 0.
        n_draws: perturbations per level.
        seed: seed of the noise.
        tokens: which input embeddings the paper's check perturbs (``"all"`` or ``"last"``).
        jacobians: ``[layer, d_model, d_model]`` precomputed J^l_{nn} (None: computed here),
            under the same `last_point`.
        last_point: ``"final_norm"`` (the papers': the last block and x^L include the final
            norm) or ``"block_output"``.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        The cosine similarities at every depth.
    """
    levels = [float(v) for v in levels]
    if not levels or min(levels) <= 0:
        raise LlmdynError(f"levels must be non-empty and > 0, got {levels}")
    if not isinstance(n_draws, int) or n_draws < 1:
        raise LlmdynError(f"n_draws must be a positive int, got {n_draws!r}")
    ids = encode(model, prompt, cut_long_prompts=cut_long_prompts)
    check_last_point(last_point)
    J = _clean_jacobians(model, prompt, jacobians, last_point,
                         cut_long_prompts)  # [layer, d_model, d_model], float64
    x0, clean = perturbed_last_states(  # [tok, d_model], [1, layer+1, d_model]
        model, ids, last_point=last_point)
    clean = clean[0].double().numpy()  # [layer+1, d_model]
    cos_clean = cosine(propagate(J, x0[-1]), clean)
    generator = torch.Generator().manual_seed(seed)
    cos_state, cos_step, cos_delta = [], [], []
    for level in levels:
        noise = relative_noise(x0, level, n_draws, generator, tokens)  # [draw, tok, d_model]
        state, step = _perturbed_cosines(model, ids, J, x0, noise, last_point)
        cos_state.append(state)
        cos_step.append(step)
        cos_delta.append(_first_order_cosines(model, ids, J, noise, clean, last_point))
    return LinearizationCheck(levels=np.asarray(levels), cos_clean=cos_clean,
                              cos_state=np.stack(cos_state), cos_step=np.stack(cos_step),
                              cos_delta=np.stack(cos_delta))


def linearization_checks(
    model: LoadedModel,
    prompts: Sequence[str],
    levels: Sequence[float],
    *,
    n_draws: int = 8,
    seed: int = 0,
    tokens: NoiseTokens = "all",
    block_output: bool = False,
    store: ResultStore | None = None,
    cut_long_prompts: bool = False,
) -> tuple[list[LinearizationCheck], list[LinearizationCheck] | None]:
    """:func:`linearization_check` of several prompts, cached per prompt, with its variant.

    The variant ends the last block at its raw output (``last_point="block_output"``). Its
    Jacobians are the papers' ones except the last block's (the final norm only acts there;
    the same bits, tested), so it costs one more block, not another pass over every block.
    The cache key is built here, once: ``linearization`` with the levels, draws, seed and
    noise tokens, ``last_point`` added for the variant, the route's (:func:`.cache.jacobian_key`).

    Args:
        model: a loaded model.
        prompts: texts; each is one cached item.
        levels: relative noise sizes, each > 0.
        n_draws: perturbations per level.
        seed: seed of the noise (the same draws for every prompt of one length).
        tokens: which input embeddings are perturbed (``"all"`` or ``"last"``).
        block_output: also compute the variant.
        store: results cache (None: compute without caching).
        cut_long_prompts: cut a prompt longer than the context to its end (False: it raises).

    Returns:
        ``(checks, variant)``: one :class:`LinearizationCheck` per prompt each; variant None
        unless ``block_output``.
    """
    prompts = checks.prompt_texts(prompts)
    params = {"levels": [float(v) for v in levels], "n_draws": n_draws, "seed": seed,
              "tokens": tokens, "dtype": "float32", "protocol": 2}
    run = dict(levels=levels, n_draws=n_draws, seed=seed, tokens=tokens,
               cut_long_prompts=cut_long_prompts)
    jacobians: dict[str, torch.Tensor] = {}  # each prompt's J^l [layer, d_model, d_model]

    def papers(prompt: str) -> dict[str, np.ndarray]:
        J = last_token_jacobians(model, prompt, cut_long_prompts=cut_long_prompts)
        jacobians[prompt] = J  # the final norm in the last; the variant reuses the others
        return linearization_check(model, prompt, jacobians=J, **run).as_arrays()

    def variant(prompt: str) -> dict[str, np.ndarray]:
        J = _block_output_jacobians(model, prompt, jacobians.pop(prompt, None), cut_long_prompts)
        return linearization_check(model, prompt, jacobians=J, last_point="block_output",
                                   **run).as_arrays()

    main, other = [], []
    for prompt in prompts:  # prompt by prompt: one prompt's J^l held at a time
        main.append(_cached(store, model, params, prompt, papers, cut_long_prompts))
        if block_output:
            other.append(_cached(store, model, {**params, "last_point": "block_output"}, prompt,
                                 variant, cut_long_prompts))
        jacobians.clear()
    return main, (other if block_output else None)


def _block_output_jacobians(model: LoadedModel, prompt: str, papers: torch.Tensor | None,
                            cut_long_prompts: bool) -> torch.Tensor:
    """J^l ``[layer, d_model, d_model]`` for ``last_point="block_output"``: the last differs."""
    J = last_token_jacobians(model, prompt, cut_long_prompts=cut_long_prompts) if papers is None \
        else papers
    last = last_token_jacobians(model, prompt, [model.n_layers - 1], last_point="block_output",
                                cut_long_prompts=cut_long_prompts)  # [1, d_model, d_model]
    return torch.cat([J[:-1], last])  # blocks before the last are the same either way


def _cached(store: ResultStore | None, model: LoadedModel, params: dict, prompt: str, compute,
            cut_long_prompts: bool) -> LinearizationCheck:
    """One prompt's check from the ``linearization`` cache, computed where missing."""
    arrays, = cached_per_prompt(store, "linearization", model, params, [prompt], compute,
                                cut_long_prompts=cut_long_prompts)
    return LinearizationCheck(**arrays)


def _clean_jacobians(model: LoadedModel, prompt: str, jacobians: torch.Tensor | np.ndarray | None,
                     last_point: LastPoint, cut_long_prompts: bool) -> np.ndarray:
    """J^l_{nn} of every block at the clean prompt, float64: given (shape checked) or computed."""
    J = last_token_jacobians(model, prompt, last_point=last_point,
                             cut_long_prompts=cut_long_prompts) if jacobians is None \
        else jacobians
    if tuple(J.shape) != (model.n_layers, model.d_model, model.d_model):
        raise LlmdynError(f"jacobians must be [{model.n_layers}, {model.d_model}, "
                          f"{model.d_model}] (every block), got {tuple(J.shape)}")
    return np.asarray(J.detach().cpu() if torch.is_tensor(J) else J, dtype=np.float64)


def _perturbed_cosines(model: LoadedModel, ids: torch.Tensor, J: np.ndarray, x0: torch.Tensor,
                       noise: torch.Tensor, last_point: LastPoint
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The paper's check and the one-block check on perturbed inputs, ``[draw, layer+1]`` each.

    ``noise`` is ``[draw, tok, d_model]``, added to the input embeddings ``x0``.
    """
    _, true = perturbed_last_states(model, ids, noise, last_point=last_point)
    start = x0[-1].double().numpy() + noise[:, -1].double().numpy()  # [draw, d_model]
    true = true.double().numpy()  # [draw, layer+1, d_model]
    one_step = true[:, :-1] + np.einsum("lij,blj->bli", J, true[:, :-1])
    step = np.concatenate([np.ones((len(noise), 1)), cosine(one_step, true[:, 1:])],
                          axis=1)  # [draw, layer+1]: (I + J^l) x̃^{l-1} vs x̃^l
    return cosine(propagate(J, start), true), step


def _first_order_cosines(model: LoadedModel, ids: torch.Tensor, J: np.ndarray,
                         noise: torch.Tensor, clean: np.ndarray,
                         last_point: LastPoint) -> np.ndarray:
    """cos(∏(I + J) δ, x̃^l − x^l) with only the last token perturbed, ``[draw, layer+1]``."""
    last = noise.clone()
    last[:, :-1] = 0  # the first-order check perturbs the last token only
    _, moved = perturbed_last_states(model, ids, last, last_point=last_point)
    delta = propagate(J, last[:, -1].double().numpy())  # [draw, layer+1, d_model]
    return cosine(delta, moved.double().numpy() - clean)
