"""A paper's claim as data: what is measured, the rule that judges it, and the computed verdict.

A chapter lists its claims; each one names the paper's statement and number, a `Measure` (an
estimate over prompts or seeds with its bootstrap interval) and a `Rule` (a comparison with a
threshold). The verdict is computed from the interval and the rule, never typed:

- **holds**: the whole interval lies on the paper's side of the threshold;
- **does not hold**: the whole interval lies on the other side;
- **inconclusive**: the interval straddles the threshold, wherever the estimate lies
  (a `within` rule: holds inside the band, does not hold wholly outside it);
- **no verdict**: an estimate with no interval (n = 1, or a statistic without one) is
  described, not judged;
- **not testable offline** / **not run**: nothing was measured, with the reason.

A measure is of one of two kinds (`Kind`). An **estimate** is a number computed from sampled
prompts, models or seeds; only its interval can carry a verdict. A **fact** is a deterministic
outcome that the paper also states for one case (e.g. "the France prompt's top token is
'Paris'", Figs 9-10); it is judged on its value, and its result names that case.

`llmdyn.claims.render` turns a list of claims into the chapter's table and its scorecard part.

Example:
    >>> import numpy as np
    >>> claim = Claim("coupled", "A", "§5.1", "Trained blocks couple", "diagonal tiles",
    ...               Measure.ratio(np.array([4.0, 5, 6]), np.array([1.0, 1, 1]),
    ...                             "trained/untrained diagonal share", unit="×"),
    ...               at_least(2))
    >>> claim.verdict.grade
    'holds'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from llmdyn import LlmdynError
from llmdyn.stats import bootstrap
from llmdyn.stats.bootstrap import Estimate

Grade = Literal["holds", "inconclusive", "does not hold", "no verdict", "not testable offline",
                "not run", "for comparison"]
GRADES: tuple[str, ...] = ("holds", "inconclusive", "does not hold", "no verdict",
                           "not testable offline", "not run", "for comparison")
JUDGED: tuple[str, ...] = ("holds", "inconclusive", "does not hold")  # the grades that are verdicts
Kind = Literal["estimate", "fact"]
PAPERS = ("A", "B")  # A: block coupling (coupling.txt); B: thought and fixation


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
    """

    quantity: str
    estimate: Estimate | None
    fmt: str = ".3f"
    unit: str = ""
    detail: str = ""
    missing: Literal["", "not testable offline", "not run", "no verdict"] = ""
    reason: str = ""
    case: str = ""

    def __post_init__(self) -> None:
        """A fact names the paper's case; an estimate has none."""
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
           seed: int = 0, **kw) -> Measure:
        """Any vectorised statistic of one or more ``[item]`` samples, with its interval.

        An empty sample (e.g. a one-token grid has no off-diagonal tiles) gives a "not run"
        measure rather than an error: the chapter still shows the claim and why it is empty.
        """
        if any(np.size(s) == 0 for s in samples):
            return cls._empty(quantity, **kw)
        return cls(quantity, bootstrap.bootstrap(statistic, *samples, paired=paired, seed=seed),
                   **kw)

    @classmethod
    def _empty(cls, quantity: str, **kw) -> Measure:
        """A measure with nothing to resample (an empty sample): "not run"."""
        return cls(quantity, None, missing="not run", reason="no values to measure",
                   **{k: v for k, v in kw.items() if k in ("fmt", "unit", "detail")})

    @classmethod
    def of_rows(cls, statistic, *samples, quantity: str, paired: bool = True, seed: int = 0,
                **kw) -> Measure:
        """A statistic of whole ``[item, ...]`` arrays, resampling rows (e.g. prompts)."""
        if any(np.size(s) == 0 for s in samples):
            return cls._empty(quantity, **kw)
        est = bootstrap.bootstrap_rows(statistic, *samples, paired=paired, seed=seed)
        return cls(quantity, est, **kw)

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
        """mean(a) − mean(b), paired by item unless ``paired=False``."""
        return cls.of(bootstrap.difference_of_means, a, b, quantity=quantity, **kw)

    @classmethod
    def fraction(cls, passed, quantity: str, **kw) -> Measure:
        """Fraction of items that pass, ``passed: [item]`` booleans."""
        values = np.asarray(passed, dtype=np.float64)
        return cls.of(bootstrap.fraction_true, values, quantity=quantity, **kw)

    @classmethod
    def slope(cls, x, y, quantity: str, **kw) -> Measure:
        """OLS slope of y on x, resampling (x, y) pairs."""
        return cls.of(bootstrap.slope, x, y, quantity=quantity, **kw)

    @classmethod
    def r2(cls, x, y, quantity: str, **kw) -> Measure:
        """R² of the OLS line of y on x, resampling (x, y) pairs."""
        return cls.of(bootstrap.r2, x, y, quantity=quantity, **kw)

    @classmethod
    def signed_r2(cls, x, y, quantity: str, **kw) -> Measure:
        """R² of y on x times the sign of the slope (:func:`bootstrap.signed_r2`)."""
        return cls.of(bootstrap.signed_r2, x, y, quantity=quantity, **kw)

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
    def exact(cls, value: float, quantity: str, **kw) -> Measure:
        """Old name of :meth:`single` (an estimate with no interval, never judged).

        Kept while chapters written before the fact/estimate rule still call it; a fact is
        :meth:`fact` with the paper's case.
        """
        return cls.single(value, quantity, **kw)

    @classmethod
    def not_testable(cls, quantity: str, reason: str, *, detail: str = "") -> Measure:
        """A claim that needs what is not available offline (checkpoints, datasets)."""
        return cls(quantity, None, detail=detail, missing="not testable offline", reason=reason)

    @classmethod
    def not_run(cls, quantity: str, reason: str, *, detail: str = "") -> Measure:
        """A claim this run's parameters left out (e.g. no compare model given)."""
        return cls(quantity, None, detail=detail, missing="not run", reason=reason)

    def number(self, x: float) -> str:
        """One value in this measure's format and unit."""
        if not math.isfinite(x):
            return "n/a"
        if self.fmt == "yes/no":
            return "yes" if x >= 0.5 else "no"
        return f"{x:{self.fmt}}{self.unit}"


