"""Coupling of block Jacobians across tokens at fixed layers: self, fixed input, fixed output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from llmdyn import LlmdynError
from llmdyn.core import checks
from llmdyn.core.arrays import host_array, off_diagonal
from llmdyn.core.store import ResultStore
from llmdyn.coupling import scores
from llmdyn.coupling.matrix import cross_matrices_checked
from llmdyn.coupling.topk import top_singular_checked
from llmdyn.jacobians.cache import cached_per_prompt
from llmdyn.jacobians.full import block_jacobians
from llmdyn.jacobians.svd import square_jacobians
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint, check_last_point, encode

Kind = Literal["self", "fixed_input", "fixed_output"]
KINDS: tuple[Kind, ...] = ("self", "fixed_input", "fixed_output")

# What each tile of a kind compares (paper A §3.1 "Token-wise coupling"), for the figure labels.
KIND_TITLES: dict[str, str] = {  # matplotlib mathtext
    "self": r"self-coupling: $J^{l}_{tt}$ vs $J^{l'}_{t't'}$",
    "fixed_input": r"fixed input token: $J^{l}_{t_1t_2}$ vs $J^{l'}_{t_1t_2'}$",
    "fixed_output": r"fixed output token: $J^{l}_{t_1t_2}$ vs $J^{l'}_{t_1't_2}$",
}


def kind_pairs(kind: Kind, n_tok: int, *, input_token: int = 0,
               output_token: int = -1) -> list[tuple[int, int]]:
    """Token pairs (t1, t2) whose Jacobians J_{t1 t2} one kind of coupling compares, in tile order.

    ``"self"``: (t, t) for every t; ``"fixed_input"``: (t1, t2) for t2 = t1 … n−1 with
    t1 = ``input_token``; ``"fixed_output"``: (t1, t2) for t1 = 0 … t2 with t2 = ``output_token``.
    Pairs with t1 > t2 are left out: causal attention makes those Jacobians zero.

    Args:
        kind: one of `KINDS`.
        n_tok: prompt length in tokens.
        input_token: t1 of fixed-input coupling; negative counts from the end.
        output_token: t2 of fixed-output coupling; negative counts from the end.

    Returns:
        Non-negative (t1, t2) pairs; tile (i, j) of the kind's grid compares pair i with pair j.
    """
    if isinstance(n_tok, bool) or not isinstance(n_tok, int) or n_tok < 1:
        raise LlmdynError(f"n_tok: got {n_tok!r}; expected a positive int")
    for name, t in (("input_token", input_token), ("output_token", output_token)):
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or not -n_tok <= t < n_tok:
            raise LlmdynError(f"{name}: got {t!r}; expected an int in [{-n_tok}, {n_tok}) for a "
                              f"prompt of {n_tok} tokens")
    t1, t2 = int(input_token) % n_tok, int(output_token) % n_tok
    if kind == "self":
        return [(t, t) for t in range(n_tok)]
    if kind == "fixed_input":
        return [(t1, t) for t in range(t1, n_tok)]
    if kind == "fixed_output":
        return [(t, t2) for t in range(t2 + 1)]
    raise LlmdynError(f"kind: got {kind!r}; expected one of {KINDS}")


def cross_coupling(J: torch.Tensor, J_ref: torch.Tensor, k: int) -> torch.Tensor:
    """Coupling of every J_i in the top-k singular bases of every J_ref[j] (paper A eq. 10).

    ``A[i, j] = U_j,k^T J[i] V_j,k`` where ``J_ref[j] = U_j S_j V_j^T``. When ``J_ref`` is ``J``
    this is :func:`llmdyn.coupling.matrix.coupling_matrices`; here the rows and the references
    may differ (layer l against layer l′).

    Args:
        J: ``[tok, d_model, d_model]`` Jacobians being coupled (rows = outputs).
        J_ref: ``[tok, d_model, d_model]`` Jacobians whose singular vectors form the bases.
        k: number of top singular vectors kept, 1 <= k <= d_model.

    Returns:
        ``[tok, tok, k, k]`` (axis 0: coupled Jacobian i, axis 1: reference j).
    """
    J = square_jacobians(J, "J", stack=True)
    J_ref = square_jacobians(J_ref, "J_ref", stack=True)
    if J.shape[1:] != J_ref.shape[1:]:
        raise LlmdynError(f"J_ref: got shape {tuple(J_ref.shape)}; expected [tok, "
                          f"{J.shape[1]}, {J.shape[2]}] like J {tuple(J.shape)}")
    checks.k_value(k, J.shape[-1])
    return _cross_coupling(J, J_ref, k)


def _cross_coupling(J: torch.Tensor, J_ref: torch.Tensor, k: int) -> torch.Tensor:
    """:func:`cross_coupling` once the caller has checked the stacks and ``k``."""
    # Only the top k triplets of each reference enter A: the Gram route of
    # :func:`llmdyn.coupling.topk.top_singular`, then two matrix products (as depth coupling).
    return cross_matrices_checked(J, top_singular_checked(J_ref, k), k)  # [tok, tok, k, k]


@dataclass(frozen=True)
class TokenCoupling:
    """One kind of coupling across tokens at fixed layers l (rows) and l′ (references).

    Attributes:
        kind: ``"self"``, ``"fixed_input"`` or ``"fixed_output"``.
        pairs: ``[tok, 2]`` the (t1, t2) of the Jacobian behind each row and column of the grid.
        A: ``[tok, tok, k, k]``; tile (i, j) is ``U_l′^T J^l_{pairs[i]} V_l′`` with U, V the top-k
            singular vectors of ``J^l′_{pairs[j]}`` (paper A eq. 10).
    """

    kind: str
    pairs: np.ndarray
    A: np.ndarray

    def __post_init__(self) -> None:
        """Check that the grid has one row and one column per token pair."""
        n = len(self.pairs)
        if self.pairs.shape != (n, 2) or self.A.ndim != 4 or self.A.shape[:2] != (n, n):
            raise LlmdynError(f"TokenCoupling: pairs {self.pairs.shape} and A {self.A.shape} "
                              "do not match; expected [tok, 2] and [tok, tok, k, k]")

    @property
    def miscoupling(self) -> np.ndarray:
        """``[tok, tok]`` miscoupling m̃ (paper A eq. 14) in float64; NaN for all-zero tiles."""
        return host_array(scores.miscoupling(self.A.astype(np.float64)))

    @property
    def diagonal_share(self) -> np.ndarray:
        """``[tok, tok]`` diagonal share 1 − m̃²: the part of ‖A‖_F² on the diagonal (≈ 1/k)."""
        return scores.diagonal_share(self.miscoupling)

    def offdiagonal(self, score: Literal["miscoupling", "diagonal_share"] = "diagonal_share"
                    ) -> np.ndarray:
        """A score on the tiles i ≠ j (different token pairs), flattened: ``[tok * (tok - 1)]``."""
        M = getattr(self, score)
        return M[off_diagonal(len(M))]


def _compute(model: LoadedModel, prompt: str, layers: list[int], kinds: Sequence[str], k: int,
             input_token: int, output_token: int, last_point: LastPoint = "final_norm",
             control: bool = False, cut_long_prompts: bool = False) -> dict[str, np.ndarray]:
    n_tok = encode(model, prompt, cut_long_prompts=cut_long_prompts).shape[1]
    wanted = {kind: kind_pairs(kind, n_tok, input_token=input_token, output_token=output_token)
              for kind in kinds}
    out = {}
    for kind, pairs in wanted.items():
        # One call per kind keeps each cheap: d products for all of a kind's pairs (every J_tt
        # from own-position products, one t1 by forward products, one t2 by reverse products),
        # where their union would cost d reverse products per token.
        J = block_jacobians(model, prompt, layers, pairs=pairs, progress=False,
                            last_point=last_point,
                            cut_long_prompts=cut_long_prompts)  # [2|1, pair, d, d]
        row, ref = J[0], J[-1]  # layer l and layer l′ (the same when l = l′)
        out[f"{kind}_A"] = host_array(_cross_coupling(row, ref, k))  # [tok, tok, k, k]; k checked
        out[f"{kind}_pairs"] = np.array(pairs, dtype=np.int64)  # [tok, 2]
        if control:  # l′ = l from the same Jacobians: no second pass over block l
            out[f"{kind}_A_same"] = host_array(_cross_coupling(row, row, k))
    return out


def _run(model: LoadedModel, prompts: Sequence[str], layer: int, ref_layer: int, k: int,
         input_token: int, output_token: int, kinds: Sequence[Kind], store: ResultStore | None,
         last_point: LastPoint, control: bool, cut_long_prompts: bool
         ) -> tuple[list[dict[str, np.ndarray]], list[str]]:
    """Check the arguments, then compute or load each prompt's arrays; also the kinds kept."""
    prompts = checks.prompt_texts(prompts)
    layer, = checks.layer_indices([layer], model.n_layers, "layer")
    ref_layer, = checks.layer_indices([ref_layer], model.n_layers, "ref_layer")
    kinds = list(dict.fromkeys(kinds))
    bad = [kind for kind in kinds if kind not in KINDS]
    if bad or not kinds:
        raise LlmdynError(f"kinds: got {kinds!r}; expected a non-empty subset of {KINDS}")
    checks.k_value(k, model.d_model)
    check_last_point(last_point)
    if control and layer == ref_layer:
        raise LlmdynError(f"ref_layer: got {ref_layer}, the same block as layer; the control "
                          "l′ = l needs a different ref_layer (or call token_coupling)")
    layers = [int(layer)] if layer == ref_layer else [int(layer), int(ref_layer)]

    def compute(prompt: str) -> dict[str, np.ndarray]:
        return _compute(model, prompt, layers, kinds, k, input_token, output_token, last_point,
                        control, cut_long_prompts)

    params = {"layer": int(layer), "ref_layer": int(ref_layer), "k": k, "kinds": kinds,
              "input_token": int(input_token), "output_token": int(output_token),
              "dtype": "float32", "last_point": last_point}
    if control:  # only then, so results cached without the control keep their key
        params["same_layer_control"] = True
    return cached_per_prompt(store, "token_coupling", model, params, prompts, compute,
                             cut_long_prompts=cut_long_prompts), kinds


