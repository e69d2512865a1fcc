"""The papers' headline claims as data: each abstract sentence and Table 1 cell, and its claim ids.

``data/headlines.csv`` has one row per sentence of paper A's and paper B's abstracts (``kind``
"abstract") and per property row of paper B's Table 1 (``kind`` "table1"): the paper's words,
cut short; the claim-id *templates* of the claims that test it; or, where nothing tests it, the
reason (``reason``). A template is a claim id in which ``{model}`` stands for the model's slug
(:func:`llmdyn.claims.claim.slug`, e.g. ``gemma3_270m``) and ``{split}`` for the name of the
Thought/Fixation split the chapter published (e.g. ``consensus``)::

    table1_linear_{model}_{split}  matches  table1_linear_smollm2_135m_consensus

A template without ``{model}`` names a claim about the chapter's own model (or its own trained
suite). The map holds no number: the numbers and grades come from the executed chapters
(:mod:`llmdyn.claims.pages`).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from llmdyn import LlmdynError
from llmdyn.core.paths import data_file

HEADLINES_CSV = data_file("headlines.csv")
COLUMNS = ("paper", "item", "kind", "label", "words", "claims", "reason")
KINDS = ("abstract", "table1")
_SLOT = re.compile(r"\{(model|split)\}")
_TEMPLATE = re.compile(r"^[a-z][a-z0-9_]*(\{(model|split)\}[a-z0-9_]*)*$")
_ANY = "[a-z0-9_]+?"  # a slug or a split name: lowercase, digits, underscores


@dataclass(frozen=True)
class Headline:
    """One abstract sentence or Table 1 row, and the claims that test it.

    Attributes:
        paper: "A" or "B".
        item: short key, unique within the paper (e.g. "A3", "LINEAR").
        kind: "abstract" (a sentence) or "table1" (a property row of paper B's Table 1).
        label: a few words naming it (the findings box prefixes its lines with it).
        words: the paper's words, cut short (for Table 1: the paper's Thought/Fixation cells).
        templates: claim-id templates (``{model}``, ``{split}``); empty when ``reason`` says why.
        reason: why no claim tests it (empty when ``templates`` are given).
    """

    paper: Literal["A", "B"]
    item: str
    kind: Literal["abstract", "table1"]
    label: str
    words: str
    templates: tuple[str, ...]
    reason: str = ""

    def __post_init__(self) -> None:
        where = f"headline {self.paper} {self.item!r}"
        if self.paper not in ("A", "B") or self.kind not in KINDS:
            raise LlmdynError(f"{where}: paper must be A or B and kind one of {KINDS}, got "
                              f"{self.paper!r}, {self.kind!r}")
        if bool(self.templates) == bool(self.reason.strip()):
            raise LlmdynError(f"{where}: give claim templates or the reason none tests it, "
                              "exactly one of the two")
        bad = [t for t in self.templates if not _TEMPLATE.match(t)]
        if bad:
            raise LlmdynError(f"{where}: templates must be claim ids with {{model}} or {{split}} "
                              f"slots, got {bad}")

    def pattern(self, template: str, model: str | None = None) -> re.Pattern[str]:
        """The template as a regex; ``model`` (a slug) fixes ``{model}``, None lets it vary."""
        parts = _SLOT.split(template)
        out = []
        for i, part in enumerate(parts):
            if i % 2 == 0:
                out.append(re.escape(part))
            else:
                out.append(re.escape(model) if part == "model" and model else _ANY)
        return re.compile("^" + "".join(out) + "$")

    def matches(self, claim_id: str, model: str | None = None) -> str | None:
        """The template that matches ``claim_id`` (for ``model``'s slug if given), else None.

        Of several matching templates the most specific one wins (the most fixed characters),
        e.g. ``table1_confident_normed_lens_{model}_{split}`` over
        ``table1_confident_{model}_{split}``.
        """
        found = [t for t in self.templates if self.pattern(t, model).match(claim_id)]
        return max(found, key=specificity) if found else None

    def with_split(self, claim_id: str, model: str, text: str) -> str:
        """``text`` naming the phase split ``claim_id`` was judged under ("x (fixed thirds split)").

        The same statement can be graded under two splits, so the label, not a tooltip, says
        which; ``text`` unchanged where the claim has no split slot.
        """
        split = self.slot(claim_id, "split", [model])
        return f"{text} ({split.replace('_', ' ')} split)" if split else text

    def slot(self, claim_id: str, name: str, models: Iterable[str] | None = None) -> str:
        """What a slot ("split" or "model") stands for in ``claim_id``, "" if it has none.

        ``models``: the slugs ``{model}`` may stand for (None: any), so that a split is read
        after the model's slug, e.g. "consensus" in ``table1_linear_smollm2_135m_consensus``.
        """
        template = self.matches(claim_id)
        if template is None or f"{{{name}}}" not in template:
            return ""
        for model in ([None] if models is None else list(models) or [None]):
            parts = _SLOT.split(template)
            out = []
            for i, part in enumerate(parts):
                if i % 2 == 0:
                    out.append(re.escape(part))
                elif part == name:
                    out.append(f"(?P<{name}>{_ANY})")
                else:
                    out.append(re.escape(model) if part == "model" and model else _ANY)
            found = re.match("^" + "".join(out) + "$", claim_id)
            if found:
                return found.group(name)
        return ""

    @property
    def per_model(self) -> bool:
        """Whether a template names the model (so each measured model has its own claim)."""
        return any("{model}" in t for t in self.templates)


def specificity(template: str) -> int:
    """How many fixed characters a template has (slots removed)."""
    return len(_SLOT.sub("", template))


def best(headlines: Sequence[Headline], claim_id: str,
         models: Iterable[str] | None = None) -> Headline | None:
    """The headline whose template matches ``claim_id`` most specifically, or None.

    Args:
        headlines: the map (or part of it).
        claim_id: a claim's id.
        models: the slugs ``{model}`` may stand for (None: any slug; then a variant such as
            ``reg_lss_block_<slug>`` also matches ``reg_lss_{model}``).
    """
    options = [None] if models is None else list(models) or [None]
    scored = [(specificity(t), h) for h in headlines for m in options
              if (t := h.matches(claim_id, m))]
    return max(scored, key=lambda s: s[0])[1] if scored else None


def parse(rows: list[dict[str, str]]) -> tuple[Headline, ...]:
    """Headlines from the CSV's rows (dicts with `COLUMNS`); items must be unique per paper."""
    out = []
    for n, row in enumerate(rows, start=2):
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise LlmdynError(f"headlines.csv line {n}: missing columns {missing}; the header is "
                              f"{','.join(COLUMNS)}")
        out.append(Headline(row["paper"], row["item"], row["kind"], row["label"].strip(),
                            row["words"].strip(), tuple((row["claims"] or "").split()),
                            (row["reason"] or "").strip()))
    keys = [(h.paper, h.item) for h in out]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise LlmdynError(f"headlines.csv: items repeated within a paper: {dup}")
    return tuple(out)


@cache
def headline_map(path: Path = HEADLINES_CSV) -> tuple[Headline, ...]:
    """The committed map, ``data/headlines.csv``, in its order (paper A, then B)."""
    if not path.exists():
        raise LlmdynError(f"the headline map {path} is missing; it is committed with the "
                          "repository (restore it with git checkout)")
    with path.open(newline="") as f:
        return parse(list(csv.DictReader(f)))
