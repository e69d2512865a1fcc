"""Read a safetensors checkpoint (local directory or hub id) quietly, its tokenizer once."""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from huggingface_hub.errors import StrictDataclassError
from safetensors import SafetensorError, safe_open
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from llmdyn import LlmdynError
from llmdyn.models.architectures import ARCHITECTURES
from llmdyn.models.files import NEEDS, TOKENIZER_FILES
from llmdyn.models.hub import check_hub
from llmdyn.models.quiet import quiet_transformers

__all__ = ["check_depth", "load_pretrained"]


def load_pretrained(path_or_id: str, spec: str, revision: str | None = None, *,
                    weights: bool = True) -> tuple[torch.nn.Module | None, Any, Any]:
    """(model or None without ``weights``, tokenizer, config) of a checkpoint."""
    # Never trust_remote_code; safetensors only (no pickle checkpoints); eager attention
    # because forward-mode AD and vmapped backward do not work well through CPU SDPA.
    local = Path(path_or_id).is_dir()
    if not local:  # a hub id offline: one sentence now, not transformers' retries
        check_hub(spec, path_or_id, revision)
    report: list[logging.LogRecord] = []
    try:
        if local:  # before any weight is read: a lying config is refused
            check_depth(Path(path_or_id), spec)
        with quiet_transformers(), _held_load_report() as report:  # no "Loading weights" bar
            hf = AutoModelForCausalLM.from_pretrained(
                path_or_id, revision=revision, trust_remote_code=False, use_safetensors=True,
                attn_implementation="eager", dtype=torch.float32,
            ) if weights else None
            config = hf.config if weights else AutoConfig.from_pretrained(
                path_or_id, revision=revision, trust_remote_code=False)
            if not weights and local:  # the twin is built later: its config must build now
                with torch.device("meta"):
                    AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    except SafetensorError as err:
        files = ", ".join(str(p) for p in sorted(Path(path_or_id).glob("*.safetensors")))
        raise LlmdynError(f"model {spec!r}: cannot read its safetensors ({files or path_or_id}): "
                          f"{err}. The file is corrupt or truncated; write it again with "
                          "save_pretrained, or delete it.") from None
    except LlmdynError:
        raise
    except (OSError, ValueError, RuntimeError, AssertionError, StrictDataclassError,
            AttributeError, ZeroDivisionError, RecursionError, TypeError) as err:
        if not local:  # a hub id: transformers' own message
            raise
        if isinstance(err, AssertionError | StrictDataclassError | AttributeError
                      | ZeroDivisionError | RecursionError | TypeError):  # the config's values
            raise _config_values_error(spec, Path(path_or_id), err) from None
        if "negative dimension" in str(err):  # a negative size in the config
            raise _config_values_error(spec, Path(path_or_id), err) from None
        raise _local_load_error(spec, Path(path_or_id), err, report) from None
    _check_load_report(spec, path_or_id, report)
    tokenizer = _read_tokenizer(spec, path_or_id, revision)
    return hf, tokenizer, config


def _read_tokenizer(spec: str, path_or_id: str, revision: str | None) -> Any:
    """The checkpoint's tokenizer; a local file that cannot be read is named."""
    try:
        with quiet_transformers():
            return _tokenizer(path_or_id, revision, _files_stamp(path_or_id))
    except Exception as err:  # noqa: BLE001 -- any reader's error: name the file it read
        directory = Path(path_or_id)
        if not directory.is_dir():
            raise
        present = [directory / n for n in TOKENIZER_FILES if (directory / n).exists()]
        bad = next((p for p in present if p.suffix == ".json" and not _is_json(p)), None)
        why = (str(err).splitlines() or [""])[0][:200]
        what = (f"{bad} is not JSON" if bad else
                f"its tokenizer files ({', '.join(p.name for p in present) or 'none'}) cannot "
                f"be read ({type(err).__name__}: {why})")
        raise LlmdynError(f"model {spec!r}: {what}; restore the files tokenizer.save_pretrained "
                          f"wrote into {directory}") from None


def _is_json(path: Path) -> bool:
    try:
        json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return True