def token_coupling(
    model: LoadedModel,
    prompts: Sequence[str],
    *,
    layer: int,
    ref_layer: int,
    k: int,
    input_token: int = 0,
    output_token: int = -1,
    kinds: Sequence[Kind] = KINDS,
    store: ResultStore | None = None,
    last_point: LastPoint = "final_norm",
    cut_long_prompts: bool = False,
) -> list[dict[str, TokenCoupling]]:
    """Coupling across tokens at blocks l = ``layer`` and l′ = ``ref_layer``, cached per prompt.

    Each kind costs d_model products per block and prompt, whatever the prompt's length: every
    J_tt of self-coupling from own-position reverse products, every J_{t1 t2} of fixed-input
    coupling from forward products at t1, every J_{t1 t2} of fixed-output coupling from reverse
    products at t2 (:func:`llmdyn.jacobians.block_jacobians`).

    Args:
        model: a loaded model.
        prompts: texts; each is one cached item.
        layer: 0-based block l whose Jacobians are expressed (rows of each grid).
        ref_layer: 0-based block l′ whose singular vectors form the bases (columns); equal to
            ``layer`` makes the diagonal tiles trivially diagonal.
        k: number of top singular vectors kept.
        input_token: t1 of fixed-input coupling (negative counts from the end).
        output_token: t2 of fixed-output coupling (negative counts from the end).
        kinds: which kinds to compute (default all three).
        store: results cache (None: compute without caching).
        last_point: ``"final_norm"`` (the papers': the last block includes the final norm) or
            ``"block_output"``; matters only when the last block is one of the two.
        cut_long_prompts: keep the end of a prompt longer than the context
            (:func:`llmdyn.trace.encode`; False: such a prompt raises).

    Returns:
        One dict per prompt, kind -> :class:`TokenCoupling`.
    """
    results, kinds = _run(model, prompts, layer, ref_layer, k, input_token, output_token, kinds,
                          store, last_point, control=False, cut_long_prompts=cut_long_prompts)
    return [{kind: TokenCoupling(kind, r[f"{kind}_pairs"], r[f"{kind}_A"]) for kind in kinds}
            for r in results]


