"""The intro's first screen: each abstract finding in words, read from the claims' grades."""

from dataclasses import replace

import pytest

from llmdyn.claims import answer
from llmdyn.claims.collected import OWN, Published, Record
from llmdyn.claims.headlines import Headline

COUPLING = Headline("A", "A3", "abstract", "coupling in LLMs", "blocks couple",
                    ("depth_coupled", "tok_self"))
PERFORMANCE = Headline("A", "A4", "abstract", "coupling and performance", "it correlates",
                       ("gen_r2", "gen_llms"))
TWO_STAGES = Headline("B", "B4", "abstract", "two stages", "two stages", ("geo_{model}",))
UNTESTED = Headline("B", "B2", "abstract", "viewpoint", "a view", (), "not a claim")
MAP = (COUPLING, PERFORMANCE, UNTESTED, TWO_STAGES)


def rec(cid: str, grade: str, model: str, *, n: int = 20, unit: str = "prompt",
        stand_in: str = "", number: str = "2.0 [1.5, 2.5]", reason: str = "") -> Record:
    return Record(cid, "A", "§5", f"{cid} statement", "paper", grade, reason, number, "result",
                  "rule", model, stand_in=stand_in, n=n, unit=unit)


def build(*records: Record) -> list[Published]:
    """One published table per chapter the records name (by their id's first part)."""
    chapters = {"depth": "05_depth", "tok": "06_tok", "gen": "09_gen", "geo": "02_geo"}
    out = {}
    for r in records:
        out.setdefault(chapters[r.id.split("_")[0]], []).append(r)
    return [Published(ch, "T", "scorecard", "findings", ("m-a",), tuple(rs))
            for ch, rs in out.items()]


BUILD = (rec("depth_coupled", "holds", "m-a"), rec("tok_self", "holds", "m-a", n=8),
         rec("gen_r2", "does not hold", OWN, n=27, unit="model", number="−0.03 [−0.27, 0.05]",
             stand_in="27 small models trained here"),
         rec("gen_llms", "not testable offline", OWN, n=0, unit="", number="—",
             reason="the leaderboard LLMs need a GPU"),
         rec("geo_m_a", "inconclusive", "m-a"))


def lines(records=BUILD) -> dict[str, str]:
    """The HTML lines of the first screen, keyed by the finding's label."""
    page = answer.markdown(build(*records), scale="**Scale.** tiny", headlines=MAP)
    html = page[:page.index("::::{only} latex")]
    return {label: line for line in html.splitlines() if line.startswith("- **")
            for label in [line[4:line.index("**", 4)]]}


def test_each_tested_finding_gets_one_line_per_paper_with_chips_units_and_chapters():
    found = lines()
    assert list(found) == ["Coupling in LLMs", "Coupling and performance", "Two stages"]
    coupling = found["Coupling in LLMs"]
    assert coupling == ('- **Coupling in LLMs**: `m-a`: reproduces <span class="chip chip-holds" '
                        'title="holds">2 holds</span> (n = 8–20 prompts; ch. {doc}`05 '
                        '<executed/05_depth>`, {doc}`06 <executed/06_tok>`)')
    # one claim: its chip and estimate say it (no "is open" beside "inconclusive")
    assert found["Two stages"].startswith('- **Two stages**: `m-a`: <span class="chip '
                                          'chip-inconclusive" title="inconclusive">'
                                          "inconclusive</span> 2.0 [1.5, 2.5] (n = 20 prompts")


def test_a_stand_in_verdict_is_never_alone_on_its_line():
    line = lines()["Coupling and performance"]
    assert line.startswith("- **Coupling and performance**: not tested at the paper's scale; "
                           "on the stand-in (27 small models trained here): does not reproduce ")
    assert ('<span class="chip chip-does-not-hold chip-stand-in" title="does not hold, '
            'measured on a stand-in">does not hold · stand-in</span> −0.03 [−0.27, 0.05] '
            "(n = 27 models; ch. {doc}`09 <executed/09_gen>`)") in line


def test_changing_a_claim_changes_its_sentence():
    before = lines()["Coupling in LLMs"]
    changed = (replace(BUILD[0], grade="does not hold"), *BUILD[1:])
    after = lines(changed)["Coupling in LLMs"]
    assert after != before
    assert after.startswith("- **Coupling in LLMs**: `m-a`: reproduces in 1 of 2 tests <span")
    both_fail = (replace(BUILD[0], grade="does not hold"), replace(BUILD[1], grade="does not hold"))
    assert lines(both_fail + BUILD[2:])["Coupling in LLMs"].startswith(
        "- **Coupling in LLMs**: `m-a`: does not reproduce <span")
    assert lines(changed)["Coupling and performance"] == lines()["Coupling and performance"]


def test_the_pdf_gets_the_same_lines_with_the_grade_in_words():
    page = answer.markdown(build(*BUILD), scale="**Scale.** tiny", headlines=MAP)
    latex = page[page.index("::::{only} latex"):]
    assert "<span" not in latex
    assert "**does not hold · stand-in** −0.03 [−0.27, 0.05]" in latex
    assert latex.count("**Scale.** tiny") == 1 and page.count("**Scale.** tiny") == 2


@pytest.mark.parametrize(("grades", "words"), [
    (["holds", "holds", "no verdict"], "reproduces"),
    (["holds", "inconclusive"], "reproduces in 1 of 2 tests"),
    (["does not hold", "inconclusive"], "does not reproduce in 1 of 2 tests"),
    (["inconclusive"], "is open (inconclusive)"),
    (["no verdict", "for comparison"], "has no verdict"),
    (["not testable offline", "not run"], "is not testable offline"),
])
def test_outcome_reads_the_grades(grades, words):
    assert answer.outcome(grades) == words


def test_scale_names_models_machine_and_populations():
    text = answer.scale_sentence(["smollm2-135m", "tiny"], {"smollm2-135m": "SmolLM2-135M"},
                                 cores=2, trained_here=True)
    assert text.startswith("**Scale.** This build measured SmolLM2-135M (`smollm2-135m`) and "
                           "`tiny` on a 2-core CPU with no access to the model hub")
    assert "trains its own small populations here" in text
    assert "populations" not in answer.scale_sentence(["tiny"], {}, cores=2, trained_here=False)


def test_a_fragile_grade_is_never_shown_as_a_plain_chip():
    held = rec("a1", "holds", "m")
    one = answer.counts([replace(held, robustness="fragile")], answer.html_chip)
    assert 'class="chip chip-holds chip-fragile"' in one and "holds · fragile</span>" in one
    two = answer.counts([held, replace(held, id="a2", robustness="fragile")], answer.html_chip)
    assert ">1 holds</span>" in two and ">1 holds · fragile</span>" in two
    assert answer.counts([replace(held, robustness="fragile")], answer.text_chip).startswith(
        "**holds · fragile**")
