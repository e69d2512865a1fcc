"""What the book's pages take from outside the chapters: stylesheet, MathJax, models in words."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import yaml

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


MATHJAX = Path(sys.prefix) / "share" / "mathjax" / "package" / "es5"  # `make setup` puts it here


def html_config(book_root: Path) -> Path:
    """A config that serves MathJax from the book itself when a local copy exists.

    Sphinx otherwise points the page at a CDN, so formulas stay raw LaTeX for a reader without
    a network (and in our headless screenshots). The HTML build also leaves out Jupyter Book's
    LaTeX extension, so the book's figures stay unnumbered. Returns the config file to build
    with.
    """
    config = yaml.safe_load((book_root / "_config.yml").read_text())
    # Jupyter Book's LaTeX extension sets numfig on for every builder, and the HTML pages would
    # number the book's figures ("Fig. 21"), colliding with the papers' numbers; HTML needs
    # nothing from it (a LaTeX build keeps it).
    config.setdefault("latex", {})["use_jupyterbook_latex"] = False
    if (MATHJAX / "tex-chtml.js").exists():
        static = book_root / "_static" / "mathjax"
        static.mkdir(parents=True, exist_ok=True)
        shutil.copy2(MATHJAX / "tex-chtml.js", static / "tex-chtml.js")
        shutil.copytree(MATHJAX / "output" / "chtml" / "fonts" / "woff-v2",
                        static / "output" / "chtml" / "fonts" / "woff-v2", dirs_exist_ok=True)
        sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
        sphinx["mathjax_path"] = "mathjax/tex-chtml.js"
        sphinx["html_static_path"] = ["_static"]
    path = book_root / "_build" / "_config.offline.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
