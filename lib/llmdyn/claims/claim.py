"""A paper's claim as data: what is measured, the rule that judges it, and the computed verdict.

A chapter lists its claims; each one names the paper's statement and number, a `Measure` (an
estimate over prompts or seeds with the interval that fits its kind and n, see
`llmdyn.claims.measure`) and a `Rule` (a comparison with a threshold). The verdict is
computed from the interval and the rule, never typed:

- **holds**: the whole interval lies on the paper's side of the threshold;
- **does not hold**: the whole interval lies on the other side;
- **inconclusive**: the interval straddles the threshold, wherever the estimate lies
  (a `within` rule: holds inside the band, does not hold wholly outside it);
- **no verdict**: an estimate with no interval (n = 1, a statistic without one, or an n at
  which no interval method reaches 95 % coverage, ``data/coverage.csv``) is described, not
  judged; so is one that declares no independent unit (``sampling_unit``,
  `llmdyn.claims.units`) or whose units do not vary (an interval whose width is within
  float32's precision, `Measure.zero_width`: one number computed several times is not
  independent evidence); every other grade is read from the unrounded interval;
- **not testable offline** / **not run**: nothing was measured, with the reason.

A measure is of one of two kinds (`Kind`). An **estimate** is a number computed from sampled
prompts, models or seeds; only its interval can carry a verdict. A **fact** is a deterministic
outcome that the paper also states for one case (e.g. "the France prompt's top token is
'Paris'", Figs 9-10); it is judged on its value, and its result names that case.

`llmdyn.claims.render` turns a list of claims into the chapter's table and its scorecard part.

Example:
    >>> import numpy as np
    >>> claim = Claim("coupled", "A", "§5.1", "Trained blocks couple", "diagonal tiles",
    ...               Measure.ratio(np.tile([4.0, 5, 6, 5], 4), np.ones(16),
    ...                             "trained/untrained diagonal share", unit="×",
    ...                             sampling_unit="prompt"),
    ...               at_least(2))
    >>> claim.verdict.grade
    'holds'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal

from llmdyn import LlmdynError
from llmdyn.claims.measure import Measure
from llmdyn.stats import bootstrap
from llmdyn.stats.bootstrap import Estimate

Grade = Literal["holds", "inconclusive", "does not hold", "no verdict", "not testable offline",
                "not run", "for comparison"]
GRADES: tuple[str, ...] = ("holds", "inconclusive", "does not hold", "no verdict",
                           "not testable offline", "not run", "for comparison")
JUDGED: tuple[str, ...] = ("holds", "inconclusive", "does not hold")  # the grades that are verdicts
PAPERS = ("A", "B")  # A: block coupling (coupling.txt); B: thought and fixation


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
            band = (self.threshold - self.tolerance, self.threshold + self.tolerance)
            return not (lo < band[0] and hi > band[1])
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
        stand_in: where the measure stands in for the paper's (another data set, models
            trained here, a proxy for a benchmark), in a few words; it travels with the
            verdict into the findings box, the intro and the scorecard.
    """

    id: str
    paper: Literal["A", "B"]
    section: str
    statement: str
    paper_value: str
    measure: Measure
    rule: Rule | None = field(default=None)
    stand_in: str = ""

    def __post_init__(self):
        if not _ID.match(self.id):
            raise LlmdynError(f"Claim id must be lowercase letters, digits and underscores, "
                              f"got {self.id!r}")
        if self.paper not in PAPERS:
            raise LlmdynError(f"Claim {self.id}: paper must be 'A' or 'B', got {self.paper!r}")

    @property
    def verdict(self) -> Verdict:
        """Computed from the measure's interval and the rule."""
        if self.rule is None and self.measure.missing in ("", "no verdict"):
            return Verdict("for comparison")  # no rule: nothing to judge, with or without interval
        if self.measure.missing:
            return Verdict(self.measure.missing, self.measure.reason)
        unjudged = self._unjudged()
        return Verdict("no verdict", unjudged) if unjudged else Verdict(
            *self.rule.judge(self.measure.estimate))

    def _unjudged(self) -> str:
        """Why an estimate with an interval is not graded: no unit, or a zero-width interval."""
        m = self.measure
        if m.kind != "estimate" or m.estimate is None or not m.estimate.has_interval:
            return ""
        if not m.sampling_unit:
            return ("no independent unit declared: an interval over tokens, tiles or draws "
                    "of one prompt is not evidence")
        if m.zero_width():
            return ("zero-width interval: the units do not vary (they agree to float32's "
                    "precision), so they are not independent evidence")
        return ""

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
                    f"({m.interval_text()})")
        else:
            text = f"{m.number(est.value)} ({m.interval_text()}, no interval)"
        stand_in = f" [stand-in: {self.stand_in}]" if self.stand_in else ""
        return f"{m.quantity}: {text}{stand_in}" + (f"; {m.detail}" if m.detail else "")
