"""What would decide an open claim: its own rule replayed by `llmdyn.stats.planner` at larger n.

A claim is *open* when it is inconclusive, or has no verdict because its n is too small for any
covered interval. Its plan replays the claim exactly: the measure's `Recipe` (kind, statistic,
pairing) recomputes the estimate with the interval the coverage table allows at each simulated
n, the claim's rule grades it, and units with the same values would not be graded either
(`Claim`'s zero-width check). The per-unit values the claim judged are the truth the planner
resamples.

Every inconclusive or no-verdict row gets a text (`to_decide`). One that cannot be planned says
why, from its verdict: a claim with no per-unit values kept, a bootstrap-only statistic (each
simulated sample would need thousands of resamples: plan it with a covered statistic instead),
a zero-width interval (more units of the same kind cannot widen it), fewer than 4 units, or the
verdict's own reason (a gate). A plan, or a need for 4 units, then says where n is set, by the
claim's unit (`WHERE`): a chapter parameter for prompts, a new suite or grid for the runs,
models and ViTs that chapters 08-10 train; rows whose units cannot grow offline say so
(`FIXED`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import stats as sps

from llmdyn.claims.claim import Claim
from llmdyn.claims.measure import METHOD_NAMES
from llmdyn.claims.units import UNITS, counted
from llmdyn.stats import coverage, planner

N_DRAWS = 200  # simulated samples per n: the share's Monte Carlo error is ≤ 3.5 points
ASKED = ("inconclusive", "no verdict")  # the grades whose row says what would decide it

CHAPTER = "<chapter>"  # the scorecard fills in the chapter's name (`for_chapter`)
_SUITE = ("a new suite (an entry of llmdyn.training.suite.SUITES; `llmdyn workflow --only "
          f"{CHAPTER} --config suite=NAME` trains and measures it)")
_GRID = ("a new grid (an entry of llmdyn.vision.grids.GRIDS; `grid: NAME` in "
         f"DIR/{CHAPTER}.yaml, then `llmdyn workflow --only {CHAPTER} --config "
         "chapter_params=DIR` trains and measures it)")
#: where n units are had, by sampling unit ({n}: the units needed)
WHERE = {
    "prompt": ("to run it: the chapter's prompt count (n_prompts, n_compare_prompts, "
               f"n_per_task, ...) for {{n}} prompts in DIR/{CHAPTER}.yaml, then `llmdyn workflow "
               f"--only {CHAPTER} --config chapter_params=DIR`"),
    "run": f"a suite of {{n}} runs: {_SUITE}",
    "model": f"a population of {{n}} models: {_SUITE}",
    "ViT": f"a grid with {{n}} ViTs: {_GRID}",
    "seed": f"a grid with {{n}} seeds: {_GRID}",
    "task": (f"to run it: {{n}} tasks in the chapter's `tasks` in DIR/{CHAPTER}.yaml (the six "
             "leaderboard tasks packaged here are the most that load offline), then `llmdyn "
             f"workflow --only {CHAPTER} --config chapter_params=DIR`"),
}
#: claims whose units cannot grow here, by id: pretrained models (chapters 02 and 09)
_OFFLINE = "more pretrained models, the papers' 7B ones among them, do not load offline"
FIXED = {
    "geo_size": f"{_OFFLINE}: with a network, name hub ids in compare_models",
    "gen_llms": (f"{_OFFLINE}: with a network, list hub ids in the workflow's sweep_models "
                 "(measured by `llmdyn measure coupling`)"),
}

#: claims whose n is set by packaged data, not a chapter parameter, by id prefix
PACKAGED = {
    "unc_ambiguous_": ("to run it: {n} prompts in each group, written into the book's own lists "
                       "(llmdyn.data.ambiguity: AMBIGUOUS_PROMPTS, CLEAR_PROMPTS)"),
}


def is_open(claim: Claim) -> bool:
    """Inconclusive, or no verdict for want of units (an estimate whose n no interval covers)."""
    grade, m = claim.verdict.grade, claim.measure
    if grade == "inconclusive":
        return True
    return (grade == "no verdict" and m.recipe is not None and m.estimate is not None
            and not m.estimate.has_interval and bool(m.samples))


def judge(claim: Claim) -> planner.Judge:
    """The claim's rule at a sample of units: ``(samples, seed) -> grade``."""
    recipe = claim.measure.recipe

    def grade(samples: tuple[np.ndarray, ...], seed: int) -> str:
        est, reason = recipe.estimate(*samples, seed=seed)
        if reason or not est.has_interval:
            return "no verdict"
        replayed = replace(claim, measure=replace(claim.measure, estimate=est, missing=""))
        return replayed.verdict.grade

    return grade


