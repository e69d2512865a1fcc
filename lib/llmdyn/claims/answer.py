"""The intro's first screen: each paper's headline findings in words, generated from the claims.

For every abstract sentence that claims test (``data/headlines.csv``, :mod:`.headlines`), one
line says whether it reproduces here, on which models, and on what kind of evidence, with the
grades as chips (:mod:`.chips`). The words are read from the grades of the claims under the
sentence (:func:`.abstracts.assign`), model by model, never typed:

- every judged claim holds: "reproduces"; none holds and some do not: "does not reproduce";
  both kinds: "reproduces in h of n tests"; only inconclusive ones: "is open"; nothing judged:
  "has no verdict" (or "is not testable offline" where nothing was measured);
- a claim measured on a stand-in (`llmdyn.claims.claim.Claim.stand_in`) is never the line's
  only word: the line says "not tested at the paper's scale" (with the reason where the
  paper-scale claim could not run) before "on the stand-in (what stood in): …";
- the evidence is the claims' independent units ("n = 20 prompts", "n = 27 models").

The scale (`scale_sentence`) follows the two papers' lines: which models, on what machine, and
that populations were trained here. The PDF builder drops raw HTML, so every line also comes
as Markdown with the grade in bold (`{only} latex`).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Sequence

from llmdyn.claims.abstracts import PAPER_TITLES, assign
from llmdyn.claims.chips import legend, legend_text, record_chip
from llmdyn.claims.claim import GRADES, JUDGED
from llmdyn.claims.collected import OWN, Published, Record, build_models
from llmdyn.claims.headlines import Headline, headline_map
from llmdyn.claims.units import UNITS

Chip = Callable[[str, str, str, bool], str]  # (grade, stand_in, label, fragile) -> as shown


def html_chip(grade: str, stand_in: str, label: str, fragile: bool = False) -> str:
    """A chip for the HTML page."""
    return record_chip(grade, stand_in, fragile=fragile, label=label)


def text_chip(grade: str, stand_in: str, label: str, fragile: bool = False) -> str:
    """The grade in bold, for the PDF (no raw HTML)."""
    return f"**{label}{' · stand-in' if stand_in else ''}{' · fragile' if fragile else ''}**"


def outcome(grades: Sequence[str]) -> str:
    """The verb phrase for one model's grades under one sentence ("reproduces", …)."""
    n = Counter(grades)
    judged = sum(n[g] for g in JUDGED)
    if not judged:
        if all(g in ("not testable offline", "not run") for g in grades):
            return "is not testable offline" if n["not testable offline"] else "was not run"
        return "has no verdict"
    if n["holds"] == judged:
        return "reproduces"
    if n["holds"] == 0:
        return "does not reproduce" if n["does not hold"] == judged else (
            f"does not reproduce in {n['does not hold']} of {judged} tests"
            if n["does not hold"] else "is open (inconclusive)")
    return f"reproduces in {n['holds']} of {judged} tests"


def _verb(grades: Sequence[str]) -> str:
    """`outcome`, left out where the chips say it alone (no verdict, inconclusive)."""
    said = outcome(grades)
    return "" if said in ("has no verdict", "is open (inconclusive)") else f"{said} "


def counts(recs: Sequence[Record], show: Chip) -> str:
    """One chip per grade that occurs, "2 holds" (a single claim: its estimate beside it).

    Fragile grades (`llmdyn.claims.robustness`) get chips of their own, marked fragile.
    """
    if len(recs) == 1 and recs[0].number not in ("", "—"):
        rec = recs[0]
        number = rec.number.split(" (")[0]  # the units and method are the line's evidence
        fragile = rec.robustness == "fragile"
        return f"{show(rec.grade, rec.stand_in, rec.grade, fragile)} {_escape(number, show)}"
    n = Counter((r.grade, r.robustness == "fragile") for r in recs)
    stand_in = recs[0].stand_in if recs and all(r.stand_in for r in recs) else ""
    return " ".join(show(g, stand_in, f"{n[g, fragile]} {g}", fragile)
                    for g in GRADES for fragile in (False, True) if n[g, fragile])


def _escape(text: str, show: Chip) -> str:
    return html.escape(text) if show is html_chip else text


