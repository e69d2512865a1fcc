"""A vision transformer in the DeiT recipe, with stochastic depth (paper A §3.4).

The architecture is the ViT of Dosovitskiy et al. (2021) as DeiT (Touvron et al., 2021) trains
it: non-overlapping patches embedded by a linear map, a learned class token prepended, learned
position embeddings, L pre-norm blocks ``x + attn(norm(x))`` then ``x + mlp(norm(x))`` with
bidirectional multi-head attention and a GELU MLP of width 4d, a final LayerNorm, and a linear
classifier that reads the class token only. Stochastic depth (Huang et al., 2016) drops each
residual branch per sample with probability growing linearly over depth from 0 to the
``drop_path_rate`` of the last block (DeiT's convention), rescaling kept branches by 1/(1 − p).

Why not ``timm.models.VisionTransformer``: every timm release imports torchvision at import time
(``timm.layers.create_norm``), and PyPI's torchvision cannot be imported beside the CPU build of
torch 2.13 this project pins (its compiled operators are missing). The modules below follow the
same definitions; parameter names follow timm's so its checkpoints would load by name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from llmdyn import LlmdynError


@dataclass(frozen=True)
class ViTShape:
    """The architecture: image, patch and transformer sizes (DeiT-Tiny: 192, 12, 3)."""

    image_size: int = 28
    channels: int = 1
    patch: int = 7
    d_model: int = 64
    depth: int = 6
    heads: int = 2
    n_classes: int = 10
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        """Check that patches tile the image and heads divide the width."""
        if min(asdict(self).values()) < 1:
            raise LlmdynError(f"every ViT size must be >= 1, got {self}")
        if self.image_size % self.patch:
            raise LlmdynError(f"patch {self.patch} does not tile images of {self.image_size} "
                              f"pixels; choose a divisor of {self.image_size}")
        if self.d_model % self.heads:
            raise LlmdynError(f"d_model {self.d_model} is not divisible by {self.heads} heads")

    @property
    def n_tokens(self) -> int:
        """Class token plus patches."""
        return 1 + (self.image_size // self.patch) ** 2


def drop_path(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Stochastic depth on a residual branch ``[batch, tok, d_model]``: zero samples w.p. ``p``."""
    if p == 0.0 or not training:
        return x
    keep = torch.empty(x.shape[0], 1, 1, dtype=x.dtype, device=x.device).bernoulli_(1 - p)
    return x * keep / (1 - p)


class Attention(nn.Module):
    """Multi-head self-attention over all tokens (no mask: every token sees every token)."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[batch, tok, d_model] → [batch, tok, d_model]``."""
        b, t, d = x.shape
        # q, k, v: [batch, heads, tok, head_dim] each
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) * self.head_dim**-0.5  # [batch, heads, tok, tok]
        out = scores.softmax(-1) @ v  # [batch, heads, tok, head_dim]
        return self.proj(out.transpose(1, 2).reshape(b, t, d))  # [batch, tok, d_model]


class Mlp(nn.Module):
    """Linear, GELU, linear."""

    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[..., d_model] → [..., d_model]``."""
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Pre-norm transformer block ``x ↦ x + attn(norm1 x) + mlp(norm2 ·)`` with stochastic depth."""

    def __init__(self, d: int, heads: int, mlp_ratio: int, drop_path_rate: float) -> None:
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(d, eps=1e-6), Attention(d, heads)
        self.norm2, self.mlp = nn.LayerNorm(d, eps=1e-6), Mlp(d, mlp_ratio * d)
        self.drop_path_rate = drop_path_rate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[batch, tok, d_model] → [batch, tok, d_model]``."""
        x = x + drop_path(self.attn(self.norm1(x)), self.drop_path_rate, self.training)
        return x + drop_path(self.mlp(self.norm2(x)), self.drop_path_rate, self.training)


class ViT(nn.Module):
    """Vision transformer: images ``[batch, channels, height, width]`` → ``[batch, classes]``."""

    def __init__(self, shape: ViTShape, drop_path_rate: float = 0.0) -> None:
        super().__init__()
        if not 0 <= drop_path_rate < 1:
            raise LlmdynError(f"drop_path_rate must be in [0, 1), got {drop_path_rate}")
        d = shape.d_model
        self.shape = shape
        self.patch_embed = nn.Conv2d(shape.channels, d, shape.patch, stride=shape.patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.zeros(1, shape.n_tokens, d))
        rates = torch.linspace(0, drop_path_rate, shape.depth).tolist()  # DeiT: linear in depth
        self.blocks = nn.ModuleList(Block(d, shape.heads, shape.mlp_ratio, r) for r in rates)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, shape.n_classes)
        self._init_weights()

    def _init_weights(self) -> None:
        """Timm's ViT initialisation: truncated normal (std 0.02) weights, zero biases."""
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """X^0: class token and patch embeddings plus positions, ``[batch, tok, d_model]``."""
        patches = self.patch_embed(images).flatten(2).transpose(1, 2)  # [batch, patches, d_model]
        cls = self.cls_token.expand(len(images), -1, -1)
        return torch.cat([cls, patches], 1) + self.pos_embed

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Logits ``[batch, n_classes]`` from the final-normed class token."""
        x = self.embed(images)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])
