"""Counts that mean what they say: how many distinct claims of the papers a build tests.

A build's rows are not its tests. Of the rows a chapter publishes:

- a **fact** (one named case, judged on its value) is not a test of a sampled claim;
- a **variant** re-grades another row's claim under another split or lens (`Record.variant_of`);
- a **re-grade** judges the very per-unit values another counted row judges (the same digest,
  `llmdyn.claims.findings.data_digest`: e.g. a Table 1 row that repeats a chapter 02 contrast);
- a **check of the book's own** ("beyond the paper", a control the paper does not run) tests
  the book, not the papers.

What is left, graded by an interval, are tests of the papers; the same statement tested on two
models is one claim of the paper tested twice, so the headline count is the number of distinct
(paper, section, statement) among them, the model's name taken off the statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llmdyn.claims.claim import JUDGED
from llmdyn.claims.collected import Published, Record

OWN_CHECKS = ("beyond the paper", "a control the paper does not run")  # the book's own checks


@dataclass(frozen=True)
class Counts:
    """What a build's rows are.

    Attributes:
        rows: every published row.
        graded: rows with a verdict (holds, inconclusive, does not hold).
        facts: graded facts.
        variants: graded rows that re-grade another row under another specification.
        regrades: graded rows that judge the same per-unit values as a counted row.
        own_checks: graded checks of the book's own.
        tests: graded estimates left: tests of the papers.
        claims: distinct claims of the papers among the tests (the headline count).
    """

    rows: int
    graded: int
    facts: int
    variants: int
    regrades: int
    own_checks: int
    tests: int
    claims: int

    def sentence(self) -> str:
        """The scorecard's headline, in words (HTML: the summary grid is one raw HTML block)."""
        return (f"This build tests <strong>{self.claims} distinct claims of the papers</strong> "
                f"({self.tests} tests graded by an interval; a claim tested on two models "
                "counts once). "
                f"Of its {self.rows} rows, {self.graded} carry a grade; not counted as tests: "
                f"{self.facts} facts about one case, {self.variants} variants of another row "
                f"(another split or lens), {self.regrades} re-grades of another row's per-unit "
                f"values and {self.own_checks} checks of the book's own.")


def _own(rec: Record) -> bool:
    return any(k in rec.section or k in rec.paper_value for k in OWN_CHECKS)


def _claim_of(rec: Record) -> tuple[str, str, str]:
    """(paper, section, statement) with the model's name taken off the statement."""
    statement = rec.statement
    if statement.startswith(f"{rec.model}: "):
        statement = statement.removeprefix(f"{rec.model}: ")
    return rec.paper, rec.section, statement


def count(published: Sequence[Published]) -> Counts:
    """The counts of a build's published tables (see the module docstring)."""
    records = [r for table in published for r in table.records]
    graded = [r for r in records if (r.unadjusted or r.grade) in JUDGED]
    facts = [r for r in graded if r.fact]
    variants = [r for r in graded if not r.fact and r.variant_of]
    own = [r for r in graded if not r.fact and not r.variant_of and _own(r)]
    seen: set[str] = set()
    tests, regrades = [], []
    for r in graded:
        if r.fact or r.variant_of or _own(r):
            continue
        if r.data and r.data in seen:
            regrades.append(r)
            continue
        if r.data:
            seen.add(r.data)
        tests.append(r)
    return Counts(len(records), len(graded), len(facts), len(variants), len(regrades),
                  len(own), len(tests), len({_claim_of(r) for r in tests}))
