"""Load a causal language model (packaged offline, tiny test, local path or hub id) for tracing."""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import transformers
from safetensors import SafetensorError
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from llmdyn import LlmdynError
from llmdyn.core.checks import torch_device
from llmdyn.core.store import ResultStore
from llmdyn.models.files import (
    NEEDS,
    cache_dir,
    check_model_dir,
    dir_digest,
    local_key,
    looks_like_path,
)
from llmdyn.models.packaged import PACKAGED, PackagedModel, local_gguf, packaged_safetensors
from llmdyn.models.tokenizers import byte_tokenizer

__all__ = ["ARCHITECTURES", "PACKAGED", "TINY_CONFIGS", "Architecture", "LoadedModel",
           "PackagedModel", "cache_dir", "known_models", "load_model", "twin_config"]


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

    def store(self, root: str | Path | None = None):
        """The results cache of this model, with its identity as provenance.

        Args:
            root: cache directory (None: ``$LLMDYN_RESULTS`` or ``results/``).

        Returns:
            A :class:`llmdyn.core.ResultStore` keyed by :attr:`model_id`.
        """
        kwargs = {} if root is None else {"root": root}
        return ResultStore(self.model_id, provenance=self.identity, **kwargs)

    def __repr__(self) -> str:  # a short repr: the default one prints the whole network
        kind = "untrained" if self.untrained else "trained"
        return (f"LoadedModel({self.name!r}, {kind}, layers={self.n_layers}, "
                f"d_model={self.d_model}, device={self.device!r})")


