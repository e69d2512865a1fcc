"""One record per supported family, keyed by ``config.model_type``, with its tiny test model.

A record says where the family's parts live, how it reads out logits, which fast routes it
takes and how its untrained twin is drawn.

Every other table of the library is derived from :data:`ARCHITECTURES`: the fast-route sets of
:mod:`llmdyn.jacobians.attention` and :mod:`llmdyn.jacobians.mlp_start`, the kernel fork
server's preloaded modules, :data:`TINY_CONFIGS` and the per-family tests. A family is added
here once, with a tiny config, and the tests then load and check it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ARCHITECTURES", "TINY_CONFIGS", "Architecture", "config_value"]


@dataclass(frozen=True)
class Architecture:
    """Where the parts of one family live, as attribute paths from the HF model, and its facts.

    Attributes:
        blocks: the ModuleList of transformer blocks.
        final_norm: the norm applied after the last block; a path whose module is None in a
            given model (post-LN OPT, whose blocks end in their own norm) means no final norm.
        head: the unembedding (logits = head(head_in(final_norm(x)))).
        n_ctx: config field holding the context length.
        module: the transformers module that defines the family's blocks.
        head_in: a projection between the final norm and the head, or a path whose module is
            None (OPT's ``project_out`` where ``word_embed_proj_dim`` differs from the width).
        logit_scale: config field multiplying the logits (Cohere's ``logit_scale``).
        logit_divisor: config field dividing the logits (Granite's ``logits_scaling``).
        softcap: config field of the final logit soft cap, ``cap · tanh(logits / cap)``.
        init_field: config field holding the standard deviation the family's weights are drawn
            from at initialisation (transformers' ``_init_weights``).
        alibi: config field (dotted) that is true where attention adds ALiBi position biases;
            the batched last-token route cannot merge those across prompts.
        attention_interface: the family's attention calls the function transformers'
            ``AttentionInterface`` names (``eager_attention_forward``), so the own-position route
            can replace it; False where attention is computed inline (Falcon, GPT-J, MPT).
        standard_eager: the eager attention is softmax(q kᵀ · scaling [softcapped] + mask) v with
            ``repeat_kv`` and ``eager_attention_forward`` in :attr:`module`, which the frozen-
            prefix and own-position routes rebuild (:mod:`llmdyn.jacobians.attention`).
        mlp_output: ``(projection path, norm path or None)`` of the block's MLP output where it
            reaches the residual sum with at most a norm after it (:mod:`.mlp_start`), else None.
        preload: the kernel fork server imports :attr:`module` before forking (the families of
            the packaged models and of the book's smoke runs).
        tiny: the family's tiny test model: config fields besides the vocabulary (3 blocks,
            d_model 32, a 64-token context); loadable as ``tiny-<name>`` (:data:`TINY_CONFIGS`).
        tiny_name: the name it loads under.
        variants: further tiny models of the family by name, as fields that change ``tiny``
            (a layout the family's own code branches on: post-LN OPT, Falcon with ALiBi).
        float32_inside: transformers computes some of the family's internals in float32 even
            in a float64 model (Gemma's RMS norms, MPT's softmax) in a way the fast routes do
            not repeat operation for operation, so they agree with autograd to float32
            rounding (about 1e-7 relative), not float64's.
    """

    blocks: str
    final_norm: str
    head: str
    n_ctx: str = "max_position_embeddings"
    module: str = ""
    head_in: str | None = None
    logit_scale: str | None = None
    logit_divisor: str | None = None
    softcap: str | None = None
    init_field: str = "initializer_range"
    alibi: str | None = None
    attention_interface: bool = True
    standard_eager: bool = False
    mlp_output: tuple[str, str | None] | None = None
    preload: bool = False
    tiny: dict[str, Any] = field(default_factory=dict)
    tiny_name: str = ""
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    float32_inside: bool = False


    def read_out(self, hf: Any, h: Any) -> Any:
        """Logits ``[..., vocab]`` of final-normed states ``h [..., d_model]`` of model ``hf``.

        ``ℓ = s(M P h)`` as the family's forward computes it: P a projection before the head
        (OPT's ``project_out``) or none, M the unembedding, s the family's read-out transform:
        multiplied by Cohere's ``logit_scale``, divided by Granite's ``logits_scaling``, or
        soft-capped, ``cap · tanh(ℓ / cap)`` (Gemma 2 and 3).
        """
        into = None if self.head_in is None else config_value(hf, self.head_in)
        logits = config_value(hf, self.head)(h if into is None else into(h))  # [..., vocab]
        scale = config_value(hf.config, self.logit_scale)
        if scale is not None:
            logits = logits * scale
        divisor = config_value(hf.config, self.logit_divisor)
        if divisor is not None:
            logits = logits / divisor
        cap = config_value(hf.config, self.softcap)
        if cap:
            logits = (logits / cap).tanh() * cap
        return logits

    def routes(self) -> dict[str, str]:
        """The Jacobian routes the family takes, for provenance and the log.

        ``last_token``: ``"frozen-prefix"`` (attention against the unbatched key/value prefix,
        :mod:`llmdyn.jacobians.attention`), with ``"+mlp-start"`` where reverse products start
        at the MLP's output projection (:mod:`llmdyn.jacobians.mlp_start`), else ``"generic"``
        (the family's own attention on the concatenated prefix). ``diagonal``: the J_tt of a
        whole prompt from ``"own-position"`` attention, or from the ``"exact"`` route.
        """
        last = "frozen-prefix" if self.standard_eager else "generic"
        if self.mlp_output is not None:
            last += "+mlp-start"
        return {"last_token": last,
                "diagonal": "own-position" if self.attention_interface else "exact"}


def config_value(config: Any, path: str | None) -> Any:
    """The attribute at dotted ``path`` of a config (or a model): None where a part is missing."""
    if path is None:
        return None
    for part in path.split("."):
        config = getattr(config, part, None)
        if config is None:
            return None
    return config


def _module(package: str) -> str:
    return f"transformers.models.{package}.modeling_{package}"


# Sizes every tiny model shares (field names differ between families).
_DECODER = dict(num_hidden_layers=3, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                max_position_embeddings=64)
_LLAMA_LIKE = dict(blocks="model.layers", final_norm="model.norm", head="lm_head")


ARCHITECTURES: dict[str, Architecture] = {
    "gpt2": Architecture(
        "transformer.h", "transformer.ln_f", "lm_head", "n_positions", module=_module("gpt2"),
        preload=True, tiny_name="tiny-gpt2",
        tiny=dict(n_layer=3, n_embd=32, n_head=4, n_positions=64)),
    "gpt_neox": Architecture(
        "gpt_neox.layers", "gpt_neox.final_layer_norm", "lm_head", module=_module("gpt_neox"),
        preload=True, tiny_name="tiny-neox",
        tiny=dict(num_hidden_layers=3, hidden_size=32, intermediate_size=64,
                  num_attention_heads=4, max_position_embeddings=64, rotary_pct=0.5)),
    "llama": Architecture(
        **_LLAMA_LIKE, module=_module("llama"), standard_eager=True,
        mlp_output=("mlp.down_proj", None), preload=True, tiny_name="tiny-llama",
        tiny=dict(num_hidden_layers=3, hidden_size=32, intermediate_size=64,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)),
    "mistral": Architecture(
        **_LLAMA_LIKE, module=_module("mistral"), tiny_name="tiny-mistral",
        tiny=dict(_DECODER, num_key_value_heads=2, sliding_window=4)),
    "qwen2": Architecture(
        **_LLAMA_LIKE, module=_module("qwen2"), tiny_name="tiny-qwen2",
        tiny=dict(_DECODER, num_key_value_heads=2)),
    "qwen3": Architecture(
        **_LLAMA_LIKE, module=_module("qwen3"), tiny_name="tiny-qwen3",
        tiny=dict(_DECODER, num_key_value_heads=2, head_dim=8)),
    "gemma": Architecture(
        **_LLAMA_LIKE, module=_module("gemma"), tiny_name="tiny-gemma", float32_inside=True,
        tiny=dict(_DECODER, num_key_value_heads=1, head_dim=8)),
    "gemma2": Architecture(
        **_LLAMA_LIKE, module=_module("gemma2"), softcap="final_logit_softcapping",
        tiny_name="tiny-gemma2", float32_inside=True,
        tiny=dict(_DECODER, num_key_value_heads=2, head_dim=8, sliding_window=4,
                  final_logit_softcapping=3.0, attn_logit_softcapping=5.0)),
    "gemma3_text": Architecture(
        **_LLAMA_LIKE, module=_module("gemma3"), softcap="final_logit_softcapping",
        standard_eager=True, mlp_output=("mlp.down_proj", "post_feedforward_layernorm"),
        preload=True, tiny_name="tiny-gemma3", float32_inside=True,
        tiny=dict(num_hidden_layers=3, hidden_size=32, intermediate_size=64,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                  max_position_embeddings=64, sliding_window=4,
                  layer_types=["sliding_attention", "sliding_attention", "full_attention"])),
    "falcon": Architecture(
        "transformer.h", "transformer.ln_f", "lm_head", module=_module("falcon"), alibi="alibi",
        attention_interface=False,
        tiny_name="tiny-falcon", variants={"tiny-falcon-alibi": dict(alibi=True)},
        tiny=dict(num_hidden_layers=3, hidden_size=32, num_attention_heads=4,
                  max_position_embeddings=64)),
    "phi": Architecture(
        "model.layers", "model.final_layernorm", "lm_head", module=_module("phi"),
        tiny_name="tiny-phi", tiny=dict(_DECODER, partial_rotary_factor=0.5)),
    "mpt": Architecture(
        "transformer.blocks", "transformer.norm_f", "lm_head", "max_seq_len",
        module=_module("mpt"), alibi="attn_config.alibi", attention_interface=False,
        tiny_name="tiny-mpt", float32_inside=True,
        tiny=dict(n_layers=3, d_model=32, n_heads=4, max_seq_len=64, expansion_ratio=2)),
    "opt": Architecture(
        "model.decoder.layers", "model.decoder.final_layer_norm", "lm_head",
        module=_module("opt"), head_in="model.decoder.project_out", init_field="init_std",
        tiny_name="tiny-opt",
        # OPT-350m's layout: norms after attention and MLP, no final norm, and a projection
        # between the residual width and the embeddings' on both ends
        variants={"tiny-opt-post-ln": dict(do_layer_norm_before=False, word_embed_proj_dim=16)},
        tiny=dict(num_hidden_layers=3, hidden_size=32, ffn_dim=64, num_attention_heads=4,
                  max_position_embeddings=64, word_embed_proj_dim=32)),
    "olmo": Architecture(
        **_LLAMA_LIKE, module=_module("olmo"), tiny_name="tiny-olmo",
        tiny=dict(_DECODER, clip_qkv=8.0)),
    "olmo2": Architecture(
        **_LLAMA_LIKE, module=_module("olmo2"), tiny_name="tiny-olmo2",
        tiny=dict(_DECODER)),
    "gptj": Architecture(
        "transformer.h", "transformer.ln_f", "lm_head", "n_positions", module=_module("gptj"),
        attention_interface=False,
        tiny_name="tiny-gptj", tiny=dict(n_layer=3, n_embd=32, n_head=4, n_positions=64,
                                         rotary_dim=4)),
    "stablelm": Architecture(
        **_LLAMA_LIKE, module=_module("stablelm"), tiny_name="tiny-stablelm",
        tiny=dict(_DECODER, num_key_value_heads=2, partial_rotary_factor=0.5)),
    "cohere": Architecture(
        **_LLAMA_LIKE, module=_module("cohere"), logit_scale="logit_scale",
        tiny_name="tiny-cohere",
        tiny=dict(_DECODER, logit_scale=0.5)),
    "granite": Architecture(
        **_LLAMA_LIKE, module=_module("granite"), logit_divisor="logits_scaling",
        tiny_name="tiny-granite",
        tiny=dict(_DECODER, logits_scaling=4.0, residual_multiplier=0.5,
                  embedding_multiplier=2.0, attention_multiplier=0.2)),
}


# Tiny random models for tests: small configs, random weights, no download.
TINY_CONFIGS: dict[str, dict[str, Any]] = {
    name: {"model_type": model_type, **arch.tiny, **change}
    for model_type, arch in ARCHITECTURES.items()
    for name, change in {arch.tiny_name: {}, **arch.variants}.items()
}