def _report_keys(report: list[logging.LogRecord]) -> dict[str, list[str]]:
    """Keys of transformers' LOAD REPORT by status (``MISSING``, ``UNEXPECTED``, ``MISMATCH``)."""
    keys: dict[str, list[str]] = {}
    for record in report:
        for line in record.getMessage().splitlines():
            cells = [c.strip() for c in re.sub(r"\x1b\[[0-9;]*m", "", line).split("|")]
            if len(cells) >= 2 and cells[1] in ("MISSING", "UNEXPECTED", "MISMATCH"):
                keys.setdefault(cells[1], []).append(cells[0])
    return keys


def _check_load_report(spec: str, path_or_id: str, report: list[logging.LogRecord]) -> None:
    """Refuse weights transformers drew at random (missing) or did not use (unexpected).

    transformers loads such a checkpoint and only prints a table: a missing block weight or
    untied head would be random, and every number computed from it wrong.
    """
    keys = _report_keys(report)
    where = path_or_id if not Path(path_or_id).is_dir() else \
        ", ".join(str(p) for p in sorted(Path(path_or_id).glob("*.safetensors"))) or path_or_id
    if keys.get("MISSING"):
        missing = keys["MISSING"]
        raise LlmdynError(f"model {spec!r}: the weights in {where} lack {len(missing)} the config "
                          f"needs (e.g. {missing[0]}), which transformers would draw at random; "
                          "restore the safetensors saved with the config (save_pretrained "
                          "writes both)")
    if keys.get("UNEXPECTED"):
        extra = keys["UNEXPECTED"]
        raise LlmdynError(f"model {spec!r}: the weights in {where} hold {len(extra)} the model "
                          f"does not use (e.g. {extra[0]}): the config and the weights come "
                          "from different models; restore the config.json saved with the weights")


def _config_depth(directory: Path) -> tuple[int, str] | None:
    """(blocks the config promises, the block list's name in weight keys), or None if unknown."""
    config = AutoConfig.from_pretrained(str(directory), trust_remote_code=False)
    arch = ARCHITECTURES.get(config.model_type)
    layers = getattr(config.get_text_config(), "num_hidden_layers", None)
    if arch is None or not isinstance(layers, int):
        return None  # an unsupported family is refused by name when it is loaded
    return layers, arch.blocks.rsplit(".", 1)[-1]


def check_depth(directory: Path, spec: str) -> None:
    """Refuse a checkpoint whose config.json promises another number of blocks than its weights.

    Only the safetensors headers are read. transformers loads such a pair silently: with more
    blocks in the config it adds freshly random ones, with fewer it drops the last ones, and
    only its load report says so (a width mismatch, by contrast, is an error).

    Raises:
        LlmdynError: naming config.json, the weight files and both numbers.
    """
    found = _config_depth(directory)
    files = sorted(directory.glob("*.safetensors"))
    if found is None or not files:
        return
    layers, name = found
    block = re.compile(rf"(?:^|\.){re.escape(name)}\.(\d+)\.")
    indices = set()
    for path in files:
        with safe_open(str(path), framework="pt") as fh:
            indices.update(int(m.group(1)) for key in fh.keys() if (m := block.search(key)))
    held = max(indices) + 1 if indices else 0
    if held != layers:
        names = ", ".join(p.name for p in files)
        raise LlmdynError(f"model {spec!r}: {directory / 'config.json'} says {layers} layers "
                          f"(num_hidden_layers) but the weights ({names} in {directory}) hold "
                          f"{held} blocks; the config and the weights come from different "
                          "models: restore the config.json saved with the weights")


def _config_values_error(spec: str, directory: Path, err: Exception) -> LlmdynError:
    """A config.json whose values build no model, as one message naming the file.

    E.g. heads that do not divide the width, or a padding id beyond the vocabulary;
    transformers' last line says which.
    """
    why = " ".join(line.strip() for line in str(err).splitlines()[-1:]) or type(err).__name__
    return LlmdynError(f"model {spec!r}: {directory / 'config.json'} describes no model that "
                       f"builds ({why}); restore the config.json saved with the weights "
                       "(save_pretrained writes both)")


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
    # Read once per process: Gemma-3's 262k-entry tokenizer.json is slow to parse, and
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