def known_models() -> list[str]:
    """Names accepted by :func:`load_model` besides local paths and hub ids."""
    return sorted(PACKAGED) + sorted(TINY_CONFIGS)


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
            directory with ``config.json`` and safetensors, a local ``.gguf`` file (converted
            once), or a Hugging Face hub id.
        untrained: return the "at initialisation" twin: same config, fresh weights from ``seed``,
            drawn at the architecture's published scale (:func:`twin_config`).
        seed: seed for tiny models' and untrained twins' weights.
        device: torch device; ``"cuda"`` where a GPU exists.
        dtype: parameter dtype (float32 by default; float64 for finite-difference tests).

    Returns:
        The loaded model with its blocks, final norm, head and identity. ``model_id`` is
        short, filesystem-safe and changes with the model's content: ``smollm2-135m-b179c952``
        (GGUF digest), ``run1--step100-1a2b3c4d`` (last two path parts and a sha256 of the
        checkpoint's files), ``owner--name-<commit8>`` (hub); untrained twins add
        ``-untrained-s<seed>``.

    Raises:
        LlmdynError: unknown spec (the message lists known names), a directory that is not a
            checkpoint (no config.json, only pickled weights, corrupt safetensors), missing
            package, bad digest, or a device that does not exist here.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise LlmdynError(f"model spec must be a non-empty string, got {spec!r}; "
                          f"known names: {', '.join(known_models())}")
    device = _check_device(device)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise LlmdynError(f"dtype must be a floating torch dtype (torch.float32, the default, or "
                          f"torch.float64), got {dtype!r}")
    if spec in TINY_CONFIGS:
        hf, tokenizer, identity = _load_tiny(spec, seed)
        config = hf.config
    elif spec in PACKAGED:
        path, identity = packaged_safetensors(spec)
        hf, tokenizer, config = _load_pretrained(str(path), spec, weights=not untrained)
    elif spec.endswith(".gguf") and Path(spec).is_file():
        path, identity = local_gguf(spec)
        hf, tokenizer, config = _load_pretrained(str(path), spec, weights=not untrained)
    elif Path(spec).exists() or looks_like_path(spec):  # results/typo: no hub retries
        directory = Path(spec).expanduser()
        check_model_dir(directory, spec)
        hf, tokenizer, config = _load_pretrained(str(directory), spec, weights=not untrained)
        identity = _local_identity(spec, directory, untrained)
    elif _looks_like_hub_id(spec):
        if Path(spec.split("/")[0]).is_dir():  # e.g. results/typo: a path, not a hub id
            raise LlmdynError(f"model {spec!r}: directory {Path(spec).resolve()} does not "
                              f"exist; {NEEDS}.")
        repo, _, wanted = spec.partition("@")  # owner/name@revision, e.g. Pythia's step1000
        hf, tokenizer, config = _load_pretrained(repo, spec, revision=wanted or None,
                                                 weights=not untrained)
        revision = getattr(config, "_commit_hash", None)
        identity = {"name": spec, "source": "hub", "revision": revision,
                    "key": f"{spec.replace('/', '--')}-{(revision or 'unresolved')[:8]}"}
    else:
        raise LlmdynError(f"unknown model {spec!r}: not a known name, a local directory or a "
                          f"hub id (owner/name). Known names: {', '.join(known_models())}")
    model_type = config.model_type
    if model_type not in ARCHITECTURES:
        raise LlmdynError(f"model {spec!r} has architecture {model_type!r}, which llmdyn does "
                          f"not map yet; known: {', '.join(sorted(ARCHITECTURES))}. Add a row "
                          "to llmdyn.models.ARCHITECTURES.")
    if untrained:  # a twin needs only the trained model's config (its weights are not read)
        config = twin_config(spec, config)
        hf = _fresh_twin(config, seed)
        identity = {**identity, "untrained_seed": seed,
                    "initializer_range": float(config.initializer_range)}
    identity["key"] = _identity_key(identity)
    identity["transformers"] = transformers.__version__
    # Analysis only: no parameter gradients, so Jacobian products never build a graph that
    # reaches the weights (that graph would keep every vmapped intermediate alive).
    hf = hf.to(device=device, dtype=dtype).eval().requires_grad_(False)
    return LoadedModel(name=spec, identity=identity, hf=hf, tokenizer=tokenizer,
                       nn=_wrap_nnsight(hf, tokenizer), arch=ARCHITECTURES[model_type],
                       device=device, untrained=untrained)


def _check_device(device: str) -> str:
    return torch_device(device)


def _local_identity(spec: str, directory: Path, untrained: bool) -> dict[str, Any]:
    # A checkpoint is keyed by the content of the files that define it, so overwriting its
    # weights gives a new key. An untrained twin depends on the config and tokenizer only.
    digest = dir_digest(directory, weights=not untrained)
    field_name = "config_sha256" if untrained else "sha256"
    return {"name": spec, "source": "local", "path": str(directory.resolve()),
            field_name: digest, "key": local_key(directory, digest)}


def _getattr_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _looks_like_hub_id(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "/"))


