"""Defaults relative to the model: the paper's blocks and k where they fit, else fractions.

The chapters' block defaults (blocks 8–15, the pair 11/12, the pairs 3/4 and 23/24) were set
on SmolLM2-135M, 30 blocks, following the papers' 24–80-block models. On a model that has all
the blocks of a default, the default is used as is, so SmolLM2-135M (30 blocks) and
Gemma-3-270M (18) run what they always ran. On a shallower model each block b is moved to the
same fraction of depth: the block whose centre is nearest (b + ½)·L / 30 − ½ (eq. below).
k (top singular vectors) is `llmdyn.coupling.default_k.relative_k`, the library's one rule. An LSS
window (paper B: 11 layers) longer than the model's L + 1 points covers the same fraction of
them: 11·(L + 1)/31, the nearest odd number, at least 3.
"""

from __future__ import annotations

import math

from llmdyn.coupling.default_k import relative_k

__all__ = ["relative_blocks", "relative_k", "relative_pair", "relative_window", "same_fraction"]

REFERENCE_DEPTH = 30  # blocks of SmolLM2-135M, where the block defaults were chosen


def same_fraction(block: int, n_layers: int, reference: int = REFERENCE_DEPTH) -> int:
    """The block of an ``n_layers``-deep model at block ``block``'s fraction of ``reference``.

    Block b spans depths [b, b + 1) of ``reference``; its centre (b + ½)/reference is mapped
    to n_layers and rounded half up: round((b + ½)·L/reference − ½), clamped to 0 … L − 1.
    """
    centre = (block + 0.5) * n_layers / reference - 0.5
    return min(max(math.floor(centre + 0.5), 0), n_layers - 1)


def relative_blocks(blocks: list[int], n_layers: int) -> list[int]:
    """``blocks`` where the model has them all, else each at the same fraction of depth.

    Duplicates that the mapping makes (several blocks of 30 fall on one block of a shallow
    model) are kept once, in order: blocks 8–15 are blocks 1–3 of a 6-block model.
    """
    if max(blocks) < n_layers:
        return list(blocks)
    return list(dict.fromkeys(same_fraction(b, n_layers) for b in blocks))


def relative_pair(pair: tuple[int, int], n_layers: int) -> tuple[int, int]:
    """A pair (l, l′) moved to the same fraction of depth, keeping the offset l′ − l.

    l goes to its fraction of depth (:func:`same_fraction`), then both shift down if l′
    would fall beyond the last block. Needs ``n_layers > |l′ − l|``.
    """
    offset = pair[1] - pair[0]
    first = same_fraction(pair[0], n_layers)
    first = min(max(first, -offset), n_layers - 1 - max(offset, 0))
    return first, first + offset


def relative_window(window: int, n_layers: int) -> int:
    """``window`` where the L + 1 points hold it, else the same fraction of them (odd, ≥ 3).

    11 of SmolLM2-135M's 31 points become 3 of a 6-block model's 7: 11·7/31 ≈ 2.5, and the
    nearest odd number is 3.
    """
    points = n_layers + 1
    if window <= points:
        return window
    share = window * points / (REFERENCE_DEPTH + 1)
    odd = 2 * math.floor((share - 1) / 2 + 0.5) + 1  # the odd number nearest share
    largest = points if points % 2 else points - 1
    return max(3, min(odd, largest))
