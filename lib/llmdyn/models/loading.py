"""Load a causal language model (packaged offline, tiny test, local path or hub id) for tracing.

The family table lives in :mod:`llmdyn.models.architectures`, checkpoint reading in
:mod:`llmdyn.models.pretrained` and untrained twins' initialisation in :mod:`llmdyn.models.twins`.
"""

from __future__ import annotations

import gc
import logging
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import AutoConfig

from llmdyn import LlmdynError
from llmdyn.core.checks import torch_device
from llmdyn.core.store import ResultStore
from llmdyn.models.architectures import ARCHITECTURES, TINY_CONFIGS, Architecture
from llmdyn.models.files import NEEDS, check_model_dir, dir_digest, local_key, looks_like_path
from llmdyn.models.packaged import PACKAGED, local_gguf, packaged_safetensors
from llmdyn.models.pretrained import load_pretrained
from llmdyn.models.tokenizers import byte_tokenizer
from llmdyn.models.twins import fresh_twin, twin_config

log = logging.getLogger(__name__)

__all__ = ["LoadedModel", "ModelShape", "collect_if_alive", "each_model", "known_models",
           "load_model", "model_shape"]


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
        """The norm applied to the last block's output before the head.

        The identity where the model has none (post-LN OPT: each block ends in its own norm,
        and ``final_layer_norm`` is None).
        """
        norm = _getattr_path(self.hf, self.arch.final_norm)
        return torch.nn.Identity() if norm is None else norm

    def read_out(self, h: torch.Tensor) -> torch.Tensor:
        """The model's logits from final-normed states, ``[..., d_model] -> [..., vocab]``.

        As the family's forward computes them (:meth:`Architecture.read_out`).
        """
        return self.arch.read_out(self.hf, h)

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
            model (one per family, :data:`TINY_CONFIGS`: ``tiny-llama``, ``tiny-mpt``, …), a local
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
            checkpoint (no config.json, only pickled weights, corrupt safetensors, missing or
            unexpected weights, an index naming a file outside it, a file that is not a
            regular file, a config that builds no model, an unreadable tokenizer file),
            missing package, bad digest, or a device that does not exist here.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise LlmdynError(f"model spec must be a non-empty string, got {spec!r}; "
                          f"known names: {', '.join(known_models())}")
    device = _check_device(device)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise LlmdynError(f"dtype must be a floating torch dtype (torch.float32, the default, or "
                          f"torch.float64), got {dtype!r}")
    hf, tokenizer, config, identity = _read(spec, untrained, seed)
    arch = _architecture(spec, config.model_type)
    if untrained:  # a twin needs only the trained model's config (its weights are not read)
        config = twin_config(spec, config, arch.init_field)
        hf = fresh_twin(config, seed)
        identity = {**identity, "untrained_seed": seed,
                    "initializer_range": float(getattr(config, arch.init_field))}
    identity["key"] = _identity_key(identity)
    identity["transformers"] = transformers.__version__
    identity["routes"] = arch.routes()
    _log_routes(spec, config.model_type, identity["routes"])
    # Analysis only: no parameter gradients, so Jacobian products never build a graph that
    # reaches the weights (that graph would keep every vmapped intermediate alive).
    hf = hf.to(device=device, dtype=dtype).eval().requires_grad_(False)
    return LoadedModel(name=spec, identity=identity, hf=hf, tokenizer=tokenizer,
                       nn=_wrap_nnsight(hf, tokenizer), arch=arch, device=device,
                       untrained=untrained)


@dataclass(frozen=True)
class ModelShape:
    """What a model's config says about its size, read without its weights.

    Attributes:
        name: the spec.
        source: what the spec points at (a resolved directory, or the spec itself), so that
            two spellings of one checkpoint compare equal.
        n_layers: blocks L; d_model: residual width; n_ctx: longest prompt in tokens.
    """

    name: str
    source: str
    n_layers: int
    d_model: int
    n_ctx: int