def unplannable(claim: Claim) -> str:
    """Why an open claim cannot be planned ("" when it can)."""
    m = claim.measure
    if claim.rule is None:
        return "not plannable: no rule to decide"
    if m.recipe is None or not m.samples:
        return "not plannable: its per-unit values were not kept"
    if m.recipe.kind == "other":
        return ("not plannable: a bootstrap-only statistic; a covered per-unit statistic "
                "would decide it")
    if not m.sampling_unit:
        return "not plannable: no independent unit declared"
    return ""


def why_not_open(claim: Claim) -> tuple[str, int | None]:
    """What a no-verdict claim that `is_open` does not count needs, and the units it needs.

    The text is in words a reader can act on, from the verdict's own reason: a zero-width
    interval, an undeclared unit, too few units (with or without their values kept), else the
    verdict's reason (a gate, a coverage check). The n is `planner.MIN_UNITS` where more units
    would let it be judged, else None.
    """
    m, est = claim.measure, claim.measure.estimate
    if m.zero_width() and m.sampling_unit:
        return ("not plannable: every unit gives the same value (to float32's precision); more "
                "units of the same kind cannot widen it (a different statistic or unit "
                "would)"), None
    if not m.sampling_unit:
        return ("not plannable: no independent unit declared; one value per prompt, model or "
                "run would give it an interval"), None
    n = est.n if est is not None else 0
    if 0 < n < planner.MIN_UNITS and m.samples:
        return (f"not plannable: {counted(m.sampling_unit, n)} observed, fewer than "
                f"{planner.MIN_UNITS}, so their spread is unknown; measure at least "
                f"{planner.MIN_UNITS}"), planner.MIN_UNITS
    if 0 < n < planner.MIN_UNITS:
        return (f"needs the measurement repeated on ≥ {planner.MIN_UNITS} "
                f"{UNITS[m.sampling_unit]} (n = {n} now)"), planner.MIN_UNITS
    return f"not plannable: {claim.verdict.reason or 'no interval'}", None


def to_decide(claim: Claim, *, n_draws: int = N_DRAWS, seed: int = 0) -> str:
    """What would decide an inconclusive or no-verdict claim, in words; "" for any other grade."""
    return decision(claim, n_draws=n_draws, seed=seed)[0]


def decision(claim: Claim, *, n_draws: int = N_DRAWS, seed: int = 0) -> tuple[str, int | None]:
    """What would decide an open claim, in words, and the n of units it needs (None: no n).

    An open claim (`is_open`) gets the n its own rule needs (`llmdyn.stats.planner`) and where
    that n is set (`WHERE`); any other gets why it cannot be planned (`why_not_open`), with
    the n that would let it be judged where there is one. Where the claim's units cannot grow
    here (`FIXED`), that is said too. A decided or unjudged claim gets ``("", None)``.
    """
    if claim.verdict.grade not in ASKED:
        return "", None
    if not is_open(claim):
        return _with_where(*why_not_open(claim), claim)
    why = unplannable(claim)
    if why:
        return _with_where(why, None, claim)
    m = claim.measure
    samples = [np.asarray(s) for s in m.samples]
    plan = planner.plan(judge(claim), samples, paired=m.recipe.paired, n_draws=n_draws,
                        seed=seed)
    if plan.n is None:
        n = planner.MIN_UNITS if plan.observed < planner.MIN_UNITS else None
        text = plan.reason + (f"; measure at least {n}" if n else "")
        return _with_where(text, n, claim)
    text = "; ".join(x for x in (plan.text(UNITS[m.sampling_unit]), coverage_label(claim, plan.n),
                                 over_interval(claim, plan.n)) if x)
    return _with_where(text, plan.n, claim)