def _identity_key(identity: dict[str, Any]) -> str:
    if "key" in identity:  # local, GGUF-file and hub models: set where the identity is made
        key = identity["key"]
    else:
        key = identity["name"].replace("/", "--")
        if identity["source"] == "pypi-gguf":
            key += "-" + identity["sha256"][:8]
    if "untrained_seed" in identity:
        key += f"-untrained-s{identity['untrained_seed']}"
    return key


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """Turn transformers' progress bars off for the block, restoring the previous setting."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def _wrap_nnsight(hf: torch.nn.Module, tokenizer: Any) -> Any:
    from nnsight import NNsight

    # A plain NNsight wrapper around the already-loaded module: we tokenise ourselves, so
    # the language-model conveniences (and their hub look-ups) are not needed.
    return NNsight(hf)


def _load_pretrained(path_or_id: str, spec: str, revision: str | None = None, *,
                     weights: bool = True) -> tuple[torch.nn.Module | None, Any, Any]:
    """(model or None without ``weights``, tokenizer, config) of a checkpoint."""
    # Never trust_remote_code; safetensors only (no pickle checkpoints); eager attention
    # because forward-mode AD and vmapped backward do not work well through CPU SDPA.
    try:
        with _no_progress_bars(), _held_load_report() as report:  # no "Loading weights" bar
            hf = AutoModelForCausalLM.from_pretrained(
                path_or_id, revision=revision, trust_remote_code=False, use_safetensors=True,
                attn_implementation="eager", dtype=torch.float32,
            ) if weights else None
            config = hf.config if weights else AutoConfig.from_pretrained(
                path_or_id, revision=revision, trust_remote_code=False)
            tokenizer = _tokenizer(path_or_id, revision, _files_stamp(path_or_id))
    except SafetensorError as err:
        files = ", ".join(str(p) for p in sorted(Path(path_or_id).glob("*.safetensors")))
        raise LlmdynError(f"model {spec!r}: cannot read its safetensors ({files or path_or_id}): "
                          f"{err}. The file is corrupt or truncated; write it again with "
                          "save_pretrained, or delete it.") from None
    except LlmdynError:
        raise
    except (OSError, ValueError, RuntimeError) as err:
        if not Path(path_or_id).is_dir():
            raise  # a hub id: transformers' own message
        raise _local_load_error(spec, Path(path_or_id), err, report) from None
    for record in report:  # loaded after all: show transformers' report (missing keys, …)
        logging.getLogger(record.name).handle(record)
    return hf, tokenizer, config


def _local_load_error(spec: str, directory: Path, err: Exception,
                      report: list[logging.LogRecord]) -> LlmdynError:
    """A transformers error on a local checkpoint as one message naming the file to fix."""
    text = str(err)
    if "config" in text.lower() and "json" in text.lower():
        return LlmdynError(f"model {spec!r}: {directory / 'config.json'} is not a valid config "
                           f"({text.splitlines()[0]}); restore the config.json saved with the "
                           "weights (save_pretrained writes both)")
    rows = [re.sub(r"\x1b\[[0-9;]*m", "", line).split("|") for r in report
            for line in r.getMessage().splitlines() if "MISMATCH" in line]
    if rows or "size mismatch" in text:
        example = (f" (e.g. {rows[0][0].strip()}: {rows[0][-1].strip()})" if rows else "")
        return LlmdynError(f"model {spec!r}: the weights in {directory} do not fit its "
                           f"config.json{example}: the config (hidden_size, layers, heads, "
                           "vocabulary) and the safetensors come from different models; "
                           "restore the config.json saved with the weights")
    return LlmdynError(f"model {spec!r}: transformers cannot load the checkpoint in "
                       f"{directory} ({type(err).__name__}: {text.splitlines()[0][:300]}); "
                       f"{NEEDS}")


@contextmanager
def _held_load_report() -> Iterator[list[logging.LogRecord]]:
    """Hold transformers' state-dict LOAD REPORT (a table of every key) while loading.

    A checkpoint that fails to load becomes one message instead; one that loads has its
    report logged afterwards, as transformers would have.
    """
    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> bool:
        if "LOAD REPORT" in record.getMessage():
            held.append(record)
            return False
        return True

    logger = logging.getLogger("transformers.modeling_utils")
    logger.addFilter(hold)
    try:
        yield held
    finally:
        logger.removeFilter(hold)


@functools.lru_cache(maxsize=8)
def _tokenizer(path_or_id: str, revision: str | None, stamp: tuple) -> Any:
    # Read once per process: Gemma-3's 262k-entry tokenizer.json takes about 4 s to parse, and
    # a chapter loads the same model several times (trained, then one twin per seed). `stamp`
    # makes a rewritten local checkpoint read again.
    return AutoTokenizer.from_pretrained(path_or_id, revision=revision, trust_remote_code=False)


def _files_stamp(path_or_id: str) -> tuple:
    """(name, size, mtime) of each file of a local checkpoint directory; () for a hub id."""
    directory = Path(path_or_id)
    if not directory.is_dir():
        return ()
    return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                 for p in sorted(directory.iterdir()) if p.is_file())


def twin_config(spec: str, config: Any) -> Any:
    """The configuration an untrained twin is initialised from: the architecture's own.

    A packaged GGUF carries no ``initializer_range``, so transformers fills in its class
    default (0.02 for Llama), not the value the model was trained from (SmolLM2-135M: 1/24).
    For packaged models the fields of :attr:`PackagedModel.published` (from the model's
    published ``config.json``, cited there) replace the defaults; local and hub checkpoints
    already carry their own config and keep it.

    Args:
        spec: the model spec as given to :func:`load_model`.
        config: the trained model's config (not modified).

    Returns:
        A copy of ``config`` with the published initialisation fields.
    """
    import copy

    out = copy.deepcopy(config)
    published = PACKAGED[spec].published if spec in PACKAGED else {}
    for key, value in published.items():
        setattr(out, key, value)
    if not hasattr(out, "initializer_range"):
        raise LlmdynError(f"model {spec!r}: its config has no initializer_range, so its "
                          "untrained twin's initialisation is unknown; add the published value "
                          "to llmdyn.models.packaged.PACKAGED[...].published.")
    return out


def _fresh_twin(config: Any, seed: int, *, skip_default_init: bool = True) -> torch.nn.Module:
    """Fresh weights from transformers' initialiser for ``config``'s architecture, seeded.

    ``skip_default_init=False`` also draws torch's default init first, as transformers' own
    ``from_config`` does: the same distribution, other numbers for the same seed. The tiny test
    models keep that route, so the weights their tests were written against stay the same.
    """
    torch.manual_seed(seed)
    with _without_torch_default_init() if skip_default_init else contextlib.nullcontext():
        return AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                                dtype=torch.float32)


@contextmanager
def _without_torch_default_init():
    # Each nn.Linear and nn.Embedding draws torch's default init when built, and transformers'
    # post_init then draws every one of them again from the config's own scale. The first draw
    # is thrown away and is half the time of building a twin (Gemma-3-270M's 262k × 640
    # unembedding), so it is skipped; test_models checks that the weights keep their
    # distributions and that every one is drawn.
    saved = {cls: cls.reset_parameters for cls in (torch.nn.Linear, torch.nn.Embedding)}
    try:
        for cls in saved:
            cls.reset_parameters = lambda self: None
        yield
    finally:
        for cls, reset in saved.items():
            cls.reset_parameters = reset


def _load_tiny(spec: str, seed: int) -> tuple[torch.nn.Module, Any, dict[str, Any]]:
    tokenizer = byte_tokenizer()
    kwargs = dict(TINY_CONFIGS[spec])
    model_type = kwargs.pop("model_type")
    config = AutoConfig.for_model(
        model_type, vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False, **kwargs,
    )
    hf = _fresh_twin(config, seed, skip_default_init=False)
    return hf, tokenizer, {"name": spec, "source": "tiny-config", "seed": seed}


def load_each(names: list[str], *, kinds: tuple[str, ...] = ("trained", "untrained"),
              seed: int = 0, device: str = "cpu"):
    """Load each model and its twins in turn, freeing each one before the next loads.

    Args:
        names: model specs, in order.
        kinds: "trained" and/or "untrained" (the seeded twin), in the order to load them.
        seed: seed of the untrained twins.
        device: where to load them.

    Yields:
        ``(name, kind, model)``; drop the model (e.g. keep only numpy results) before the
        next step, so that at most one model is alive when the next one loads.
    """
    import gc

    bad = [k for k in kinds if k not in ("trained", "untrained")]
    if bad or not kinds:
        raise LlmdynError(f"kinds must hold 'trained' and/or 'untrained', got {kinds!r}")
    for name in names:
        for kind in kinds:
            yield name, kind, load_model(name, untrained=kind == "untrained", seed=seed,
                                         device=device)
            gc.collect()


def load_twins(name: str, seeds: list[int], *, device: str = "cpu"):
    """Load the untrained twin of ``name`` for each seed in turn, freeing each before the next.

    Yields:
        ``(seed, model)``; keep only numpy results from each model, as with :func:`load_each`.
    """
    import gc

    for seed in seeds:
        yield seed, load_model(name, untrained=True, seed=seed, device=device)
        gc.collect()
