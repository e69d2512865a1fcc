"""The Thought and Fixation phases as data: splits of depth, boundary estimates, phase windows.

No model code: :mod:`llmdyn.plots` draws these types (:mod:`.measure` measures them on a model).

:func:`estimate_boundary` combines the three change-point criteria of
:mod:`llmdyn.phases.changepoints` (LSS peak, entropy spread, norm velocity) into a
:class:`PhaseBoundary`; :class:`PhaseSplit` says which layers count as Thought and which as
Fixation, under a criterion or a fixed split into thirds of depth. Layer indices count block
boundaries: index l is x^l, 0 = embeddings, L = the last block's output after the final norm (the
papers' end point).

Layer L is in neither phase unless a caller asks for it (``include_last=True``): it is read after
the model's final norm, so it passes through a different lens from every other layer, and paper B
§5.3 treats the last layer as an irregularity of its own. Every range then ends at L − 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from llmdyn import LlmdynError
from llmdyn.phases.changepoints import entropy_spread_fit, lss_peak_fit, norm_velocity_fit

CRITERIA = ("consensus", "lss_peak", "entropy_spread", "norm_velocity")  # first_fixation()
SPLITS = (*CRITERIA, "thirds")  # PhaseBoundary.split(): the criteria, or a fixed split of depth


@dataclass(frozen=True)
class PhaseSplit:
    """Which layers ``0 … L`` count as Thought and which as Fixation (paper B §4, Table 1).

    Layer 0 (the embedding) is in neither phase: it is the same vector for every prompt that
    ends in the same token, so it would narrow Thought's spread over prompts and pull its means
    towards the embedding's values. Layer L is in neither phase either, unless
    ``include_last``: x^L is read after the final norm, a different map from every other
    layer's, and paper B §5.3 sets the last layer apart. At a boundary ``b`` Thought is
    ``1 … b-1`` and Fixation ``b … L-1`` (``b … L`` with ``include_last``); :meth:`thirds`
    takes the first and last thirds of the depth and leaves the middle third out, a split that
    needs no estimate at all.

    Attributes:
        name: the criterion that placed it (one of :data:`SPLITS`, or "boundary").
        n_layers: the model's number of blocks L.
        thought: (first, last) Thought layer, inclusive.
        fixation: (first, last) Fixation layer, inclusive.
    """

    name: str
    n_layers: int
    thought: tuple[int, int]
    fixation: tuple[int, int]

    def __post_init__(self) -> None:
        """Both phases non-empty, inside 1 … L, Thought before Fixation."""
        (t0, t1), (f0, f1) = self.thought, self.fixation
        if not 1 <= t0 <= t1 < f0 <= f1 <= self.n_layers:
            raise LlmdynError(f"a phase split needs 1 <= Thought <= … < Fixation <= L = "
                              f"{self.n_layers}, got Thought {self.thought}, Fixation "
                              f"{self.fixation}; a boundary must lie in 2 … L - 1 (2 … L when L "
                              "counts as Fixation)")

    @property
    def includes_last(self) -> bool:
        """Whether layer L (after the final norm) counts as a Fixation layer."""
        return self.fixation[1] == self.n_layers

    @classmethod
    def at(cls, boundary: int, n_layers: int, name: str = "boundary", *,
           include_last: bool = False) -> PhaseSplit:
        """Thought ``1 … boundary-1``, Fixation ``boundary … L-1`` (``… L`` with include_last)."""
        if isinstance(boundary, bool) or not isinstance(boundary, int | np.integer):
            raise LlmdynError(f"boundary must be the first Fixation layer (an int), got "
                              f"{boundary!r}")
        return cls(name, int(n_layers), (1, int(boundary) - 1),
                   (int(boundary), _last(int(n_layers), include_last)))

    @classmethod
    def thirds(cls, n_layers: int, *, include_last: bool = False) -> PhaseSplit:
        """Thought ``1 … ⌊L/3⌋``, Fixation ``⌈2L/3⌉ … L-1``; the middle third is in neither.

        With ``include_last`` Fixation ends at L.
        """
        if n_layers < 3:
            raise LlmdynError(f"a split into thirds needs L >= 3 blocks, got {n_layers}")
        return cls("thirds", int(n_layers), (1, n_layers // 3),
                   (-(-2 * n_layers // 3), _last(int(n_layers), include_last)))

    def masks(self) -> tuple[np.ndarray, np.ndarray]:
        """Boolean ``[layer+1]`` masks of the Thought and the Fixation layers."""
        depth = np.arange(self.n_layers + 1)
        return ((depth >= self.thought[0]) & (depth <= self.thought[1]),
                (depth >= self.fixation[0]) & (depth <= self.fixation[1]))

    def label(self) -> str:
        """E.g. "thirds: Thought 1–10, Fixation 20–29, L = 30 apart"."""
        apart = "" if self.includes_last else f", L = {self.n_layers} apart"
        return (f"{self.name}: Thought {self.thought[0]}–{self.thought[1]}, Fixation "
                f"{self.fixation[0]}–{self.fixation[1]}{apart}")


def _last(n_layers: int, include_last: bool) -> int:
    """The last layer a phase may hold: L - 1, or L with ``include_last``."""
    if not isinstance(include_last, bool):
        raise LlmdynError(f"include_last must be True or False, got {include_last!r}")
    return n_layers if include_last else n_layers - 1


def as_split(split: PhaseSplit | int, n_layers: int, *, include_last: bool = False) -> PhaseSplit:
    """A :class:`PhaseSplit` from itself or from the first Fixation layer (checked against L).

    An int boundary gives Fixation ``b … L-1`` (``b … L`` with ``include_last``); a split
    passed in keeps its own ranges.
    """
    out = split if isinstance(split, PhaseSplit) else PhaseSplit.at(
        split, n_layers, include_last=include_last)
    if out.n_layers != n_layers:
        raise LlmdynError(f"the phase split is for L = {out.n_layers} blocks, the values have "
                          f"L = {n_layers}")
    return out


def window_that_fits(window: int, n_layers: int, *, include_last: bool = False) -> int:
    """The LSS/equidistance window for a model of ``n_layers`` blocks: `window`, if it fits.

    Paper B uses 11 layers; a model with fewer than 11 points ``x^0 … x^{L-1}`` gets the
    largest odd window that fits (at least 3). No window holds x^L, read after the final norm,
    unless ``include_last`` (then the points are ``x^0 … x^L``;
    :func:`llmdyn.trajectories.geometry.depth_profile` takes the same flag).
    """
    if window < 3 or window % 2 == 0 or n_layers < 3 - include_last:
        raise LlmdynError(f"window must be odd >= 3 and n_layers >= {3 - include_last}, got "
                          f"{window}, {n_layers}")
    points = _last(n_layers, include_last) + 1
    return min(window, points if points % 2 else points - 1)


@dataclass(frozen=True)
class PhaseBoundary:
    """One model's Thought -> Fixation boundary by each criterion (layer indices 0..L).

    Attributes:
        model: the model's name.
        n_layers: its number of blocks L.
        lss_peak: :func:`lss_peak_layer`.
        entropy_spread: :func:`entropy_spread_layer`.
        norm_velocity: :func:`norm_velocity_layer`.
        gain: criterion name -> :attr:`ChangePoint.gain` of its fit (empty if not known): how
            much of the one-segment misfit the change-point explains; near 0 = no real change.
    """

    model: str
    n_layers: int
    lss_peak: int
    entropy_spread: int
    norm_velocity: int
    gain: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check that every estimate lies in 0..L."""
        for name, layer in self.layers.items():
            if not 0 <= layer <= self.n_layers:
                raise LlmdynError(f"{name}={layer} lies outside 0..{self.n_layers}")

    @property
    def layers(self) -> dict[str, int]:
        """The estimates by criterion name."""
        return {"lss_peak": self.lss_peak, "entropy_spread": self.entropy_spread,
                "norm_velocity": self.norm_velocity}

    @property
    def consensus(self) -> int:
        """The median of the three estimates: the first Fixation layer we use downstream."""
        return int(np.median(list(self.layers.values())))

    def first_fixation(self, criterion: str = "consensus", *, include_last: bool = False) -> int:
        """The first Fixation layer by ``criterion`` (one of SPLITS), clipped to 2 … L-1.

        The clip keeps both phases non-empty: layer 0 (the embedding) is in neither phase
        (:class:`PhaseSplit`), so Thought needs at least layer 1, and layer L is in neither
        unless ``include_last`` (then the clip is 2 … L). For ``"thirds"`` it is the first
        layer of the last third (use :meth:`split`, which also leaves the middle out).
        """
        if criterion == "thirds":
            return PhaseSplit.thirds(self.n_layers, include_last=include_last).fixation[0]
        if criterion not in CRITERIA:
            raise LlmdynError(f"criterion must be one of {SPLITS}, got {criterion!r}")
        layer = self.consensus if criterion == "consensus" else self.layers[criterion]
        return int(np.clip(layer, 2, _last(self.n_layers, include_last)))

    def split(self, how: str = "consensus", *, include_last: bool = False) -> PhaseSplit:
        """The Thought/Fixation split by a criterion, or ``"thirds"`` (one of SPLITS).

        Args:
            how: one of SPLITS.
            include_last: count layer L (after the final norm) as a Fixation layer; by default
                every range ends at L − 1 and L is shown apart (paper B §5.3).
        """
        if how not in SPLITS:
            raise LlmdynError(f"how must be one of {SPLITS}, got {how!r}")
        if how == "thirds":
            return PhaseSplit.thirds(self.n_layers, include_last=include_last)
        return PhaseSplit.at(self.first_fixation(how, include_last=include_last), self.n_layers,
                             name=how, include_last=include_last)

    @property
    def spread(self) -> int:
        """Largest minus smallest estimate, in layers."""
        return max(self.layers.values()) - min(self.layers.values())

    @property
    def relative(self) -> dict[str, float]:
        """The estimates as fractions of depth, l / L (to compare models of different depth)."""
        return {k: v / self.n_layers for k, v in self.layers.items()}


