"""Untrained twins: the architecture's own initialisation, fresh weights from a seed."""

from __future__ import annotations

import contextlib
import copy
from contextlib import contextmanager
from typing import Any

import torch
from transformers import AutoModelForCausalLM

from llmdyn import LlmdynError
from llmdyn.models.packaged import PACKAGED

__all__ = ["fresh_twin", "twin_config"]


def twin_config(spec: str, config: Any, init_field: str = "initializer_range") -> Any:
    """The configuration an untrained twin is initialised from: the architecture's own.

    Transformers draws a family's weights from N(0, σ²) with σ its config's ``init_field``
    (``initializer_range`` in most families, ``init_std`` in OPT's). A packaged GGUF carries
    no such field, so transformers fills in its class default (0.02 for Llama), not the value
    the model was trained from (SmolLM2-135M: 1/24). For packaged models the fields of
    :attr:`PackagedModel.published` (from the model's published ``config.json``, cited there)
    replace the defaults; local and hub checkpoints already carry their own config and keep it.

    Args:
        spec: the model spec as given to :func:`~llmdyn.models.loading.load_model`.
        config: the trained model's config (not modified).
        init_field: the family's field holding σ (``Architecture.init_field``).

    Returns:
        A copy of ``config`` with the published initialisation fields.

    Raises:
        LlmdynError: the config has no usable σ; the message names the field and the file to
            add it to.
    """
    out = copy.deepcopy(config)
    published = PACKAGED[spec].published if spec in PACKAGED else {}
    for key, value in published.items():
        setattr(out, key, value)
    std = getattr(out, init_field, None)
    if isinstance(std, bool) or not isinstance(std, int | float) or not std > 0:
        where = (f"add it to llmdyn.models.packaged.PACKAGED[{spec!r}].published"
                 if spec in PACKAGED else
                 f"add \"{init_field}\": <the std it was trained from> to the config.json "
                 "of the checkpoint")
        raise LlmdynError(f"model {spec!r}: its config gives no {init_field} (got {std!r}), the "
                          "standard deviation its untrained twin's weights are drawn from; "
                          f"{where}, or leave twins out (twin_seeds = [] where a chapter allows)")
    return out


def fresh_twin(config: Any, seed: int, *, skip_default_init: bool = True) -> torch.nn.Module:
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