Op = Literal[">=", ">", "<=", "<", "within"]


@dataclass(frozen=True)
class Rule:
    """A named comparison of a measure with a threshold, judged on the interval.

    Attributes:
        op: ">=" (at least), ">" (above), "<=" (at most), "<" (below) or "within"
            (|x − threshold| ≤ tolerance).
        threshold: the bound, or the centre for "within".
        tolerance: half-width of the band for "within"; 0 otherwise.
    """

    op: Op
    threshold: float
    tolerance: float = 0.0

    def __post_init__(self):
        if self.op not in (">=", ">", "<=", "<", "within"):
            raise LlmdynError(f"Rule op must be '>=', '>', '<=', '<' or 'within', "
                              f"got {self.op!r}")
        if not math.isfinite(self.threshold):
            raise LlmdynError(f"Rule threshold must be finite, got {self.threshold}")
        if self.op == "within" and not self.tolerance > 0:
            raise LlmdynError(f"a 'within' rule needs tolerance > 0, got {self.tolerance}")

    def clears(self, x: float) -> bool:
        """Whether one value satisfies the comparison (NaN never does)."""
        if not math.isfinite(x):
            return False
        compare = {">=": x >= self.threshold, ">": x > self.threshold,
                   "<=": x <= self.threshold, "<": x < self.threshold}
        if self.op in compare:
            return bool(compare[self.op])
        return abs(x - self.threshold) <= self.tolerance

    def judge(self, est: Estimate) -> tuple[Grade, str]:
        """The grade of an estimate and a short reason where it is not the plain reading."""
        if not math.isfinite(est.value):
            return "not run", "undefined here: no values for this part of the run"
        if est.exact:  # a fact: judged on its value
            return ("holds" if self.clears(est.value) else "does not hold"), ""
        if not est.has_interval:  # an estimate without an interval is described, not judged
            return "no verdict", f"an estimate with no interval (n = {est.n})"
        # The grade reads the interval alone: the estimate's side of the threshold is not evidence.
        if self.clears(est.lo) and self.clears(est.hi):
            return "holds", ""
        if self.misses_everywhere(est.lo, est.hi):
            return "does not hold", ""
        return "inconclusive", "the interval straddles the threshold"

    def misses_everywhere(self, lo: float, hi: float) -> bool:
        """Whether no value in [lo, hi] satisfies the comparison (the interval is wholly outside).

        Both ends miss a one-sided bound only when the whole interval does; a `within` band
        can also sit inside an interval whose two ends miss it, on either side.
        """
        if self.clears(lo) or self.clears(hi):
            return False
        if self.op == "within":
            return not (lo < self.threshold - self.tolerance and hi > self.threshold + self.tolerance)
        return True

    def bound(self, measure: Measure) -> str:
        """The comparison as text, e.g. "≥ 2×" or "within 0.100 of 0.250"."""
        if self.op == "within":
            return f"within {measure.number(self.tolerance)} of {measure.number(self.threshold)}"
        sign = {">=": "≥", ">": ">", "<=": "≤", "<": "<"}[self.op]
        return f"{sign} {measure.number(self.threshold)}"

    def sentence(self, measure: Measure) -> str:
        """The rule in words, for the chapter's prose and the scorecard."""
        if measure.kind == "fact":
            return f"a fact: holds when the {measure.quantity} is {self.bound(measure)}"
        level = round(100 * (measure.estimate.level if measure.estimate else bootstrap.LEVEL))
        outside = "wholly outside it" if self.op == "within" else "wholly on the other side"
        return (f"holds when the {level} % interval of the {measure.quantity} lies "
                f"{self.bound(measure)}; does not hold when it lies {outside}; "
                "inconclusive when it straddles")


