"""A described quantity and its estimate, with the interval that fits its kind and n.

Each constructor for a kind of statistic (`Measure.mean`, `median`, `ratio`, `difference`,
`fraction`, `slope`, `r2`, `signed_r2`) asks `llmdyn.stats.coverage.choose` which interval
judges that kind over this many independent units, from the one committed table
(``data/coverage.csv``, simulated by ``tools/coverage.py``):

- a closed-form or exact interval where one is calibrated (t for a mean or a paired difference,
  Welch for independent ones, the linearised t for a ratio of means, OLS t for a slope, Fisher z
  for R², Clopper–Pearson for a fraction, order statistics for a median);
- else the BCa bootstrap (``scipy.stats.bootstrap``), never with 5 units or fewer; where BCa
  is undefined the percentile interval is shown, labelled so, with no verdict;
- a few-valued statistic (at most ``FEW_VALUES`` distinct per-unit values) has no median
  interval: ties break the table's calibration, so such a claim is judged in the sign test's
  form (`Measure.share_on_side`, Clopper–Pearson on the share);
- else none: the value is shown with no interval and **no verdict**, and the reason names the
  coverage table.

``method=`` asks for one method (e.g. ``Measure.slope(x, y, q, method="ols_t")``); it is used
only where the table allows it at this n. `Measure.of` and `Measure.of_rows` bootstrap any other
statistic ("other" kind: trusted only where BCa covered for every kind tested).
`Measure.per_unit` shows the values of a few units side by side with no pooled verdict.

Every estimate names its **sampling unit** (``sampling_unit="prompt"``, ``"model"``, ``"run"``,
``"seed"``, ``"ViT"``; `llmdyn.claims.units`): the samples hold one value per independent unit,
plain or keyed by unit id. An estimate with no declared unit is shown, never graded (`Claim`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from llmdyn import LlmdynError
from llmdyn.claims import units
from llmdyn.claims.estimation import Recipe, interval_estimate
from llmdyn.stats import bootstrap, coverage
from llmdyn.stats.bootstrap import Estimate

Kind = Literal["estimate", "fact"]
_SHOWN = ("fmt", "unit", "detail", "sampling_unit", "members")  # fields an unmeasured measure keeps
UNVARYING = 1e-6  # an interval narrower than this share of its ends: units that do not vary
STATISTIC_KINDS = {bootstrap.mean: "mean", bootstrap.median: "median",
                   bootstrap.ratio_of_means: "ratio", bootstrap.difference_of_means: "difference",
                   bootstrap.fraction_true: "fraction", bootstrap.slope: "slope",
                   bootstrap.r2: "r2"}
METHOD_NAMES = {"t": "t interval", "bca": "BCa bootstrap", "percentile": "percentile bootstrap",
                "order": "order-statistic interval", "delta_t": "linearised t interval",
                "ols_t": "OLS t interval", "fisher_z": "Fisher z interval",
                "exact": "Clopper–Pearson interval", "welch": "Welch t interval",
                "log_t": "t interval on the logs", "pitman_morgan": "Pitman–Morgan interval",
                "pitman_morgan_hc4": "Pitman–Morgan interval (HC4)",
                "zou": "Zou (2007) interval"}  # how a result names its interval method


@dataclass(frozen=True)
class Measure:
    """A described quantity and its estimate, or the reason it was not measured.

    Attributes:
        quantity: what the number is, as a noun phrase for the rule's sentence
            (e.g. "trained/untrained ratio of the diagonal share").
        estimate: the value with its interval; None when not measured.
        fmt: format spec of the value and the interval ends (e.g. ".3f"; "yes/no" for 1/0).
        unit: text after each number (e.g. "×", " nats").
        detail: context shown after the number (what the prompts were, per-model values).
        missing: "not testable offline" or "not run" when ``estimate`` is None; "no verdict"
            when the estimate is shown but the data cannot test the claim (``reason`` says why).
        reason: why it was not measured (shown with the verdict).
        case: for a fact, the one case the paper also states (e.g. "the France prompt, Figs
            9-10"); empty for an estimate.
        sampling_unit: the independent unit the estimate's n counts ("prompt", "model", "run",
            "seed", "ViT"; `llmdyn.claims.units.UNITS`); "" for none, and then no grade.
        unit_ids: ``[unit]`` the units' ids, where the values came keyed by id.
        samples: ``[sample][unit]`` the per-unit values the interval was computed from (one
            tuple per sample: two for a paired ratio or difference); empty where not kept.
        recipe: how the estimate was computed from ``samples`` (to recompute it at another n,
            `llmdyn.claims.planning`); None where it cannot be replayed.
        members: what the units summarise, where each unit is a cluster (e.g. "120 prompts"
            for 6 tasks): shown as "n = 120 prompts in 6 tasks"; "" where the units are the
            sampled items themselves.
    """

    quantity: str
    estimate: Estimate | None
    fmt: str = ".3f"
    unit: str = ""
    detail: str = ""
    missing: Literal["", "not testable offline", "not run", "no verdict"] = ""
    reason: str = ""
    case: str = ""
    sampling_unit: str = ""
    unit_ids: tuple[str, ...] = ()
    samples: tuple[tuple[float, ...], ...] = ()
    recipe: Recipe | None = None
    members: str = ""

    def __post_init__(self) -> None:
        """A fact names the paper's case; an estimate has none; a unit is an independent one."""
        units.check_unit(self.sampling_unit)
        fact = self.estimate is not None and self.estimate.exact
        if fact and not self.case.strip():
            raise LlmdynError(f"the fact {self.quantity!r} needs case=: the one case the paper "
                              "also states (e.g. 'the France prompt, Figs 9-10'); a number "
                              "from sampled prompts, models or seeds is Measure.single instead")
        if self.case and not fact:
            raise LlmdynError(f"case= is for Measure.fact only; {self.quantity!r} is an estimate")

    @property
    def kind(self) -> Kind:
        """"fact" (judged on its value) or "estimate" (judged on its interval)."""
        return "fact" if self.estimate is not None and self.estimate.exact else "estimate"

    @classmethod
    def of(cls, statistic: bootstrap.Statistic, *samples, quantity: str, paired: bool = True,
           seed: int = 0, kind: str | None = None, method: str | None = None,
           signed: bool = False, **kw) -> Measure:
        """A vectorised statistic of ``[item]`` samples, with the interval its kind and n allow.

        ``kind`` defaults to the statistic's own (`STATISTIC_KINDS`), else "other". An empty
        sample (e.g. a one-token grid has no off-diagonal tiles) gives a "not run" measure
        rather than an error: the chapter still shows the claim and why it is empty. Where no
        interval reaches 95 % coverage at this n, the value is shown with **no verdict**.
        """
        samples, ids = units.aligned(samples, paired=paired)
        if any(np.size(s) == 0 for s in samples):
            return cls._empty(quantity, **kw)
        kind = kind or STATISTIC_KINDS.get(statistic, "other")
        est, reason = interval_estimate(kind, statistic, *samples, paired=paired, seed=seed,
                                        method=method, signed=signed)
        kept = tuple(tuple(float(x) for x in np.ravel(s)) for s in samples)
        recipe = Recipe(kind, statistic, paired, signed, method)
        return cls._judged(quantity, est, reason, unit_ids=ids, samples=kept, recipe=recipe,
                           **kw)

    @classmethod
    def _judged(cls, quantity: str, est: Estimate, reason: str, **kw) -> Measure:
        """A measure whose estimate is judged, or shown with no verdict and ``reason``."""
        if reason and math.isfinite(est.value):  # an undefined value is "not run" (Rule.judge)
            return cls(quantity, est, missing="no verdict", reason=reason, **kw)
        return cls(quantity, est, **kw)

    @classmethod
    def _empty(cls, quantity: str, **kw) -> Measure:
        """A measure with nothing to resample (an empty sample): "not run"."""
        return cls(quantity, None, missing="not run", reason="no values to measure",
                   **{k: v for k, v in kw.items() if k in _SHOWN})

    @classmethod
    def of_rows(cls, statistic, *samples, quantity: str, paired: bool = True, seed: int = 0,
                kind: str = "other", **kw) -> Measure:
        """A statistic of whole ``[item, ...]`` arrays, resampling rows (e.g. prompts), BCa."""
        if any(np.size(s) == 0 for s in samples):
            return cls._empty(quantity, **kw)
        est, reason = interval_estimate(kind, statistic, *samples, paired=paired, seed=seed,
                                        rows=True)
        return cls._judged(quantity, est, reason, **kw)

    @classmethod
    def mean(cls, values, quantity: str, **kw) -> Measure:
        """Mean over items (prompts, seeds), ``values: [item]``."""
        return cls.of(bootstrap.mean, values, quantity=quantity, **kw)

    @classmethod
    def median(cls, values, quantity: str, **kw) -> Measure:
        """Median over items, ``values: [item]``."""
        return cls.of(bootstrap.median, values, quantity=quantity, **kw)

    @classmethod
    def ratio(cls, a, b, quantity: str, **kw) -> Measure:
        """mean(a) / mean(b), e.g. trained over untrained on the same prompts (paired)."""
        return cls.of(bootstrap.ratio_of_means, a, b, quantity=quantity, **kw)

    @classmethod
    def difference(cls, a, b, quantity: str, **kw) -> Measure:
        """mean(a) − mean(b), paired by item unless ``paired=False`` (then Welch's t)."""
        return cls.of(bootstrap.difference_of_means, a, b, quantity=quantity, **kw)

    @classmethod
    def fraction(cls, passed, quantity: str, **kw) -> Measure:
        """Fraction of items that pass, ``passed: [item]`` booleans (Clopper–Pearson)."""
        values = np.asarray(passed, dtype=np.float64)
        return cls.of(bootstrap.fraction_true, values, quantity=quantity, **kw)

    @classmethod
    def share_on_side(cls, values, side, quantity: str, *, detail: str = "",
                      **kw) -> Measure:
        """The sign test's form of a median claim: the share of units whose value ``side`` clears.

        For a per-unit position that takes few values (a layer), ties make the median's
        order-statistic interval ``[x, x]``; the share with its Clopper–Pearson interval asks
        the same question and keeps its width. Judge it with ``above(0.5)`` (a majority, the
        book's own threshold, said in the detail). ``values: [unit]``; NaN units (no value to
        place) are left out. ``side``: a rule, or anything with ``clears(x) -> bool``.
        """
        values = np.asarray(values, dtype=np.float64)
        passed = [side.clears(x) for x in values[np.isfinite(values)]]
        note = "a majority (0.5) is the book's own threshold"
        return cls.fraction(passed, quantity, detail=f"{note}; {detail}" if detail else note,
                            **kw)

    @classmethod
    def slope(cls, x, y, quantity: str, **kw) -> Measure:
        """OLS slope of y on x over (x, y) pairs (OLS t interval, or BCa with ``method="bca"``)."""
        return cls.of(bootstrap.slope, x, y, quantity=quantity, **kw)

    @classmethod
    def r2(cls, x, y, quantity: str, **kw) -> Measure:
        """R² of the OLS line of y on x over (x, y) pairs (Fisher z interval of r, squared)."""
        return cls.of(bootstrap.r2, x, y, quantity=quantity, **kw)

    @classmethod
    def signed_r2(cls, x, y, quantity: str, **kw) -> Measure:
        """R² of y on x times the sign of the slope (:func:`bootstrap.signed_r2`)."""
        return cls.of(bootstrap.signed_r2, x, y, quantity=quantity, kind="r2", signed=True,
                      **kw)

    @classmethod
    def from_interval(cls, value: float, lo: float, hi: float, n: int, quantity: str, *,
                      kind: str, method: str, **kw) -> Measure:
        """An interval computed elsewhere (e.g. statsmodels' OLS t), judged only where it covers.

        Args:
            value: the estimate.
            lo: lower end of its 95 % interval.
            hi: upper end.
            n: number of independent units.
            quantity: what the number is.
            kind: its kind of statistic (`coverage.KINDS`).
            method: how the interval was computed; it must be one of ``METHODS[kind]``, and the
                measure gets no verdict where the coverage table does not allow it at this n.
            **kw: `Measure` fields (fmt, unit, detail).
        """
        chosen, reason = coverage.choose(kind, n, method)
        if chosen is None:
            return cls._judged(quantity, Estimate(float(value), math.nan, math.nan, n), reason,
                               **kw)
        return cls(quantity, Estimate(float(value), float(lo), float(hi), n, method=method), **kw)

    @classmethod
    def per_unit(cls, values, quantity: str, *, labels=None, **kw) -> Measure:
        """A few units' values side by side, with no pooled verdict (e.g. 2-5 training runs).

        Args:
            values: ``[unit]`` one number per independent unit.
            quantity: what each number is.
            labels: ``[unit]`` names of the units (default 1, 2, ...).
            **kw: `Measure` fields (fmt, unit, detail, sampling_unit).
        """
        values = np.asarray(values, dtype=np.float64).ravel()
        labels = list(labels) if labels is not None else [str(i + 1) for i in range(values.size)]
        if len(labels) != values.size or values.size == 0:
            raise LlmdynError(f"per_unit needs one label per value, got {len(labels)} labels "
                              f"for {values.size} values")
        m = cls(quantity, None, **{k: v for k, v in kw.items() if k in ("fmt", "unit")})
        shown = "; ".join(f"{lab}: {m.number(v)}" for lab, v in zip(labels, values, strict=True))
        detail = "; ".join(x for x in (f"per unit: {shown}", kw.get("detail", "")) if x)
        est = Estimate(float(np.median(values)), math.nan, math.nan, values.size)
        unit = kw.get("sampling_unit", "")
        return cls(quantity, est, fmt=m.fmt, unit=m.unit, detail=detail, missing="no verdict",
                   reason=f"{units.counted(unit, values.size) if unit else values.size} "
                          "shown one by one: no pooled verdict", sampling_unit=unit,
                   unit_ids=tuple(map(str, labels)), samples=(tuple(map(float, values)),))

    @classmethod
    def fact(cls, value: float | bool, quantity: str, *, case: str, **kw) -> Measure:
        """A deterministic outcome that the paper also states for one case, judged as a fact.

        Args:
            value: the outcome (a bool for yes/no facts).
            quantity: what it is, e.g. "top token is 'Paris'".
            case: the paper's case, e.g. "the France prompt, as in Figs 9-10".
            **kw: `Measure` fields (fmt, unit, detail).
        """
        return cls(quantity, bootstrap.exact(float(value)), case=case, **kw)

    @classmethod
    def single(cls, value: float, quantity: str, *, n: int = 1, **kw) -> Measure:
        """An estimate with no interval (one prompt, or a statistic without one): no verdict.

        Args:
            value: the number.
            quantity: what it is.
            n: how many items it comes from (1 for one prompt).
            **kw: `Measure` fields (fmt, unit, detail).
        """
        return cls(quantity, bootstrap.Estimate(float(value), float("nan"), float("nan"), n),
                   **kw)

    @classmethod
    def not_testable(cls, quantity: str, reason: str, *, detail: str = "") -> Measure:
        """A claim that needs what is not available offline (checkpoints, datasets)."""
        return cls(quantity, None, detail=detail, missing="not testable offline", reason=reason)

    @classmethod
    def not_run(cls, quantity: str, reason: str, *, detail: str = "") -> Measure:
        """A claim this run's parameters left out (e.g. no compare model given)."""
        return cls(quantity, None, detail=detail, missing="not run", reason=reason)

    def resolution(self, x: float, fmt: str | None = None) -> float:
        """One unit of the last digit ``fmt`` (default: the printed format) prints for ``x``.

        ".3f" prints 0.001, ".1%" 0.001 of the value, ".3g" three significant digits of x; 0
        where unknown.
        """
        found = re.fullmatch(r"[^.]*\.(\d+)([fFeEgG%])", self.printed_fmt if fmt is None else fmt)
        if not found or not math.isfinite(x):
            return 0.0
        digits, kind = int(found[1]), found[2].lower()
        if kind == "f":
            return 10.0 ** -digits
        if kind == "%":
            return 10.0 ** -(digits + 2)
        magnitude = math.floor(math.log10(abs(x))) if x else 0
        return 10.0 ** (magnitude - digits + (1 if kind == "g" else 0))

    @property
    def printed_fmt(self) -> str:
        """``fmt``, or one digit finer where the interval is narrower than one printed digit.

        Never more than one: units that agree to a tenth of the quantity's own precision still
        print as a zero-width interval. The grade is read from the unrounded ends all the same;
        only units that do not vary at all (`zero_width`) withhold it.
        """
        est = self.estimate
        if est is None or not est.has_interval or not _narrower(est, self.fmt, self.resolution):
            return self.fmt
        return re.sub(r"\.(\d+)", lambda d: f".{int(d[1]) + 1}", self.fmt, count=1)

    def zero_width(self) -> bool:
        """Whether the units do not vary: the interval's width is within float32's precision.

        The states are float32, so units that agree to ``UNVARYING`` of the numbers they were
        computed from (about ten float32 steps of the largest per-unit value, or of the
        interval's ends where the values were not kept) are one number computed several
        times, not independent evidence: a difference of two entropies of 5 nats that varies
        by 1e-8 does not vary. Units that differ by more are graded from the unrounded
        interval, however few digits print.
        """
        est = self.estimate
        if est is None or not est.has_interval:
            return False
        scale = max(abs(est.lo), abs(est.hi), *(abs(x) for s in self.samples for x in s))
        return est.hi - est.lo <= UNVARYING * scale

    def interval_text(self) -> str:
        """"n = 20 prompts, t interval": the units and how the interval was computed.

        Clusters as units read "n = 120 prompts in 6 tasks, t interval".
        """
        est = self.estimate
        text = f"n = {units.counted(self.sampling_unit, est.n)}"
        if self.members:
            text = f"n = {self.members} in {units.counted(self.sampling_unit, est.n)}"
        if est.has_interval and est.method:
            text += f", {METHOD_NAMES.get(est.method, est.method)}"
        return text

    def number(self, x: float) -> str:
        """One value in this measure's format and unit."""
        if not math.isfinite(x):
            return "n/a"
        if self.fmt == "yes/no":
            return "yes" if x >= 0.5 else "no"
        return f"{x:{self.printed_fmt}}{self.unit}"


def _narrower(est: Estimate, fmt: str, resolution) -> bool:
    """Whether ``est``'s interval spans less than one unit of ``fmt``'s last digit."""
    return est.hi - est.lo < resolution(max(abs(est.lo), abs(est.hi)), fmt)