def estimate_boundary(
    model: str,
    *,
    norms: np.ndarray,
    windowed_lss: np.ndarray,
    entropy: np.ndarray,
    min_size: int = 3,
) -> PhaseBoundary:
    """All three criteria for one model (each with its default ``exclude_last``).

    Args:
        model: the model's name.
        norms: ``[prompt, layer+1]``.
        windowed_lss: ``[prompt, layer+1]``.
        entropy: ``[prompt, layer+1]``.
        min_size: minimum points per segment for every fit.

    Returns:
        The boundary estimates.
    """
    shapes = {a.shape[1] for a in (np.asarray(norms), np.asarray(windowed_lss),
                                   np.asarray(entropy)) if np.ndim(a) == 2}
    if len(shapes) != 1:
        raise LlmdynError("norms, windowed_lss and entropy must be [prompt, layer+1] with the "
                          f"same layer+1; got shapes {np.shape(norms)}, "
                          f"{np.shape(windowed_lss)}, {np.shape(entropy)}")
    fits = {"lss_peak": lss_peak_fit(windowed_lss, min_size=min_size),
            "entropy_spread": entropy_spread_fit(entropy, min_size=min_size),
            "norm_velocity": norm_velocity_fit(norms, min_size=min_size)}
    return PhaseBoundary(model=model, n_layers=shapes.pop() - 1,
                         **{name: fit.layer for name, fit in fits.items()},
                         gain={name: fit.gain for name, fit in fits.items()})


def agree(boundaries: PhaseBoundary | Sequence[PhaseBoundary], tolerance_layers: int) -> bool:
    """Whether the criteria agree: for every model, all estimates within ``tolerance_layers``.

    Args:
        boundaries: one model's boundary or several models'.
        tolerance_layers: the largest allowed spread (max - min) of a model's three estimates.

    Returns:
        True if every model's :attr:`PhaseBoundary.spread` is <= tolerance_layers.
    """
    items = [boundaries] if isinstance(boundaries, PhaseBoundary) else list(boundaries)
    if not items or not all(isinstance(b, PhaseBoundary) for b in items):
        raise LlmdynError(f"boundaries must be PhaseBoundary objects, got {boundaries!r:.80}")
    if isinstance(tolerance_layers, bool) or not isinstance(tolerance_layers, int) \
            or tolerance_layers < 0:
        raise LlmdynError(f"tolerance_layers must be an int >= 0, got {tolerance_layers!r}")
    return all(b.spread <= tolerance_layers for b in items)