def at_least(threshold: float) -> Rule:
    """The measure must be ≥ ``threshold``."""
    return Rule(">=", threshold)


def above(threshold: float) -> Rule:
    """The measure must be > ``threshold`` (e.g. a difference that must be positive)."""
    return Rule(">", threshold)


def below(threshold: float) -> Rule:
    """The measure must be < ``threshold`` (e.g. a difference that must be negative)."""
    return Rule("<", threshold)


def at_most(threshold: float) -> Rule:
    """The measure must be ≤ ``threshold``."""
    return Rule("<=", threshold)


def within(target: float, tolerance: float) -> Rule:
    """The measure must lie within ``tolerance`` of ``target``."""
    return Rule("within", target, tolerance)


@dataclass(frozen=True)
class Verdict:
    """A claim's grade and, where it needs one, the reason."""

    grade: Grade
    reason: str = ""

    def text(self) -> str:
        """"inconclusive (the interval straddles the threshold)"."""
        return f"{self.grade} ({self.reason})" if self.reason else self.grade


_ID = re.compile(r"^[a-z][a-z0-9_]*$")


def slug(name: str) -> str:
    """A model name as a claim-id part: "gemma3-270m" -> "gemma3_270m"."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "x"


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, what we measured for it, and the rule that judges it.

    Attributes:
        id: short key, lowercase with underscores; the glue keys are ``<id>_value`` etc.
        paper: "A" (block coupling) or "B" (thought and fixation).
        section: where the paper makes it, e.g. "§5.1, Fig 3".
        statement: the claim in words.
        paper_value: the paper's number or observation.
        measure: our quantity and its estimate.
        rule: the comparison that judges it; None shows the measure for comparison only.
    """

    id: str
    paper: Literal["A", "B"]
    section: str
    statement: str
    paper_value: str
    measure: Measure
    rule: Rule | None = field(default=None)

    def __post_init__(self):
        if not _ID.match(self.id):
            raise LlmdynError(f"Claim id must be lowercase letters, digits and underscores, "
                              f"got {self.id!r}")
        if self.paper not in PAPERS:
            raise LlmdynError(f"Claim {self.id}: paper must be 'A' or 'B', got {self.paper!r}")

    @property
    def verdict(self) -> Verdict:
        """Computed from the measure's interval and the rule."""
        if self.measure.missing:
            return Verdict(self.measure.missing, self.measure.reason)
        if self.rule is None:
            return Verdict("for comparison")
        return Verdict(*self.rule.judge(self.measure.estimate))

    @property
    def rule_text(self) -> str:
        """The rule's sentence, or why there is none."""
        if self.rule is not None:
            return self.rule.sentence(self.measure)
        return "—" if self.measure.missing else "no rule: shown beside the paper's measure"

    def result_text(self) -> str:
        """Our number: estimate, interval and item count, then the detail."""
        m, est = self.measure, self.measure.estimate
        if est is None or not math.isfinite(est.value):
            text = "n/a"
        elif est.exact:
            text = f"{m.number(est.value)} (a fact about {m.case})"
        elif est.has_interval:
            text = (f"{m.number(est.value)} [{m.number(est.lo)}, {m.number(est.hi)}] "
                    f"(n = {est.n})")
        else:
            text = f"{m.number(est.value)} (n = {est.n}, no interval)"
        return f"{m.quantity}: {text}" + (f"; {m.detail}" if m.detail else "")