def model_shape(spec: str) -> ModelShape:
    """Depth, width and context of a model from its config (its weights are not read).

    Raises:
        LlmdynError: as :func:`load_model` for a spec that does not load.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise LlmdynError(f"model spec must be a non-empty string, got {spec!r}; "
                          f"known names: {', '.join(known_models())}")
    _, _, config, identity = _read(spec, untrained=True, seed=0)
    arch = _architecture(spec, config.model_type)
    text = config.get_text_config()
    return ModelShape(name=spec, source=identity.get("path", spec),
                      n_layers=int(text.num_hidden_layers), d_model=int(text.hidden_size),
                      n_ctx=int(getattr(config, arch.n_ctx)))


def _read(spec: str, untrained: bool, seed: int) -> tuple[Any, Any, Any, dict[str, Any]]:
    """(model, tokenizer, config, identity) of a spec, by its kind (tiny, packaged, path, hub).

    With ``untrained`` a checkpoint's weights are not read (the model is None): its twin needs
    only the config.
    """
    if spec in TINY_CONFIGS:
        hf, tokenizer, identity = _load_tiny(spec, seed)
        return hf, tokenizer, hf.config, identity
    if spec in PACKAGED:
        path, identity = packaged_safetensors(spec)
        return *load_pretrained(str(path), spec, weights=not untrained), identity
    if spec.endswith(".gguf") and Path(spec).exists() and not Path(spec).is_file():
        raise LlmdynError(f"model {spec!r}: {Path(spec).resolve()} is not a regular file (a "
                          "device, a FIFO or a directory); give the path of a .gguf file")
    if spec.endswith(".gguf") and Path(spec).is_file():
        path, identity = local_gguf(spec)
        return *load_pretrained(str(path), spec, weights=not untrained), identity
    if Path(spec).exists() or looks_like_path(spec):  # results/typo: no hub retries
        directory = Path(spec).expanduser()
        check_model_dir(directory, spec)
        loaded = load_pretrained(str(directory), spec, weights=not untrained)
        return *loaded, _local_identity(spec, directory, untrained)
    if _looks_like_hub_id(spec):
        if Path(spec.split("/")[0]).is_dir():  # e.g. results/typo: a path, not a hub id
            raise LlmdynError(f"model {spec!r}: directory {Path(spec).resolve()} does not "
                              f"exist; {NEEDS}.")
        repo, _, wanted = spec.partition("@")  # owner/name@revision, e.g. Pythia's step1000
        hf, tokenizer, config = load_pretrained(repo, spec, revision=wanted or None,
                                                weights=not untrained)
        revision = getattr(config, "_commit_hash", None)
        return hf, tokenizer, config, {
            "name": spec, "source": "hub", "revision": revision,
            "key": f"{spec.replace('/', '--')}-{(revision or 'unresolved')[:8]}"}
    raise LlmdynError(f"unknown model {spec!r}: not a known name, a local directory or a "
                      f"hub id (owner/name). Known names: {', '.join(known_models())}")


def _architecture(spec: str, model_type: str) -> Architecture:
    """The family's row of ARCHITECTURES, or LlmdynError saying how to add one."""
    if model_type not in ARCHITECTURES:
        raise LlmdynError(f"model {spec!r} has architecture {model_type!r}, which llmdyn does "
                          f"not map yet; known: {', '.join(sorted(ARCHITECTURES))}. Add a row "
                          "to llmdyn.models.ARCHITECTURES.")
    return ARCHITECTURES[model_type]


_ROUTES_LOGGED: set[tuple[str, str]] = set()


def _log_routes(spec: str, model_type: str, routes: dict[str, str]) -> None:
    """Log the Jacobian routes once per model spec (twins and reloads take the same ones)."""
    if (spec, model_type) not in _ROUTES_LOGGED:
        _ROUTES_LOGGED.add((spec, model_type))
        log.info("%s (%s): Jacobian routes %s", spec, model_type,
                 ", ".join(f"{k} {v}" for k, v in routes.items()))


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


def _wrap_nnsight(hf: torch.nn.Module, tokenizer: Any) -> Any:
    from nnsight import NNsight

    # A plain NNsight wrapper around the already-loaded module: we tokenise ourselves, so
    # the language-model conveniences (and their hub look-ups) are not needed.
    return NNsight(hf)


def _load_tiny(spec: str, seed: int) -> tuple[torch.nn.Module, Any, dict[str, Any]]:
    tokenizer = byte_tokenizer()
    kwargs = dict(TINY_CONFIGS[spec])
    model_type = kwargs.pop("model_type")
    config = AutoConfig.for_model(
        model_type, vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False, **kwargs,
    )
    hf = fresh_twin(config, seed, skip_default_init=False)
    return hf, tokenizer, {"name": spec, "source": "tiny-config", "seed": seed}


def collect_if_alive(weights: weakref.ref) -> None:
    """Run the garbage collector if a dropped model's weights are still alive.

    Taken after ``del model``: a model that nothing else holds is freed by reference counting
    at once, and then a full collection (~0.3 s with transformers loaded, ~10 per chapter)
    frees nothing. Only a reference cycle keeps it alive; then the collection frees it.

    Args:
        weights: ``weakref.ref(model.hf)``, taken while the model was alive.
    """
    if weights() is not None:
        gc.collect()


def each_model(names: list[str], *, states: tuple[str, ...] = ("trained", "untrained"),
               seeds: list[int] = (0,), device: str = "cpu"):
    """Every model a chapter runs, one at a time: each name, trained and/or its untrained twins.

    The one loop over models × trained/untrained × twin seeds. Each model is loaded when the
    loop reaches it; drop it (``del m``, keeping only numpy results) at the end of each step,
    so that at most one model is alive when the next one loads. If a reference cycle still
    holds the dropped model's weights, the garbage collector runs before the next one loads.

    Args:
        names: model specs, in order.
        states: "trained" and/or "untrained", in the order to load them.
        seeds: seeds of the untrained twins, one twin per seed (the trained model of a tiny
            test spec is built from ``seeds[0]``).
        device: where to load them.

    Yields:
        ``(name, state, seed, model)``; ``seed`` is the twin's seed (``seeds[0]`` for a
        trained model).
    """
    bad = [s for s in states if s not in ("trained", "untrained")]
    if bad or not states:
        raise LlmdynError(f"states must hold 'trained' and/or 'untrained', got {states!r}")
    seeds = list(seeds)
    for name in names:
        for state in states:
            twins = seeds if state == "untrained" else seeds[:1] or [0]
            for seed in twins:
                model = load_model(name, untrained=state == "untrained", seed=seed,
                                   device=device)
                weights = weakref.ref(model.hf)
                yield name, state, seed, model
                del model
                collect_if_alive(weights)