def coverage_label(claim: Claim, n: int) -> str:
    """The interval the plan's n would be judged with, and its simulated coverage from the table.

    The label is the table's number ("93.5 % simulated coverage"), not the nominal 95 %.
    """
    recipe = claim.measure.recipe
    kind = "independent_difference" if recipe.kind == "difference" and not recipe.paired \
        else recipe.kind
    if kind not in coverage.KINDS:
        return ""
    method, _ = coverage.choose(kind, n, recipe.method)
    found = coverage.simulated(kind, n, method) if method else None
    if found is None:
        return ""
    size = max(x for x in coverage.SIZES if x <= n)
    return (f"judged with the {METHOD_NAMES.get(method, method)} ({100 * found:.1f} % "
            f"simulated coverage at n = {size}, data/coverage.csv)")


def over_interval(claim: Claim, observed_n: int) -> str:
    """The n needed over the effect's own interval: a range, with the observed effect's n in it.

    The plan assumes the observed effect is the true one. Over its 95 % interval the n runs
    from the one an effect at the interval's far end from the threshold needs, to none at all
    where the interval reaches the threshold (an effect at the threshold is never decided).
    The far end's n is the normal approximation (z_{0.975} + z_{0.8})² (SE·√n / Δ)², the
    standard error read from the interval's own half-width; it is a prediction like the plan.
    """
    est, rule = claim.measure.estimate, claim.rule
    if rule is None or rule.op == "within" or est is None or not est.has_interval:
        return ""
    half = (est.hi - est.lo) / 2
    se = half / float(sps.t.ppf(0.975, max(est.n - 1, 1)))
    far = max(abs(est.lo - rule.threshold), abs(est.hi - rule.threshold))
    if not (se > 0 and far > 0):
        return ""
    z = float(sps.norm.ppf(0.975) + sps.norm.ppf(planner.TARGET))
    n_far = max(planner.MIN_UNITS, math.ceil((z * se * math.sqrt(est.n) / far) ** 2))
    m = claim.measure
    end = est.lo if abs(est.lo - rule.threshold) >= abs(est.hi - rule.threshold) else est.hi
    reaches = min(est.lo, est.hi) <= rule.threshold <= max(est.lo, est.hi)
    upper = ("no n where the effect sits at the threshold, which the interval contains"
             if reaches else "more where the effect is nearer the threshold")
    return (f"over the effect's 95 % interval the n runs from about {n_far} (an effect at "
            f"{m.number(end)}) to {upper}; {observed_n} assumes the observed effect")


#: the chapters whose prompts are SQuAD questions, drawn from the largest article first
SQUAD_CHAPTERS = ("02_geometry_along_depth", "03_uncertainty", "04_jacobian_alignment",
                  "05_depth_coupling")
ONE_ARTICLE = 71  # questions of the largest packaged SQuAD article (llmdyn.data.squad_prompts)


def population_note(chapter: str, unit: str, n: int | None) -> str:
    """A warning where a plan leaves the sampled population ("" where it does not).

    A chapter of SQuAD questions draws up to 71 of them from one article (Super_Bowl_50);
    past that, more prompts come from other articles, which the estimate never sampled.
    """
    if unit != "prompt" or chapter not in SQUAD_CHAPTERS or n is None or n <= ONE_ARTICLE:
        return ""
    return (f"warning: past {ONE_ARTICLE} prompts the draw leaves the one SQuAD article the "
            "estimate sampled; the plan assumes other articles' questions vary as these do")


def _with_where(text: str, n: int | None, claim: Claim) -> tuple[str, int | None]:
    """``text``, then where ``n`` units are had (or that they cannot be had here); and ``n``."""
    fixed = FIXED.get(claim.id)
    if fixed:
        return f"{text}; {fixed}", n
    packaged = next((v for k, v in PACKAGED.items() if claim.id.startswith(k)), None)
    if n is not None and packaged:
        return f"{text}; {packaged.format(n=n)}", n
    if n is None or claim.measure.sampling_unit not in WHERE:
        return text, n
    return f"{text}; {WHERE[claim.measure.sampling_unit].format(n=n)}", n


def for_chapter(text: str, chapter: str) -> str:
    """A "to decide" text with its chapter's name in the commands (`CHAPTER` filled in)."""
    return text.replace(CHAPTER, chapter)
