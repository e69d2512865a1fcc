"""Read a safetensors checkpoint (local directory or hub id) quietly, its tokenizer once."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

from llmdyn import LlmdynError

__all__ = ["load_pretrained", "quiet_transformers"]


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Turn transformers' progress bars off for the block, restoring the previous setting.

    A chapter shows no "Loading weights" bar, and training shows no "Writing model shards" bar
    between its own bars.
    """
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def load_pretrained(path_or_id: str, spec: str, revision: str | None = None, *,
                    weights: bool = True) -> tuple[torch.nn.Module | None, Any, Any]:
    """(model or None without ``weights``, tokenizer, config) of a checkpoint."""
    # Never trust_remote_code; safetensors only (no pickle checkpoints); eager attention
    # because forward-mode AD and vmapped backward do not work well through CPU SDPA.
    try:
        with quiet_transformers():  # a chapter shows no "Loading weights" bar
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
    return hf, tokenizer, config


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
