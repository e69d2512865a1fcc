"""A chapter's findings box and the claim records the book's summary pages read, glued at publish.

`llmdyn.claims.render.publish` calls :func:`publish_findings` after gluing the chapter's table.
Two glue keys per published table (``key`` = "scorecard" gives the plain names):

- ``findings`` (``findings_<key>``): the box, as MyST Markdown: the chapter's grade counts and
  its headline verdicts, one line each. The notebook's second markdown cell pastes it with a
  ``{glue:md}`` directive, so the box, glued from the same claims as the table at the end, can
  never disagree with it (MyST-NB reads every glued output of a notebook before rendering its
  cells, so a key glued in the last cell resolves in the second).
- ``claims`` (``claims_<key>``): one JSON record per claim (:func:`record`) for the intro's
  headline table and the scorecard's summary and interactive table
  (:mod:`llmdyn.claims.pages`).

Headline verdicts are the claims that a sentence of either abstract or a cell of paper B's
Table 1 rests on (:mod:`llmdyn.claims.headlines`); a chapter no headline rests on lists its
first judged claims instead.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence

from llmdyn.claims.claim import GRADES, JUDGED, Claim, slug
from llmdyn.claims.headlines import Headline, best, headline_map
from llmdyn.claims.planning import decision
from llmdyn.claims.review import Review
from llmdyn.core.escape import markdown_text
from llmdyn.stats.bootstrap import LEVEL

SCORECARD_KEY = "scorecard"  # render.SCORECARD_KEY, repeated here: render imports this module
TITLES = {"table1": "Paper B's Table 1 in this run"}  # the box of a second table, by its key
MAX_LINES = 8  # verdict lines in a box; the rest are in the table at the end
# A chapter page is book/executed/<chapter>.html; the scorecard lists every chapter's CSV. A plain
# link: a book built without the scorecard page (a partial book) must still build.
CSV_LINK = ('Every claim, with the per-unit values its interval comes from, is also a CSV file: '
            '<a href="../scorecard.html#every-claim-as-csv">the scorecard lists them</a>.')


def findings_key(key: str = SCORECARD_KEY) -> str:
    """The glue key of the box for the table glued under ``key``."""
    return "findings" if key == SCORECARD_KEY else f"findings_{key}"


def records_key(key: str = SCORECARD_KEY) -> str:
    """The glue key of the claim records for the table glued under ``key``."""
    return "claims" if key == SCORECARD_KEY else f"claims_{key}"


def short(claim: Claim) -> str:
    """The claim's number with its interval and units, or "—" if not measured.

    For example "1.9× [1.5, 2.3] (n = 20 prompts, t interval)".
    """
    m, est = claim.measure, claim.measure.estimate
    if est is None or m.missing in ("not testable offline", "not run") \
            or not math.isfinite(est.value):
        return "—"
    text = m.number(est.value)
    if est.has_interval:
        return f"{text} [{m.number(est.lo)}, {m.number(est.hi)}] ({m.interval_text()})"
    return text if est.exact else f"{text} ({m.interval_text()}, no interval)"


def record(claim: Claim, seen: Review | None = None) -> dict[str, str | int | None]:
    """What the summary pages show of one claim: text, and the n it has and would need.

    ``n`` is the number of units the estimate holds and ``to_decide_n`` the n its plan needs
    (None where there is none): the scorecard prices that n from the per-prompt cost table
    (`llmdyn.claims.costs`). ``grade`` is the headline grade (Holm-adjusted where the claim is
    in its chapter's family), ``unadjusted`` its 95 % grade, ``robustness`` "robust",
    "fragile" or "" and ``review`` the Holm reading and what flips it, in words; ``fact``
    marks a graded fact, ``variant_of`` the claim it re-grades under another specification
    and ``data`` its per-unit values' digest (`data_digest`), for the counts
    (`llmdyn.claims.counting`).
    """
    seen = seen or Review()
    text, planned = decision(claim)
    est = claim.measure.estimate
    return {"id": claim.id, "paper": claim.paper, "section": claim.section,
            "statement": claim.statement, "paper_value": claim.paper_value,
            "grade": seen.headline(claim), "unadjusted": claim.verdict.grade,
            "robustness": seen.word(claim), "review": seen.note(claim),
            "fact": claim.measure.kind == "fact" and claim.verdict.grade in JUDGED,
            "variant_of": seen.variant_of(claim), "data": data_digest(claim),
            "reason": claim.verdict.reason,
            "number": short(claim), "quantity": claim.measure.quantity,
            "result": claim.result_text(), "rule": claim.rule_text,
            "bound": claim.rule.bound(claim.measure) if claim.rule else "",
            "stand_in": claim.stand_in, "to_decide": text, "to_decide_n": planned,
            "n": est.n if est is not None else None, "unit": claim.measure.sampling_unit}


def data_digest(claim: Claim) -> str:
    """A digest of the per-unit values a claim judged, the same for any order of its samples.

    Two rows with one digest grade the same data (e.g. a Table 1 row and the chapter 02
    contrast it repeats); "" where no values were kept.
    """
    samples = claim.measure.samples
    if not samples:
        return ""
    canon = sorted(json.dumps([round(x, 9) for x in sample]) for sample in samples)
    return hashlib.sha256("\n".join(canon).encode()).hexdigest()[:16]


def counts_line(grades: Sequence[str]) -> str:
    """"14 claims: **6 holds** · 2 inconclusive · …", grades in `GRADES` order, zeros left out."""
    n = Counter(grades)
    parts = [f"**{n[g]} {g}**" if g in JUDGED else f"{n[g]} {g}" for g in GRADES if n[g]]
    return f"{len(grades)} claim{'s' if len(grades) != 1 else ''}: " + " · ".join(parts)


def headline_claims(claims: Sequence[Claim],
                    headlines: Sequence[Headline] | None = None) -> list[tuple[Headline, Claim]]:
    """The claims a headline rests on, in the map's order, each under its best headline."""
    headlines = tuple(headline_map() if headlines is None else headlines)
    models = statement_models(claims)
    found = [(h, c) for c in claims if (h := best(headlines, c.id, models)) is not None]
    return sorted(found, key=lambda pair: headlines.index(pair[0]))


def statement_models(claims: Sequence[Claim]) -> set[str]:
    """Slugs of the models the claims name.

    The chapters write per-model statements as "<model>: …" or "<model>, <lens> lens: …", and
    "The same holds in <model>".
    """
    names = {re.split(r"[:,]", c.statement, maxsplit=1)[0] for c in claims}
    names |= {c.statement.removeprefix("The same holds in ") for c in claims
              if c.statement.startswith("The same holds in ")}
    return {slug(n) for n in names}


def _line(claim: Claim, about: str = "", seen: Review | None = None) -> str:
    """One verdict line of the box: the headline grade, marked fragile where it is.

    The statement, its numbers and the stand-in's name are outside text (a model's name, a
    token): written as literal Markdown.
    """
    seen = seen or Review()
    about = f"{markdown_text(about)}: " if about else ""
    grade = seen.headline(claim)
    fragile = " · *fragile*" if seen.word(claim) == "fragile" else ""
    unadjusted = (f" · *unadjusted: {claim.verdict.grade}*"
                  if grade != claim.verdict.grade else "")
    what = f"{about}{markdown_text(claim.statement)} · {markdown_text(short(claim))}"
    if claim.stand_in:  # not a test on the paper's kind of model: not in the bold of one
        return (f"- *{grade}, on a stand-in*{fragile}{unadjusted} · {what} · "
                f"*stand-in: {markdown_text(claim.stand_in)}*")
    return f"- **{grade}**{fragile}{unadjusted} · {what}"


def box(claims: Sequence[Claim], *, headlines: Sequence[Headline] | None = None,
        title: str = "Findings of this run", seen: Review | None = None) -> str:
    """The findings box as MyST Markdown: grade counts, then headline verdicts one line each.

    Grades are the headline (Holm-adjusted) grades of ``seen``; a fragile one says so.
    """
    seen = seen or Review()
    pairs = headline_claims(claims, headlines)
    if pairs:
        lines = [_line(c, f"Paper {h.paper}, {h.label}", seen) for h, c in pairs]
        intro = "The abstracts' claims this chapter tests:"
    else:
        judged = [c for c in claims if seen.headline(c) in JUDGED] or list(claims)
        lines = [_line(c, seen=seen) for c in judged]
        intro = "No abstract sentence rests on this chapter; its verdicts:"
    more = len(lines) - MAX_LINES
    lines = lines[:MAX_LINES] + ([f"- … and {more} more in the table at the end"]
                                 if more > 0 else [])
    return "\n".join([f":::{{admonition}} {title}", ":class: tip findings", "",
                      counts_line([seen.headline(c) for c in claims]), "", intro, "", *lines,
                      "", f"Each number is the estimate with its {round(100 * LEVEL)} % "
                      "interval; grades are Holm-adjusted over the chapter's claims (methods, "
                      "\"Many claims at once\"); the table at the end gives the rule and the "
                      f"reason for every grade, and what would flip it. {CSV_LINK}", ":::"])


def publish_findings(claims: Sequence[Claim], *, key: str = SCORECARD_KEY,
                     glue: Callable[..., object], seen: Review | None = None) -> None:
    """Glue the box and the claim records of one published table (see the module docstring)."""
    from IPython.display import Markdown

    title = TITLES.get(key, "Findings of this run" if key == SCORECARD_KEY
                       else f"Findings of this run: {key}")
    glue(findings_key(key), Markdown(box(claims, title=title, seen=seen)), display=False)
    glue(records_key(key), json.dumps([record(c, seen) for c in claims]), display=False)
