"""Transformers' progress bars off for a block: no "Loading weights" bar on a chapter page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Turn transformers' progress bars off for the block, restoring the previous setting.

    A chapter shows no "Loading weights" bar, and training shows no "Writing model shards" bar
    between its own bars.
    """
    # here, not at the top: training imports this module, and transformers takes about a
    # second to import; only a block that loads or saves a transformers model needs it
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()
