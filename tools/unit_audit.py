"""Re-grade a default build's claims by the unit audit's rules: units, widths and the graded share.

Reads each executed chapter's glued claim values (no import of the library that built it), then

- counts grades over the frozen denominator: the 147 testable rows of 7867aa4, which are every
  row of the build except chapter 04's Table 1 rows under a split that flips a grade (ids
  ``table1_…`` not ending in the chosen split, ``_consensus``), which are reported apart, and
  except "for comparison", "not testable offline" and "not run";
- checks every graded estimate: its unit is an independent one (prompt, model, run, seed,
  ViT), its n is at least 3, and its printed interval has two different ends. A fact (judged on
  its value for the paper's own case, "(a fact about …)") is counted, and listed apart;
- lists every row without a verdict, with its reason.

    python tools/unit_audit.py book/executed
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from glued_values import glued_values  # noqa: E402
from grade_changes import grade_of  # noqa: E402

from llmdyn.core.tables import markdown_table  # noqa: E402

GRADED = ("holds", "does not hold", "inconclusive")
UNTESTABLE = ("for comparison", "not testable offline", "not run")
UNITS = {"prompt", "model", "run", "seed", "ViT"}
CHOSEN_SPLIT = "_consensus"  # the default phase_criterion: Table 1's frozen rows
INTERVAL = re.compile(r": (\S+?) \[(\S+?), (\S+?)\]")


def rows(executed: Path):
    """``(chapter, claim id, grade, glued fields)`` for every claim of the executed chapters."""
    for nb in sorted(executed.glob("[0-9][0-9]_*.ipynb")):
        glued = glued_values(nb)
        for key, text in glued.items():
            if key.endswith("_verdict"):
                cid = key.removesuffix("_verdict")
                yield nb.stem[:2], cid, grade_of(text), {
                    part: str(glued.get(f"{cid}_{part}", "")).strip("'\"")
                    for part in ("n", "unit", "result", "verdict")}


def problems(fields: dict) -> list[str]:
    """Why a graded estimate breaks the unit audit's rules ([] when it does not)."""
    found = INTERVAL.search(fields["result"])
    out = []
    if fields["unit"] not in UNITS:
        out.append(f"unit {fields['unit']!r}")
    if not fields["n"].isdigit() or int(fields["n"]) < 3:
        out.append(f"n {fields['n']!r}")
    if not found:
        out.append("no printed interval")
    elif found[2] == found[3]:
        out.append(f"zero width as printed: {found[0]}")
    return out


def audit(all_rows) -> dict:
    """Counts over the frozen denominator, the added rows, the problems and the open rows."""
    frozen, added, per_chapter = Counter(), Counter(), {}
    broken, facts, unjudged = [], [], []
    for chapter, cid, grade, fields in all_rows:
        per_chapter.setdefault(chapter, Counter())[grade] += 1
        if cid.startswith("table1_") and not cid.endswith(CHOSEN_SPLIT):
            added[grade] += 1
        elif grade not in UNTESTABLE:
            frozen[grade] += 1
            if grade in GRADED and "(a fact about" in fields["result"]:
                facts.append(cid)
            elif grade in GRADED:
                broken += [(cid, why) for why in problems(fields)]
            else:
                unjudged.append((chapter, cid, fields["verdict"]))
    graded = sum(frozen[g] for g in GRADED)
    return {"per_chapter": per_chapter, "frozen": frozen, "added": added,
            "graded": graded, "testable": graded + frozen["no verdict"], "facts": facts,
            "problems": broken, "no_verdict": unjudged}


def report(result: dict) -> str:
    """The audit as Markdown."""
    share = 100 * result["graded"] / max(result["testable"], 1)
    chapters = [{"chapter": ch, "grades": ", ".join(f"{n} {g}" for g, n in sorted(c.items()))}
                for ch, c in sorted(result["per_chapter"].items())]
    lines = [markdown_table(chapters) if chapters else "No chapter glued claim rows."]
    lines += ["", f"Graded: {result['graded']} of {result['testable']} testable rows "
              f"({share:.1f} %), {len(result['facts'])} of them facts; frozen counts "
              f"{dict(result['frozen'])}; added rows {dict(result['added'])}.",
              f"Problems: {result['problems'] or 'none'}.", "", "No verdict:"]
    lines += [f"- {ch} `{cid}`: {why}" for ch, cid, why in result["no_verdict"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the audit; exit 1 when a graded row breaks a rule."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("executed", type=Path, help="executed notebooks of a build")
    args = parser.parse_args(argv)
    result = audit(rows(args.executed))
    print(report(result))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
