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
from llmdyn.jacobians.perturbed import (
    NoiseTokens,
    at_last_point,
    perturbed_last_states,
    relative_noise,
)
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, encode


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
    levels = _checked_run(levels, n_draws)
    ids = encode(model, prompt, cut_long_prompts=cut_long_prompts)
    check_last_point(last_point)
    J = _clean_jacobians(model, prompt, jacobians, last_point,
                         cut_long_prompts)  # [layer, d_model, d_model], float64
    return checks_of_one_run(model, ids, levels, {last_point: J}, n_draws=n_draws, seed=seed,
                             tokens=tokens)[last_point]


def checks_of_one_run(model: LoadedModel, ids: torch.Tensor, levels: Sequence[float],
                      jacobians: dict[LastPoint, np.ndarray], *, n_draws: int, seed: int,
                      tokens: NoiseTokens) -> dict[LastPoint, LinearizationCheck]:
    """The check under each end-point convention in ``jacobians``, from one set of model runs.

    The conventions differ only in the last point (the final norm or not), which is applied
    after the run (:func:`llmdyn.trace.with_final_norm`). So the same noise through the same
    passes serves both: the same bits as one run per convention, at half the passes for two.

    Args:
        model: a loaded model.
        ids: ``[1, tok]`` the prompt's tokens.
        levels: relative noise sizes, each > 0.
        jacobians: ``{last_point: [layer, d_model, d_model]}`` float64 J^l_{nn} under each
            convention wanted.
        n_draws: perturbations per level.
        seed: seed of the noise (one generator, drawn level after level).
        tokens: which input embeddings the paper's check perturbs.
    """
    x0, clean = perturbed_last_states(model, ids, last_point="block_output")
    generator = torch.Generator().manual_seed(seed)
    runs = []  # per level: the noise, its true states, the last-token noise, its states
    for level in levels:
        noise = relative_noise(x0, level, n_draws, generator, tokens)  # [draw, tok, d_model]
        _, true = perturbed_last_states(model, ids, noise, last_point="block_output")
        last = noise.clone()
        last[:, :-1] = 0  # the first-order check perturbs the last token only
        _, moved = perturbed_last_states(model, ids, last, last_point="block_output")
        runs.append((noise, true, last, moved))
    return {point: _check(model, point, J, levels, x0, clean, runs)
            for point, J in jacobians.items()}


def _check(model: LoadedModel, last_point: LastPoint, J: np.ndarray, levels: Sequence[float],
           x0: torch.Tensor, clean: torch.Tensor, runs: list) -> LinearizationCheck:
    """One convention's check from the block-output states of :func:`checks_of_one_run`."""
    clean = at_last_point(model, clean, last_point)[0].double().numpy()  # [layer+1, d_model]
    cos_state, cos_step, cos_delta = [], [], []
    for noise, true, last, moved in runs:
        state, step = _perturbed_cosines(J, x0, noise, at_last_point(model, true, last_point))
        cos_state.append(state)
        cos_step.append(step)
        moved = at_last_point(model, moved, last_point)
        cos_delta.append(_first_order_cosines(J, last, moved, clean))
    return LinearizationCheck(levels=np.asarray([float(v) for v in levels]),
                              cos_clean=cosine(propagate(J, x0[-1]), clean),
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
    the same bits, tested), so it costs one more block, not another pass over every block;
    and it is read from the papers' noisy runs (:func:`checks_of_one_run`), not run again.
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
    levels = _checked_run(levels, n_draws)
    params = {"levels": levels, "n_draws": n_draws, "seed": seed,
              "tokens": tokens, "dtype": "float32", "protocol": 2}
    run = dict(levels=levels, n_draws=n_draws, seed=seed, tokens=tokens,
               cut_long_prompts=cut_long_prompts)
    both: dict[str, dict[str, dict[str, np.ndarray]]] = {}  # prompt -> last_point -> arrays

    def reader(last_point: LastPoint):
        def compute(prompt: str) -> dict[str, np.ndarray]:
            if prompt not in both:  # one set of runs for both conventions
                both[prompt] = _papers_and_variant(model, prompt, block_output, **run)
            return both[prompt][last_point]
        return compute

    main, other = [], []
    for prompt in prompts:  # prompt by prompt: one prompt's J^l held at a time
        main.append(_cached(store, model, params, prompt, reader("final_norm"), cut_long_prompts))
        if block_output:
            other.append(_cached(store, model, {**params, "last_point": "block_output"}, prompt,
                                 reader("block_output"), cut_long_prompts))
        both.clear()
    return main, (other if block_output else None)


