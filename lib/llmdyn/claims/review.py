"""A published table's claims as a referee reads them: Holm over the family, robustness per row.

`review` joins the two readings of `llmdyn.claims.multiplicity` (the family's Holm-adjusted
grades) and `llmdyn.claims.robustness` (each grade under the choices a referee would vary) into
one `Review`, which `llmdyn.claims.render.publish` glues beside each claim and the summary pages
show: the **headline grade** is the Holm-adjusted one, with the unadjusted 95 % grade beside it
where they differ, and the robustness word after it ("fragile (flips with: …)").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from llmdyn.claims.claim import Claim
from llmdyn.claims.multiplicity import Adjusted, holm
from llmdyn.claims.robustness import Robustness, assess_all, threshold_note


@dataclass(frozen=True)
class Review:
    """Holm-adjusted grades and robustness words of a table's claims, by claim id.

    Attributes:
        adjusted: claim id -> its Holm reading (judged estimates only).
        robustness: claim id -> its robustness (graded claims only).
        variants: claim id -> {specification name: the claim under it}.
    """

    adjusted: Mapping[str, Adjusted] = field(default_factory=dict)
    robustness: Mapping[str, Robustness] = field(default_factory=dict)
    variants: Mapping[str, Mapping[str, Claim]] = field(default_factory=dict)

    def variant_of(self, claim: Claim) -> str:
        """The id of the claim this one is a specification of, where it is published as one."""
        return next((mine for mine, specs in self.variants.items()
                     if any(v.id == claim.id for v in specs.values())), "")

    def headline(self, claim: Claim) -> str:
        """The grade the summary pages lead with: Holm-adjusted where the claim is in the family."""
        found = self.adjusted.get(claim.id)
        return found.grade if found is not None and not found.reason else claim.verdict.grade

    def word(self, claim: Claim) -> str:
        """"robust", "fragile" or "" (not graded)."""
        found = self.robustness.get(claim.id)
        return found.word if found is not None else ""

    def note(self, claim: Claim) -> str:
        """The Holm reading and the robustness, as one plain line ("" for neither)."""
        parts = []
        found = self.adjusted.get(claim.id)
        if found is not None:
            parts.append(found.text() or f"not in the Holm family: {found.reason}")
        rob = self.robustness.get(claim.id)
        if rob is not None:
            parts.append(rob.text())
            if rob.flip_points:
                parts.append(rob.flip_points)
            chosen = threshold_note(claim)
            if chosen:
                parts.append(chosen)
        return "; ".join(parts)

    def verdict_text(self, claim: Claim) -> str:
        """The verdict cell: the headline grade first, then the 95 % reason, Holm, robustness."""
        headline, verdict = self.headline(claim), claim.verdict
        inside = [verdict.reason] if verdict.reason else []
        inside += [self.note(claim)] if self.note(claim) else []
        return f"{headline} ({'; '.join(inside)})" if inside else headline


def review(claims: Sequence[Claim], *, family: Sequence[Claim] | None = None,
           family_name: str = "this chapter",
           variants: Mapping[str, Mapping[str, Claim]] | None = None,
           unidentified: Mapping[str, str] | None = None) -> Review:
    """Holm over the family and robustness of ``claims`` (see the module docstring).

    Args:
        claims: the table's claims.
        family: every claim of the family the table belongs to (default: ``claims``); a claim
            published as another's variant (a twin under another split) is a specification,
            not a test, and is left out of it.
        family_name: how the rows name the family, e.g. "chapter 04".
        variants: claim id -> {specification name: the claim under it}.
        unidentified: claim id -> why it is fragile by construction (a split not identified).
    """
    variants = variants or {}
    twins = {v.id for vs in variants.values() for v in vs.values()}
    members = [c for c in (claims if family is None else family) if c.id not in twins]
    return Review(holm(members, family=family_name),
                  assess_all(claims, variants, unidentified), variants)