def evidence(recs: Sequence[Record]) -> str:
    """The claims' units, e.g. "n = 20 prompts" or "n = 4–20 prompts, runs" ("" for none)."""
    units = [(r.n, r.unit) for r in recs if r.n and r.unit]
    if not units:
        return ""
    ns = sorted({n for n, _ in units})
    kinds = list(dict.fromkeys(UNITS.get(u, u) if ns != [1] else u for _, u in units))
    span = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
    return f"n = {span} {', '.join(kinds)}"


def _who(model: str) -> str:
    return model if model == OWN else f"`{model}`"


def model_clause(model: str, recs: Sequence[Record], show: Chip) -> str:
    """What one model's claims under one sentence say, stand-ins set apart."""
    real = [r for r in recs if not r.stand_in]
    stand = [r for r in recs if r.stand_in]
    if real and any(r.grade in JUDGED for r in real) or not stand:
        head = f"{_who(model)}: {_verb([r.grade for r in real])}{counts(real, show)}"
    else:
        head = "not tested at the paper's scale"
    if not stand:
        return head
    what = "; ".join(dict.fromkeys(r.stand_in for r in stand))
    return (f"{head}; on the stand-in ({_escape(what, show)}): "
            f"{_verb([r.grade for r in stand])}{counts(stand, show)}")


def finding_line(line: Headline, found: Sequence[tuple[Record, Published]],
                 models: Sequence[str], show: Chip) -> str:
    """One Markdown bullet: the sentence's label, each model's clause, the evidence, chapters."""
    clauses = [model_clause(m, [r for r, _ in found if r.model == m], show)
               for m in models if any(r.model == m for r, _ in found)]
    chapters = sorted({(t.chapter[:2], t.chapter) for _, t in found})
    links = ", ".join(f"{{doc}}`{c} <executed/{name}>`" for c, name in chapters)
    units = evidence([r for r, _ in found])
    tail = "; ".join(filter(None, [units, f"ch. {links}" if links else ""]))
    body = " · ".join(clauses) if clauses else "no claim of this build tests it"
    return f"- **{line.label[0].upper()}{line.label[1:]}**: {body}" + (f" ({tail})" if tail
                                                                         else "")


def paper_lines(published: Sequence[Published], headlines: Sequence[Headline], paper: str,
                show: Chip) -> list[str]:
    """The paper's tested abstract sentences, one bullet each, in the map's order."""
    found, models = assign(published, headlines), build_models(published)
    return [finding_line(h, found.get((h.paper, h.item), []), models, show)
            for h in headlines if h.paper == paper and h.kind == "abstract" and h.templates]


def scale_sentence(models: Sequence[str], described: dict[str, str], *, cores: int,
                   trained_here: bool) -> str:
    """Where the verdicts come from: the models, the machine, the populations trained here.

    Args:
        models: the pretrained models whose claims the build holds (not `OWN`).
        described: model name -> a short description (e.g. "SmolLM2-135M-Instruct, 4-bit
            GGUF Q4_1"); a model without one is named as it is.
        cores: the CPU cores the build ran on.
        trained_here: whether chapters trained their own populations (claims about `OWN`).
    """
    named = [f"{described[m]} (`{m}`)" if m in described else f"`{m}`" for m in models]
    which = (", ".join(named[:-1]) + " and " + named[-1]) if len(named) > 1 else \
        (named[0] if named else "no pretrained model")
    trained = (" Where the papers use Pythia's checkpoints, leaderboard LLMs or CIFAR-10, "
               "the book trains its own small populations here and says so on every verdict "
               "that rests on them (*stand-in*).") if trained_here else ""
    return (f"**Scale.** This build measured {which} on a {cores}-core CPU with no access to "
            "the model hub: the papers study models of 0.1B–70B parameters on GPUs, so each "
            f"verdict is about this scale.{trained}")


def markdown(published: Sequence[Published], *, scale: str,
             headlines: Sequence[Headline] | None = None) -> str:
    """The intro's opening (MyST, under the page's title): the papers' lines, scale, legend."""
    headlines = tuple(headline_map() if headlines is None else headlines)
    out = []
    for show, fence in ((html_chip, "html"), (text_chip, "latex")):
        out += [f"::::{{only}} {fence}", ":::{container} answer", ""]
        for paper in ("A", "B"):
            out += [f"**{PAPER_TITLES[paper]}:**", "", *paper_lines(published, headlines,
                                                                    paper, show), ""]
        out += [scale, "", legend() if fence == "html" else legend_text(), ":::", "::::", ""]
    return "\n".join(out)
