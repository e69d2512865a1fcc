"""How many singular vectors a coupling keeps by default: the papers' K, or less on narrow models.

Kept apart from :mod:`llmdyn.coupling.topk` because it needs no torch: the workflow reads it
when it plans jobs (through the chapters' parameters), where importing torch would cost every
Snakemake process seconds of CPU.
"""

from __future__ import annotations

from typing import Any

from llmdyn.core.checks import k_value

PAPER_K = 30  # paper A §3.1 and paper B §3.6: K = 30
K_FRACTION = 8  # a model narrower than 8·K keeps d_model // 8 singular vectors
K_MIN = 2  # r(A) divides by k − 1 (paper B §3.6); the bound every k parameter declares


def relative_k(d_model: int) -> int:
    """The default k: the papers' K = 30 where d_model ≥ 240, else d_model // 8 (at least 2).

    The one rule for every chapter and the ViT grids; a chapter that wants another k states it
    as a parameter (chapters 08 and 09 keep K = 30 on their narrow models). Eight directions
    per k keep unrelated bases far from diagonal (chance diagonal share 1/k) while holding most
    of a block's gain: 24 for DeiT-Tiny's 192, 8 for width 64.
    """
    return PAPER_K if d_model >= K_FRACTION * PAPER_K else max(2, d_model // K_FRACTION)


def check_k(k: Any, d_model: int) -> int:
    """``k`` if it is an int with ``K_MIN <= k <= d_model`` (a Jacobian has d_model of them).

    The one check of a coupling's k against a model, wherever it comes from: a chapter's
    parameters (at resolution), ``llmdyn measure``, a ViT grid, or a library call.
    """
    return k_value(k, d_model, minimum=K_MIN, why="r(A) divides by k - 1")


def coupling_k(k: int | None, d_model: int) -> int:
    """The k of a coupling of width ``d_model``: :func:`relative_k` for None, else ``k`` checked.

    The one place None becomes a number (a chapter's resolution, a ViT grid's measurement).
    """
    return relative_k(d_model) if k is None else check_k(k, d_model)
