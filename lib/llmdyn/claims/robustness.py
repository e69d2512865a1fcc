"""A grade under the choices a referee would vary: robust (the same under all) or fragile.

Each graded claim is read again under every specification the chapter could have chosen
otherwise (`Specification`), and its 95 % grade under each is compared with its own:

- **the chapter's alternatives**: the same claim computed under another Thought/Fixation split
  criterion (each criterion and the consensus), the other logit lens, the post-norm layer L
  in or out; the chapter passes them as claims (`variants`), one per specification name;
- **the threshold**, where the book chose it (it is not the "no effect" value of the
  quantity, `no_effect`): moved each way by a quarter of its distance from no effect
  (`THRESHOLD_STEP`; 2× becomes 1.75× and 2.25×, −0.5 nats −0.375 and −0.625); a band's
  tolerance is moved by a quarter of itself. Every graded row also says the threshold at which
  its grade would flip (`flip_points`): an end of its interval.

The word is **robust** when every specification gives the claim's grade, **fragile** when one
does not, naming each that flips it. A contrast graded on a Thought/Fixation split that is not
identified (the boundary criteria disagree by more than a quarter of the depth,
`NOT_IDENTIFIED`) is fragile by construction, whatever the specifications give.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from llmdyn import LlmdynError
from llmdyn.claims.claim import JUDGED, Claim, Rule

THRESHOLD_STEP = 0.25  # a chosen threshold moves by this share of its distance from no effect
NOT_IDENTIFIED = 0.25  # boundary criteria further apart than this share of depth: no split
#: the value at which a kind of statistic shows no effect (a ratio of 1, a difference of 0)
NO_EFFECT = {"difference": 0.0, "independent_difference": 0.0, "slope": 0.0, "r2": 0.0,
             "correlation_difference": 0.0, "ratio": 1.0, "log_ratio": 1.0,
             "variance_ratio": 1.0, "fraction": 0.5}


@dataclass(frozen=True)
class Specification:
    """A claim's grade under one choice a referee would vary.

    Attributes:
        name: the choice, e.g. "split: entropy_spread", "threshold 1.75×".
        grade: the 95 % grade under it.
        number: the estimate [interval] under it, as printed.
    """

    name: str
    grade: str
    number: str = ""


@dataclass(frozen=True)
class Robustness:
    """A graded claim's grade under every specification, and the word for it.

    Attributes:
        word: "robust" or "fragile".
        grade: the claim's own 95 % grade.
        specifications: the grades under each specification.
        flip_points: the thresholds at which the grade would flip, as text.
        by_construction: why the claim is fragile whatever the specifications give ("" if not).
    """

    word: str
    grade: str
    specifications: tuple[Specification, ...] = ()
    flip_points: str = ""
    by_construction: str = ""

    @property
    def flips(self) -> tuple[Specification, ...]:
        """The specifications that grade the claim otherwise."""
        return tuple(s for s in self.specifications if s.grade != self.grade)

    def text(self) -> str:
        """"robust" or "fragile (flips with: split entropy_spread → does not hold; …)"."""
        if self.word == "robust":
            return "robust"
        named = [f"{s.name} → {s.grade}" for s in self.flips]
        if self.by_construction:
            named.insert(0, self.by_construction)
        return f"fragile (flips with: {'; '.join(named)})"


def no_effect(claim: Claim) -> float | None:
    """The value of the claim's quantity that means "no effect", where its kind has one."""
    recipe = claim.measure.recipe
    return NO_EFFECT.get(recipe.kind) if recipe is not None else None


def chosen_threshold(claim: Claim) -> bool:
    """Whether the rule's threshold is the book's choice: not its quantity's "no effect"."""
    if claim.rule is None:
        return False
    if claim.rule.op == "within":
        return True  # a band's width is always chosen
    null = no_effect(claim)
    return null is None or not math.isclose(claim.rule.threshold, null)


def moved_rules(claim: Claim) -> list[tuple[str, Rule]]:
    """The rule with its chosen threshold moved each way by `THRESHOLD_STEP` (none if not chosen).

    A threshold with no known "no effect" moves by a quarter of its own size; one at 0 with no
    known "no effect" does not move.
    """
    rule, m = claim.rule, claim.measure
    if not chosen_threshold(claim):
        return []
    if rule.op == "within":
        step = THRESHOLD_STEP * rule.tolerance
        return [(f"band ±{rule.tolerance + d:.3g}{m.unit}", Rule("within", rule.threshold,
                                                               rule.tolerance + d))
                for d in (-step, step)]
    null = no_effect(claim)
    distance = abs(rule.threshold - null) if null is not None else abs(rule.threshold)
    if distance == 0:
        return []
    step = THRESHOLD_STEP * distance
    return [(f"threshold {rule.threshold + d:.3g}{m.unit}", Rule(rule.op, rule.threshold + d))
            for d in (-step, step)]


