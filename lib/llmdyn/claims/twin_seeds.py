"""Untrained twins of several seeds: the prompts the extra twins see, and the spread over seeds.

A chapter's untrained numbers come from the twin of the first of its ``twin_seeds`` on every
prompt. Each further twin (the rest of ``twin_seeds``) costs another pass per prompt, so they run on
``n_seed_prompts`` prompts spread evenly over the same sample, and every untrained number is
then given for each seed on those shared prompts, with its range over the seeds. This shows how
much a number depends on the draw of the initial weights, beside its interval over prompts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from llmdyn import LlmdynError
from llmdyn.claims.claim import Rule
from llmdyn.core.tables import markdown_table

T = TypeVar("T")

_SIGN = {">=": "≥", ">": ">", "<=": "≤", "<": "<"}


def spread_indices(n: int, k: int) -> list[int]:
    """``k`` indices spread evenly over ``0 … n − 1``, starting at 0.

    The step is ``max(1, n // k)``, so the picks are 0, s, 2s, … (chapter 07's choice); all
    ``n`` indices when ``k >= n``. Example: ``spread_indices(20, 5) == [0, 4, 8, 12, 16]``.

    Args:
        n: size of the sample (>= 0).
        k: how many to pick (>= 1).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise LlmdynError(f"n must be a sample size >= 0, got {n!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise LlmdynError(f"k must be a number of picks >= 1 (n_seed_prompts), got {k!r}")
    return list(range(0, n, max(1, n // k)))[:k]


def spread_picks(items: Sequence[T], k: int) -> list[T]:
    """The items at :func:`spread_indices` ``(len(items), k)``, in order."""
    return [items[i] for i in spread_indices(len(items), k)]


@dataclass(frozen=True)
class SeedSpread:
    """One untrained number, computed for each twin seed on the same prompts.

    Attributes:
        values: seed -> value; the first entry is the chapter's ``seed`` (the main twin).
        n_prompts: how many prompts each value is computed on (the same ones for every seed).
    """

    values: Mapping[int, float]
    n_prompts: int

    def __post_init__(self) -> None:
        if not self.values:
            raise LlmdynError("a SeedSpread needs the value of at least one seed")
        if self.n_prompts < 1:
            raise LlmdynError(f"n_prompts must be >= 1, got {self.n_prompts}")
        object.__setattr__(self, "values", {int(s): float(v) for s, v in self.values.items()})

    @property
    def low(self) -> float:
        """The smallest value over the seeds (NaN if any seed's value is NaN)."""
        vals = list(self.values.values())
        return float("nan") if any(math.isnan(v) for v in vals) else min(vals)

    @property
    def high(self) -> float:
        """The largest value over the seeds (NaN if any seed's value is NaN)."""
        vals = list(self.values.values())
        return float("nan") if any(math.isnan(v) for v in vals) else max(vals)

    def range_text(self, fmt: str = ".2f") -> str:
        """``"low–high"``, or ``"low to high"`` when a bound is negative (a dash would blur)."""
        low, high = f"{self.low:{fmt}}", f"{self.high:{fmt}}"
        return f"{low} to {high}" if low.startswith("-") or high.startswith("-") \
            else f"{low}–{high}"

    def holds(self, rule: Rule) -> bool:
        """Whether every seed's value clears ``rule`` (a NaN never does)."""
        return all(rule.clears(v) for v in self.values.values())

    def text(self, fmt: str = ".2f", rule: Rule | None = None) -> str:
        """One line for a claim's detail.

        Example: ``"seeds 0, 1, 2 on 4 prompts: 0.41–0.47 (every seed ≤ 0.75: yes)"``.
        """
        seeds = ", ".join(str(s) for s in self.values)
        said = f"seeds {seeds} on {self.n_prompts} prompt{'s' * (self.n_prompts != 1)}: " \
               f"{self.range_text(fmt)}"
        if rule is not None:
            said += f" (every seed {rule_text(rule)}: {'yes' if self.holds(rule) else 'no'})"
        return said


def rule_text(rule: Rule) -> str:
    """A rule as a short comparison, e.g. "≤ 0.75" or "within 0.1 of 0.25"."""
    if rule.op == "within":
        return f"within {rule.tolerance:g} of {rule.threshold:g}"
    return f"{_SIGN[rule.op]} {rule.threshold:g}"


def seed_table(rows: Sequence[tuple[str, SeedSpread, Rule | None]], *, fmt: str = ".3f") -> str:
    """A Markdown table of untrained numbers over twin seeds, one row per number.

    Columns: the number, its prompts, its value for each seed (the seeds of all rows, in the
    order first seen; "—" where a row lacks one), the range over seeds, and, for rows with a
    rule (a claim's threshold), whether every seed's value clears it. A sentence under the
    table counts those rows and names the ones where some seed does not clear its rule.

    Args:
        rows: ``(label, spread, rule or None)``.
        fmt: format spec of the values.
    """
    if not rows:
        raise LlmdynError("seed_table needs at least one row")
    seeds = list(dict.fromkeys(s for _, spread, _ in rows for s in spread.values))
    table = []
    for label, spread, rule in rows:
        verdict = "—" if rule is None else \
            f"{'yes' if spread.holds(rule) else 'no'} ({rule_text(rule)})"
        table.append({"untrained number": label, "prompts": spread.n_prompts,
                      **{f"seed {s}": f"{spread.values[s]:{fmt}}" if s in spread.values else "—"
                         for s in seeds},
                      "range over seeds": spread.range_text(fmt),
                      "every seed clears the claim's rule": verdict})
    lines = [markdown_table(table)]
    judged = [(label, spread.holds(rule)) for label, spread, rule in rows if rule is not None]
    if judged:
        failed = [label for label, ok in judged if not ok]
        lines += ["", f"Every seed clears the claim's rule in {len(judged) - len(failed)} of "
                      f"{len(judged)} rows with a rule"
                      + (f"; not in: {'; '.join(failed)}." if failed else ".")]
    return "\n".join(lines)
