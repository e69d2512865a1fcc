"""Where each supported family keeps its blocks, final norm and head; the tiny test configs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ARCHITECTURES", "TINY_CONFIGS", "Architecture"]


@dataclass(frozen=True)
class Architecture:
    """Where the parts of one family live, as attribute paths from the HF model."""

    blocks: str  # the ModuleList of transformer blocks
    final_norm: str  # the norm applied after the last block
    head: str  # the unembedding (logits = head(final_norm(x)))
    n_ctx: str = "max_position_embeddings"  # config field holding the context length


# One table for every supported family, keyed by `config.model_type`.
ARCHITECTURES: dict[str, Architecture] = {
    "gpt2": Architecture("transformer.h", "transformer.ln_f", "lm_head", "n_positions"),
    "gpt_neox": Architecture("gpt_neox.layers", "gpt_neox.final_layer_norm", "lm_head"),
    "llama": Architecture("model.layers", "model.norm", "lm_head"),
    "mistral": Architecture("model.layers", "model.norm", "lm_head"),
    "qwen2": Architecture("model.layers", "model.norm", "lm_head"),
    "qwen3": Architecture("model.layers", "model.norm", "lm_head"),
    "gemma": Architecture("model.layers", "model.norm", "lm_head"),
    "gemma2": Architecture("model.layers", "model.norm", "lm_head"),
    "gemma3_text": Architecture("model.layers", "model.norm", "lm_head"),
    "falcon": Architecture("transformer.h", "transformer.ln_f", "lm_head"),
    "phi": Architecture("model.layers", "model.final_layernorm", "lm_head"),
    "mpt": Architecture("transformer.blocks", "transformer.norm_f", "lm_head", "max_seq_len"),
    "opt": Architecture("model.decoder.layers", "model.decoder.final_layer_norm", "lm_head"),
}


# Tiny random models for tests: small configs, random weights, no download.
TINY_CONFIGS: dict[str, dict[str, Any]] = {
    "tiny-gpt2": dict(model_type="gpt2", n_layer=3, n_embd=32, n_head=4, n_positions=64),
    "tiny-llama": dict(
        model_type="llama", num_hidden_layers=3, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    ),
    "tiny-neox": dict(
        model_type="gpt_neox", num_hidden_layers=3, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, max_position_embeddings=64, rotary_pct=0.5,
    ),
    "tiny-gemma3": dict(
        model_type="gemma3_text", num_hidden_layers=3, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
        sliding_window=4, layer_types=["sliding_attention", "sliding_attention",
                                       "full_attention"],
    ),
}