def _papers_and_variant(model: LoadedModel, prompt: str, block_output: bool, *,
                        levels: list[float], n_draws: int, seed: int, tokens: NoiseTokens,
                        cut_long_prompts: bool) -> dict[str, dict[str, np.ndarray]]:
    """The papers' check of one prompt, and with ``block_output`` its variant from the same runs.

    Returns ``{last_point: arrays}``. The variant's Jacobians are the papers' but the last
    block's (:func:`_block_output_jacobians`).
    """
    J = last_token_jacobians(model, prompt, cut_long_prompts=cut_long_prompts)
    wanted = {"final_norm": _clean_jacobians(model, prompt, J, "final_norm", cut_long_prompts)}
    if block_output:
        wanted["block_output"] = _clean_jacobians(
            model, prompt, _block_output_jacobians(model, prompt, J, cut_long_prompts),
            "block_output", cut_long_prompts)
    ids = encode(model, prompt, cut_long_prompts=cut_long_prompts)
    return {point: check.as_arrays() for point, check in checks_of_one_run(
        model, ids, levels, wanted, n_draws=n_draws, seed=seed, tokens=tokens).items()}


def _checked_run(levels: Sequence[float], n_draws: int) -> list[float]:
    """The noise levels as floats, after checking them and the number of draws."""
    levels = [float(v) for v in levels]
    if not levels or min(levels) <= 0:
        raise LlmdynError(f"levels must be non-empty and > 0, got {levels}")
    if not isinstance(n_draws, int) or n_draws < 1:
        raise LlmdynError(f"n_draws must be a positive int, got {n_draws!r}")
    return levels


def _block_output_jacobians(model: LoadedModel, prompt: str, papers: torch.Tensor,
                            cut_long_prompts: bool) -> torch.Tensor:
    """The papers' J^l ``[layer, d_model, d_model]`` with the last block's for ``block_output``."""
    last = last_token_jacobians(model, prompt, [model.n_layers - 1], last_point="block_output",
                                cut_long_prompts=cut_long_prompts)  # [1, d_model, d_model]
    return torch.cat([papers[:-1], last])  # blocks before the last are the same either way


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


def _perturbed_cosines(J: np.ndarray, x0: torch.Tensor, noise: torch.Tensor,
                       true: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The paper's check and the one-block check on perturbed inputs, ``[draw, layer+1]`` each.

    ``noise`` is ``[draw, tok, d_model]``, added to the input embeddings ``x0``; ``true`` the
    last token's states of that run, ``[draw, layer+1, d_model]``.
    """
    start = x0[-1].double().numpy() + noise[:, -1].double().numpy()  # [draw, d_model]
    true = true.double().numpy()  # [draw, layer+1, d_model]
    one_step = true[:, :-1] + np.einsum("lij,blj->bli", J, true[:, :-1])
    step = np.concatenate([np.ones((len(noise), 1)), cosine(one_step, true[:, 1:])],
                          axis=1)  # [draw, layer+1]: (I + J^l) x̃^{l-1} vs x̃^l
    return cosine(propagate(J, start), true), step


def _first_order_cosines(J: np.ndarray, last: torch.Tensor, moved: torch.Tensor,
                         clean: np.ndarray) -> np.ndarray:
    """cos(∏(I + J) δ, x̃^l − x^l) with only the last token perturbed, ``[draw, layer+1]``."""
    delta = propagate(J, last[:, -1].double().numpy())  # [draw, layer+1, d_model]
    return cosine(delta, moved.double().numpy() - clean)
