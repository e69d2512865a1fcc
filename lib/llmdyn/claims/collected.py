"""The claims of a built book, read back from its executed chapters (for its summary pages).

Each published table of a chapter glued one JSON record per claim under ``claims`` (or
``claims_<key>``, :mod:`llmdyn.claims.findings`). This module reads them back, with what the
summary pages need around them: the chapter's title, the section of the chapter page that shows
the table, and the model each claim is about. The model comes from the claim id: the chapters
end per-model ids with the model's slug, and the models a chapter ran are in its "parameters in
effect" table (``model`` and ``compare_models``). An id with no model's slug is about the
chapter's own model, or, in a chapter that trains its own (a ``suite`` or ``grid`` parameter),
about those (`OWN`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.claims.breaks import read_glued
from llmdyn.claims.claim import slug
from llmdyn.claims.costs import CostTable, cost_tables, cost_text
from llmdyn.claims.findings import SCORECARD_KEY, records_key
from llmdyn.claims.planning import for_chapter, population_note

OWN = "our trained models"  # the subject of claims about a chapter's own trained suite or grid
_PARAM_ROW = re.compile(r"^\| `(\w+)` \| `(.*)` \|$", re.M)


@dataclass(frozen=True)
class Record:
    """One claim as the summary pages show it (from the chapter's glue)."""

    id: str
    paper: str  # "A" or "B"
    section: str  # the paper's section, e.g. "§5.1, Fig 3"
    statement: str
    paper_value: str
    grade: str  # one of llmdyn.claims.GRADES: the headline (Holm-adjusted) grade
    reason: str  # why the grade, where it needs one
    number: str  # estimate [interval], e.g. "1.9× [1.5×, 2.3×]"
    result: str  # the chapter table's "this run" cell
    rule: str  # the rule's sentence
    model: str  # the model it is about, or OWN
    bound: str = ""  # the rule's comparison, e.g. "≤ 3" ("" without a rule)
    stand_in: str = ""  # what the measure stands in for, where it is a stand-in
    to_decide: str = ""  # inconclusive or no verdict: what would decide it, or why nothing can
    to_decide_n: int | None = None  # the units that would decide it (None: no plan)
    n: int | None = None  # the units the estimate holds
    unit: str = ""  # the independent unit n counts ("prompt", "run", ...)
    unadjusted: str = ""  # the 95 % grade where ``grade`` is Holm-adjusted ("" in older glue)
    robustness: str = ""  # "robust" or "fragile" ("" where not graded)
    review: str = ""  # the Holm reading and what flips the grade, in words
    fact: bool = False  # a graded fact (judged on its value): not a test of a sampled claim
    variant_of: str = ""  # the claim this row re-grades under another split or lens
    data: str = ""  # digest of the per-unit values judged (`findings.data_digest`)


@dataclass(frozen=True)
class Published:
    """One table a chapter published: its chapter, where it is shown, and its claims."""

    chapter: str  # e.g. "05_depth_coupling"
    title: str  # the chapter's "# " heading
    key: str  # the glue key of the table ("scorecard", or e.g. "table1")
    anchor: str  # id of the chapter page's section that shows the table
    models: tuple[str, ...]  # the models the chapter ran, its own first
    records: tuple[Record, ...]

    @property
    def href(self) -> str:
        """The section's address relative to a page in ``book/`` (e.g. the intro)."""
        return f"executed/{self.chapter}.html#{self.anchor}"


def parameters(nb: dict) -> dict[str, object]:
    """The chapter's parameters in effect (the collapsed table it shows), else papermill's."""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            text = "".join(out.get("data", {}).get("text/markdown", ""))
            if text.startswith("| parameter | value |"):
                return {k: _value(v) for k, v in _PARAM_ROW.findall(text)}
    return dict(nb.get("metadata", {}).get("papermill", {}).get("parameters", {}))


def _value(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def title(nb: dict) -> str:
    """The chapter's "# " heading."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            found = re.search(r"^#\s+(.+)$", "".join(cell["source"]), re.M)
            if found:
                return found.group(1).strip()
    raise LlmdynError("the chapter has no '# ' heading in a markdown cell")


def section_anchor(nb: dict, key: str) -> str:
    """The id of the section holding the cell that glued ``key`` (the heading above it)."""
    from docutils.nodes import make_id

    heading = ""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            found = re.findall(r"^#{1,6}\s+(.+)$", "".join(cell["source"]), re.M)
            heading = found[-1] if found else heading
        names = [o.get("metadata", {}).get("scrapbook", {}).get("name")
                 for o in cell.get("outputs", [])]
        if key in names:
            return make_id(re.sub(r"[*_`]", "", heading))
    raise LlmdynError(f"no cell glued {key!r}")


def subject(claim_id: str, models: Sequence[str], default: str) -> str:
    """The model a claim id is about: the model whose slug ends it or sits in it, else default.

    The longest slug wins (``tiny_llama_2`` over ``tiny_llama``).
    """
    for name in sorted(models, key=lambda m: -len(slug(m))):
        s = slug(name)
        if claim_id.endswith(f"_{s}") or f"_{s}_" in claim_id:
            return name
    return default


def read_chapter(path: Path) -> list[Published]:
    """Every table an executed chapter published, with its claim records."""
    nb = json.loads(Path(path).read_text())
    glued, params = read_glued(path), parameters(nb)
    model = str(params.get("model", ""))
    models = tuple(m for m in dict.fromkeys([model, *map(str, params.get("compare_models") or [])])
                   if m)
    own = "suite" in params or "grid" in params
    default = OWN if own else (model or "the chapter's model")
    tables = cost_tables()
    out = []
    for key in _published_keys(glued):
        rows = [{**r, "to_decide": for_chapter(r.get("to_decide", ""), path.stem)}
                for r in json.loads(str(glued[records_key(key)]))]
        records = tuple(priced(_record(r, subject(r["id"], models, default)), path.stem, params,
                               tables) for r in rows)
        out.append(Published(path.stem, title(nb), key, section_anchor(nb, key),
                             models, records))
    return out


def _record(row: dict, model: str) -> Record:
    """A glued claim row as a `Record` (older chapters lack some fields: their defaults)."""
    return Record(**{k: row[k] for k in Record.__dataclass_fields__ if k != "model" and k in row},
                  model=model)


def priced(rec: Record, chapter: str, params: dict[str, object],
           tables: tuple[CostTable | None, CostTable | None]) -> Record:
    """``rec`` with its plan's cost after its "to decide" text, where the cost table prices it.

    Only a plan over prompts is priced (`llmdyn.claims.costs`); runs, models and ViTs need a
    new suite or grid, which the text already says. ``tables``: `costs.cost_tables`, read once
    per chapter rather than once per claim.
    """
    note = population_note(chapter, rec.unit, rec.to_decide_n)
    if note:
        rec = replace(rec, to_decide=f"{rec.to_decide}; {note}")
    if rec.unit != "prompt" or rec.to_decide_n is None:
        return rec
    cost = cost_text(chapter, rec.id, rec.model, rec.n, rec.to_decide_n, params, tables=tables)
    return replace(rec, to_decide=f"{rec.to_decide}; {cost}") if cost else rec


def _published_keys(glued: dict[str, object]) -> list[str]:
    """The table keys whose claim records were glued (``claims`` → the scorecard key)."""
    keys = [SCORECARD_KEY if k == "claims" else k.removeprefix("claims_")
            for k in glued if k == "claims" or k.startswith("claims_")]
    return sorted(keys, key=lambda k: k != SCORECARD_KEY)


def collect(executed: Path, chapters: Sequence[str]) -> list[Published]:
    """The published tables of the chapters ``<executed>/<chapter>.ipynb``, in book order."""
    return [p for name in chapters for p in read_chapter(Path(executed) / f"{name}.ipynb")]


def build_models(published: Sequence[Published]) -> list[str]:
    """The models whose claims the build holds, in order of first appearance; OWN last."""
    seen = dict.fromkeys(r.model for p in published for r in p.records)
    return [m for m in seen if m != OWN] + ([OWN] if OWN in seen else [])