def token_coupling_with_control(
    model: LoadedModel,
    prompts: Sequence[str],
    *,
    layer: int,
    ref_layer: int,
    k: int,
    input_token: int = 0,
    output_token: int = -1,
    kinds: Sequence[Kind] = KINDS,
    store: ResultStore | None = None,
    last_point: LastPoint = "final_norm",
    cut_long_prompts: bool = False,
) -> tuple[list[dict[str, TokenCoupling]], list[dict[str, TokenCoupling]]]:
    """:func:`token_coupling` at (l, l′) and its control l′ = l from one Jacobian pass.

    The control expresses J^l in the singular vectors of J^l itself (``ref_layer`` replaced by
    ``layer``). Its Jacobians are the rows of the main grid, so it needs no pass of its own:
    this costs one pass over blocks l and l′, where two calls of :func:`token_coupling` cost
    that plus a second pass over block l. Arguments as :func:`token_coupling`, with ``layer``
    and ``ref_layer`` different blocks.

    Returns:
        (main, control): one dict per prompt each, kind -> :class:`TokenCoupling`; equal to
        ``token_coupling(..., ref_layer=ref_layer)`` and ``token_coupling(..., ref_layer=layer)``.
    """
    results, kinds = _run(model, prompts, layer, ref_layer, k, input_token, output_token, kinds,
                          store, last_point, control=True, cut_long_prompts=cut_long_prompts)
    main = [{kind: TokenCoupling(kind, r[f"{kind}_pairs"], r[f"{kind}_A"]) for kind in kinds}
            for r in results]
    same = [{kind: TokenCoupling(kind, r[f"{kind}_pairs"], r[f"{kind}_A_same"]) for kind in kinds}
            for r in results]
    return main, same