def threshold_note(claim: Claim) -> str:
    """The tag of a chosen threshold at its row, and whether the grade fails only that choice.

    "" where the threshold is the quantity's "no effect" or the kind has none. A row that does
    not hold, or is inconclusive, while its interval lies wholly on the paper's side of no
    effect, says so: the effect is there, short of the book's bar.
    """
    rule, m = claim.rule, claim.measure
    if rule is None or rule.op == "within" or m.kind != "estimate" or not chosen_threshold(claim):
        return ""
    null, est = no_effect(claim), m.estimate
    if null is None or est is None or not est.has_interval:
        return ""
    text = f"{m.number(rule.threshold)} is the book's choice, not no effect ({m.number(null)})"
    strict = Rule({">=": ">", "<=": "<"}.get(rule.op, rule.op), null)
    if claim.verdict.grade != "holds" and strict.clears(est.lo) and strict.clears(est.hi):
        text += ("; it fails only that choice: its interval excludes no effect on the "
                 "paper's side")
    return text


def flip_points(claim: Claim) -> str:
    """The thresholds at which the claim's 95 % grade would flip: the ends of its interval.

    A one-sided rule that holds flips when its threshold passes the interval's near end; one
    that does not hold, when it passes the far end; an inconclusive one at either end.
    """
    est, rule, m = claim.measure.estimate, claim.rule, claim.measure
    if rule is None or est is None or not est.has_interval or rule.op == "within":
        return ""
    grade = claim.verdict.grade
    lower = rule.op in (">=", ">")  # the paper's side is above the threshold
    if grade == "holds":
        end = est.lo if lower else est.hi
        return f"flips at threshold {m.number(end)}"
    if grade == "does not hold":
        end = est.hi if lower else est.lo
        return f"flips at threshold {m.number(end)}"
    if grade == "inconclusive":
        return f"decided at a threshold below {m.number(est.lo)} or above {m.number(est.hi)}"
    return ""


def _number(claim: Claim) -> str:
    est, m = claim.measure.estimate, claim.measure
    if est is None or not est.has_interval:
        return m.number(est.value) if est is not None else "n/a"
    return f"{m.number(est.value)} [{m.number(est.lo)}, {m.number(est.hi)}]"


def assess(claim: Claim, variants: Mapping[str, Claim] | None = None, *,
           by_construction: str = "") -> Robustness | None:
    """The claim's robustness word over its variants and its moved thresholds; None if ungraded.

    Args:
        claim: the claim as the chapter grades it.
        variants: specification name -> the same claim computed under that specification.
        by_construction: why it is fragile whatever they give (e.g. a split not identified).
    """
    grade = claim.verdict.grade
    if grade not in JUDGED:
        return None
    specs = [Specification(name, v.verdict.grade, _number(v))
             for name, v in (variants or {}).items()]
    if claim.measure.kind == "estimate":
        specs += [Specification(name, replace(claim, rule=rule).verdict.grade, _number(claim))
                  for name, rule in moved_rules(claim)]
    flipped = by_construction or any(s.grade != grade for s in specs)
    return Robustness("fragile" if flipped else "robust", grade, tuple(specs),
                      flip_points(claim), by_construction)


def across(by_spec: Mapping[str, Sequence[Claim]], chosen: str) -> dict[str, dict[str, Claim]]:
    """The chosen specification's claim ids -> {other specification: the same claim under it}.

    Args:
        by_spec: specification name -> the same claims, in the same order (ids may differ by
            specification, as `llmdyn.claims.split_grid` takes them).
        chosen: the specification the chapter grades by.
    """
    if chosen not in by_spec:
        raise LlmdynError(f"across: the chosen specification {chosen!r} is not one of "
                          f"{list(by_spec)}")
    sizes = {len(v) for v in by_spec.values()}
    if len(sizes) != 1:
        raise LlmdynError(f"across: every specification must hold the same claims, got counts "
                          f"{[len(v) for v in by_spec.values()]}")
    return {mine.id: {name: by_spec[name][i] for name in by_spec if name != chosen}
            for i, mine in enumerate(by_spec[chosen])}


def split_identified(layers: Mapping[str, int], n_layers: int) -> str:
    """"" when the boundary criteria agree within a quarter of the depth, else why not.

    Args:
        layers: criterion name -> its first Fixation layer.
        n_layers: the model's number of blocks L.
    """
    if n_layers < 1:
        raise LlmdynError(f"n_layers must be ≥ 1, got {n_layers}")
    spread = max(layers.values()) - min(layers.values())
    if spread <= NOT_IDENTIFIED * n_layers:
        return ""
    shown = ", ".join(f"{k} {v}" for k, v in layers.items())
    return (f"split not identified: the criteria give layers {shown}, {spread} apart, more "
            f"than a quarter of the {n_layers} layers")


def assess_all(claims: Sequence[Claim], variants: Mapping[str, Mapping[str, Claim]] | None = None,
               unidentified: Mapping[str, str] | None = None) -> dict[str, Robustness]:
    """`assess` for every graded claim: claim id -> its robustness."""
    variants, unidentified = variants or {}, unidentified or {}
    unknown = sorted((set(variants) | set(unidentified)) - {c.id for c in claims})
    if unknown:
        raise LlmdynError(f"variants or unidentified name claims that are not published here: "
                          f"{unknown}")
    out = {}
    for c in claims:
        found = assess(c, variants.get(c.id), by_construction=unidentified.get(c.id, ""))
        if found is not None:
            out[c.id] = found
    return out
