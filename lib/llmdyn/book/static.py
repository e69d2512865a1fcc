"""What the book's pages take from outside the chapters: its stylesheet, the models in words."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from llmdyn.models.packaged import PACKAGED

STATIC = "book/static"  # the book's own stylesheet(s), copied to _static/ at every build


def copy_static(book_root: Path) -> Path:
    """Copy the book's committed static files into ``<book_root>/_static/`` (git-ignored).

    Jupyter Book adds every ``.css`` file under ``_static/`` to every page, so the grade chips
    and the tables' styles (``book/static/llmdyn.css``) need no configuration.
    """
    static = book_root / "_static"
    static.mkdir(parents=True, exist_ok=True)
    for src in sorted((book_root / STATIC).glob("*.css")):
        shutil.copy2(src, static / src.name)
    return static


def model_descriptions() -> dict[str, str]:
    """Each packaged model in a few words, its name and 4-bit quantisation (the GGUF's type).

    For the intro's scale sentence (`llmdyn.claims.answer.scale_sentence`), e.g.
    ``{"smollm2-135m": "SmolLM2-135M-Instruct, 4-bit GGUF Q4_1"}``.
    """
    out = {}
    for name, entry in PACKAGED.items():
        quant = re.search(r"q\d_[a-z0-9_]+?(?=\.gguf)", entry.gguf_name.lower())
        kind = f", 4-bit GGUF {quant.group(0).upper()}" if quant else ""
        out[name] = f"{entry.description.split(',')[0]}{kind}"
    return out