@dataclass(frozen=True)
class CouplingSummary:
    """Scores of one kind of coupling over the off-diagonal tiles of several prompts.

    Attributes:
        miscoupling: mean m̃(A) over tiles i ≠ j (1 = no coupling, 0 = perfectly diagonal).
        diagonal_share: mean diagonal share 1 − m̃(A)² over the same tiles (chance about 1/k).
        diagonal_share_cv: coefficient of variation (std / mean) of the shares across tiles: how
            consistent the coupling is from one token pair to another.
        n_tiles: number of tiles averaged (zero tiles are skipped).
    """

    miscoupling: float
    diagonal_share: float
    diagonal_share_cv: float
    n_tiles: int


def _tile_miscoupling(couplings: Sequence[TokenCoupling]) -> np.ndarray:
    """``[tile]`` m̃ of every finite off-diagonal tile of grids of one kind."""
    if not couplings:
        raise LlmdynError("couplings is empty; pass at least one TokenCoupling")
    kinds = {c.kind for c in couplings}
    if len(kinds) != 1:
        raise LlmdynError(f"couplings mix kinds {sorted(kinds)}; summarise one kind at a time")
    m = np.concatenate([c.offdiagonal("miscoupling") for c in couplings])
    return m[np.isfinite(m)]


def tile_shares(couplings: Sequence[TokenCoupling]) -> np.ndarray:
    """``[tile]`` diagonal shares 1 − m̃² of every finite off-diagonal tile of several grids.

    Args:
        couplings: grids of one kind (e.g. one per prompt).

    Returns:
        The pooled per-tile shares (empty when no grid has an off-diagonal tile): the samples
        a claim's bootstrap interval resamples.
    """
    return scores.diagonal_share(_tile_miscoupling(couplings))


