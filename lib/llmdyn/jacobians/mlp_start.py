"""Where the last-token route starts its reverse products: at the MLP's output projection.

In a block whose MLP output projection W reaches the residual sum with at most a norm N after
it, the first product of every reverse pass, e_k against the path through W, can be formed
directly: row k of W, or of J_N W. :mod:`llmdyn.jacobians.last_token` uses this to skip the
product of the d cotangents with W.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from llmdyn.models.architectures import ARCHITECTURES
from llmdyn.models.loading import LoadedModel
from llmdyn.trace import LastPoint

# Where a block's MLP output projection W reaches the residual sum with at most a norm N after
# it, block(x) = h(x) + N(W a(h(x))) and J = J_h + J_N W J_a. Reverse products may then start
# from the rows of J_N W at a rather than from e_k at the output, which skips the product of
# the d cotangents with W: a third of the MLP's multiply-adds. Without a norm the rows are
# W[k] (Llama); after Gemma's RMS norm they are a diagonal minus a rank one times W, which
# costs O(d·d_mlp) in all. Module -> (projection path, norm path or None), from each family's
# record (``Architecture.mlp_output``).
MLP_OUTPUT = {a.module: a.mlp_output for a in ARCHITECTURES.values() if a.mlp_output}


@dataclass(frozen=True)
class MlpOutput:
    """A block's MLP output projection, and the norm between it and the residual sum if any."""

    projection: torch.nn.Linear
    norm: torch.nn.Module | None

    def rows(self, z: torch.Tensor | None, prompts: int) -> torch.Tensor:
        """Row k of J_N W for each prompt, ``[d_model, prompt, d_mlp]``: W[k] without a norm.

        ``z``: the norm's input ``[prompt, d_model]`` (unused without a norm).
        """
        w = self.projection.weight.detach()  # [d_model, d_mlp]
        if self.norm is None:
            return w[:, None, :].expand(w.shape[0], prompts, w.shape[1])
        return rms_norm_rows(self.norm, z, w)


    @contextmanager
    def detached(self, seen: dict[str, torch.Tensor]) -> Iterator[None]:
        """Within the block call, no gradient reaches the residual sum through W.

        The output of W, or of the norm after it, is detached in the forward pass; W's input
        goes to ``seen["a"]`` and the norm's input, for its Jacobian, to ``seen["z"]``.
        """

        def at_projection(_module, inputs, output):
            seen["a"] = inputs[0]
            return output.detach() if self.norm is None else None

        def at_norm(_module, inputs, output):
            seen["z"] = inputs[0].detach()
            return output.detach()

        handles = [self.projection.register_forward_hook(at_projection)]
        if self.norm is not None:
            handles.append(self.norm.register_forward_hook(at_norm))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

def mlp_output(model: LoadedModel, b: int,
               last_point: LastPoint = "final_norm") -> MlpOutput | None:
    """Block b's MLP output path if reverse products may start at its projection, else None.

    None for families not in :data:`MLP_OUTPUT`, and for the papers' last block, whose final
    norm follows the whole block.
    """
    block = model.blocks[b]
    paths = MLP_OUTPUT.get(type(block).__module__)
    if paths is None or (last_point == "final_norm" and b == model.n_layers - 1):
        return None
    projection, norm = paths
    return MlpOutput(block.get_submodule(projection),
                     None if norm is None else block.get_submodule(norm))


def route_params(model: LoadedModel) -> dict[str, str]:
    """Cache-key entries for a route whose arithmetic differs from the generic one beyond bits.

    Starting after an MLP norm (:func:`rms_norm_rows`) rounds differently from the dense
    product, about 1e-7 relative in float32, so results cached by the generic route are not
    reused: ``{"mlp_start": "rms_norm_rows"}``. Starts that change no bit (Llama) add nothing.
    """
    starts = (mlp_output(model, b, "block_output") for b in range(model.n_layers))
    normed = any(start is not None and start.norm is not None for start in starts)
    return {"mlp_start": "rms_norm_rows"} if normed else {}


def rms_norm_rows(norm: torch.nn.Module, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Rows of J_N(z) W for Gemma's RMS norm N(z) = (1 + γ) ∘ z s, s = (mean(z²) + ε)^(-1/2).

    J_N = diag((1 + γ) s) − ((1 + γ) ∘ z) s³/d zᵀ, so row k of J_N W is
    (1 + γ_k) s W[k] − (1 + γ_k) z_k s³/d (zᵀW): O(d·d_mlp), against d·d·d_mlp for the dense
    product. Computed in float32 at least, as the norm computes (float64 models: float64).

    Args:
        norm: the norm module (``weight`` γ ``[d_model]``, ``eps``).
        z: the norm's input, the projection's output, ``[prompt, d_model]``.
        w: the projection's weight ``[d_model, d_mlp]``.

    Returns:
        ``[d_model, prompt, d_mlp]``: row k of each prompt's J_N W, in ``w``'s dtype.
    """
    dtype = torch.promote_types(z.dtype, torch.float32)
    z, wide = z.to(dtype), w.to(dtype)
    gain = 1.0 + norm.weight.to(dtype)  # [d_model]
    s = torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + norm.eps)  # [prompt, 1]
    diagonal = (gain * s).T[:, :, None] * wide[:, None, :]  # [d_model, prompt, d_mlp]
    rank_one = (gain * z * s.pow(3) / z.shape[-1]).T[:, :, None] * (z @ wide)[None]
    return (diagonal - rank_one).to(w.dtype)