def summarize(couplings: Sequence[TokenCoupling]) -> CouplingSummary:
    """Pool the off-diagonal tiles of several prompts' grids of one kind into one summary.

    Args:
        couplings: grids of the same kind (e.g. one per prompt).

    Returns:
        The summary; NaN scores when no grid has an off-diagonal tile (one-token grids).
    """
    m = _tile_miscoupling(couplings)  # [tile]
    if m.size == 0:
        return CouplingSummary(np.nan, np.nan, np.nan, 0)
    share = scores.diagonal_share(m)  # [tile]
    return CouplingSummary(miscoupling=float(m.mean()), diagonal_share=float(share.mean()),
                           diagonal_share_cv=float(share.std() / share.mean()),
                           n_tiles=int(m.size))


def summarize_kinds(results: Sequence[Mapping[str, TokenCoupling]]) -> dict[str, CouplingSummary]:
    """:func:`summarize` each kind of coupling over several prompts' results.

    Args:
        results: one dict per prompt, kind -> grid, as :func:`token_coupling` returns.

    Returns:
        kind -> summary pooled over the prompts, for the kinds of the first prompt, in order.
    """
    if not results:
        raise LlmdynError("results is empty; pass at least one prompt's token_coupling result")
    return {kind: summarize([r[kind] for r in results]) for kind in results[0]}


def kind_shares(results: Sequence[Mapping[str, TokenCoupling]]) -> dict[str, np.ndarray]:
    """Pooled ``[tile]`` diagonal shares (:func:`tile_shares`) of each kind over prompts."""
    if not results:
        raise LlmdynError("results is empty; pass at least one prompt's token_coupling result")
    return {kind: tile_shares([r[kind] for r in results]) for kind in results[0]}


def prompt_shares(results: Sequence[Mapping[str, TokenCoupling]]) -> dict[str, np.ndarray]:
    """Each prompt's mean diagonal share over its off-diagonal tiles, per kind: ``[prompt]``.

    The tiles of one prompt share its context, so a claim is judged over prompts on these
    means (`llmdyn.claims.units`); a prompt with no finite off-diagonal tile gets NaN.

    Args:
        results: one dict per prompt, kind -> grid, as :func:`token_coupling` returns.

    Returns:
        kind -> ``[prompt]`` means, for the kinds of the first prompt, in order.
    """
    if not results:
        raise LlmdynError("results is empty; pass at least one prompt's token_coupling result")
    out = {}
    for kind in results[0]:
        shares = [tile_shares([r[kind]]) for r in results]
        out[kind] = np.array([s.mean() if s.size else np.nan for s in shares])
    return out


def complete_prompts(shares: Mapping[str, Mapping[str, np.ndarray]]) -> np.ndarray:
    """Indices of the prompts with a finite share in every state and kind: ``[prompt]``.

    A prompt too short for some tile has NaN there (`prompt_shares`); paired ratios compare
    the same prompts in every state, so a claim keeps only the prompts complete in all.

    Args:
        shares: state (e.g. "trained") -> kind -> ``[prompt]`` means, as `prompt_shares` gives.
    """
    stacked = np.stack([v for kinds in shares.values() for v in kinds.values()])  # [s·k, prompt]
    return np.flatnonzero(np.isfinite(stacked).all(0))


def shares_by_prompt(values, ids: Sequence[str], kept: Sequence[int]) -> dict[str, float]:
    """``{prompt id: value}`` over the ``kept`` prompts (`complete_prompts`) whose value is finite.

    Args:
        values: ``[prompt]`` one number per prompt, in the order of ``ids``.
        ids: ``[prompt]`` every prompt's id.
        kept: indices of the prompts a claim may use.
    """
    values = np.asarray(values, dtype=np.float64)
    return {ids[i]: float(values[i]) for i in kept if np.isfinite(values[i])}
