"""The headline map, the findings box, the summary pages' claim records, the Lab settings."""

import json

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.claims import GRADES, JUDGED, Claim, Measure, at_least, below
from llmdyn.claims.abstracts import assign, uncovered
from llmdyn.claims.collected import OWN, Published, Record, build_models, subject
from llmdyn.claims.findings import box, counts_line, publish_findings, record, short
from llmdyn.claims.headlines import Headline, best, headline_map, parse
from llmdyn.stats.bootstrap import Estimate

TABLE1 = ("LINEAR", "EQUISPACED", "ALIGNED", "CONFIDENT")


def _claim(cid, values, statement="s", rule=None):
    """A claim whose estimate is the mean of ``values`` with the interval [min, max]: the box
    and records are about formatting and grades, not about how an interval is computed."""
    rule = rule or at_least(2)
    values = np.asarray(values, dtype=float)
    est = Estimate(float(values.mean()), float(values.min()), float(values.max()), values.size)
    return Claim(cid, "A", "§5.1", statement, "p",
                 Measure("ratio", est, unit="×", fmt=".1f", sampling_unit="prompt"), rule)


def test_map_gives_every_sentence_claims_or_a_reason_and_all_of_table1():
    lines = headline_map()
    assert {h.paper for h in lines} == {"A", "B"}
    assert all(bool(h.templates) != bool(h.reason) for h in lines)
    props = [h.item for h in lines if h.kind == "table1"]
    assert all(p in props for p in TABLE1)
    assert [h for h in lines if h.item == "CONFIDENT"][0].templates == (
        "table1_confident_{model}_{split}",)  # paper B's own lens; the normed one is its own row


def test_map_refuses_a_row_with_neither_claims_nor_reason_and_bad_templates():
    row = dict(paper="A", item="A9", kind="abstract", label="x", words="w", claims="", reason="")
    with pytest.raises(LlmdynError, match="exactly one"):
        parse([row])
    with pytest.raises(LlmdynError, match="slots"):
        parse([{**row, "claims": "gen_{size}"}])
    with pytest.raises(LlmdynError, match="repeated"):
        parse([{**row, "reason": "r"}, {**row, "reason": "r"}])


def test_templates_match_the_model_and_split_slots_most_specific_first():
    lines = headline_map()
    own = best(lines, "table1_confident_smollm2_135m_consensus", ["smollm2_135m"])
    normed = best(lines, "table1_confident_normed_lens_smollm2_135m_lss_peak", ["smollm2_135m"])
    assert own.item == "CONFIDENT" and normed.item == "CONFIDENT (normed lens)"
    assert best(lines, "geo_norm_growth_gemma3_270m", ["gemma3_270m"]).item == "B6"
    # trained-vs-untrained twins are not "through training" (A6 rests on the training suite),
    # and the deep window's growth is not Thought's "gradual expansion" (B6)
    assert best(lines, "reg_lss_gemma3_270m", ["gemma3_270m"]) is None
    assert best(lines, "traj_growth_gemma3_270m", ["gemma3_270m"]) is None
    assert best(lines, "train_lss_falls").item == "A6"
    assert best(lines, "depth_coupled").item == "A3"


def test_short_number_and_record():
    claim = _claim("depth_coupled", [4.0, 5, 6], "Trained blocks are coupled")
    assert short(claim) == "5.0× [4.0×, 6.0×] (n = 3 prompts)"
    rec = record(claim)
    assert rec["grade"] == "holds" and rec["number"] == short(claim)
    assert short(Claim("x", "A", "§", "s", "p", Measure.not_testable("q", "needs hub"))) == "—"


def test_box_counts_grades_in_order_and_lists_headline_verdicts():
    claims = [_claim("depth_coupled", [4.0, 5, 6], "Trained blocks are coupled"),
              _claim("depth_init", [1.0, 3, 2]),
              _claim("geo_norm_growth_tiny_llama", [1.0, 2, 3], "tiny-llama: norms grow",
                     below(0)),
              _claim("reg_lss_tiny_llama", [1.0, 2, 3], "tiny-llama: not a headline", below(0))]
    text = box(claims)
    assert counts_line([c.verdict.grade for c in claims]) in text
    assert text.index("holds") < text.index("inconclusive")  # GRADES order
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert lines == ["- **holds** · Paper A, coupling in LLMs: Trained blocks are coupled · "
                     "5.0× [4.0×, 6.0×] (n = 3 prompts)",
                     "- **does not hold** · Paper B, Thought: properties: tiny-llama: "
                     "norms grow · 2.0× [1.0×, 3.0×] (n = 3 prompts)"]
    assert "No abstract sentence" in box([claims[1]])
    assert 'href="../scorecard.html#every-claim-as-csv"' in text  # the chapter's data as CSV


def test_a_stand_in_and_the_rule_travel_with_the_verdict():
    plain = _claim("gen_r2", [0.1, 0.2, 0.3], "Coupling correlates with performance",
                   at_least(0.5))
    claim = Claim(plain.id, "A", "§5.4", plain.statement, "p", plain.measure, plain.rule,
                  stand_in="OOD loss of 27 models trained here, between unigram and bigram level")
    rec = record(claim)
    assert rec["stand_in"].startswith("OOD loss") and rec["bound"] == "≥ 0.5×"
    assert "[stand-in: OOD loss" in claim.result_text()
    assert "*stand-in: OOD loss of 27 models" in box([claim])
    assert f"- *{claim.verdict.grade}, on a stand-in* · " in box([claim])  # not in bold


def test_counts_line_uses_the_library_grades():
    grades = [GRADES[0], GRADES[0], JUDGED[2], "not run"]
    assert counts_line(grades) == f"4 claims: **2 {GRADES[0]}** · **1 {JUDGED[2]}** · 1 not run"


def test_publish_findings_glues_the_box_and_json_records():
    glued = {}
    publish_findings([_claim("depth_coupled", [4.0, 5, 6])], key="table1",
                     glue=lambda k, v, display: glued.setdefault(k, v))
    assert set(glued) == {"findings_table1", "claims_table1"}
    assert json.loads(glued["claims_table1"])[0]["id"] == "depth_coupled"


def _rec(cid, model, grade="holds"):
    return Record(cid, "B", "§", "s", "p", grade, "", "1", "r", "rule", model)


def _table(chapter, models, ids):
    return Published(chapter, "T", "scorecard", "paper-vs-this-run", tuple(models),
                     tuple(_rec(i, subject(i, models, models[0])) for i in ids))


def test_subject_reads_the_model_from_the_id():
    models = ["tiny-llama", "tiny-gemma3"]
    assert subject("reg_lss_tiny_gemma3", models, "x") == "tiny-gemma3"
    assert subject("table1_linear_tiny_llama_lss_peak", models, "x") == "tiny-llama"
    assert subject("train_coupling_emerges", models, OWN) == OWN


def test_uncovered_names_a_template_missing_a_model():
    lines = [Headline("B", "LINEAR", "table1", "LINEAR", "w",
                      ("table1_linear_{model}_{split}",))]
    both = _table("04_x", ["m-a", "m-b"], ["table1_linear_m_a_consensus",
                                            "table1_linear_m_b_consensus"])
    assert uncovered([both], lines) == []
    one = _table("04_x", ["m-a", "m-b"], ["table1_linear_m_a_consensus"])
    one = _table("04_x", ["m-a", "m-b"], ["table1_linear_m_a_consensus", "table1_aligned_m_b_x"])
    assert uncovered([one], lines) == ["B LINEAR: no claim for m-b in 04_x "
                                       "(table1_linear_{model}_{split})"]
    assert "matches no claim" in uncovered([_table("04_x", ["m-a"], ["other"])], lines)[0]
    assert [r.model for r, _ in assign([both], lines)[("B", "LINEAR")]] == ["m-a", "m-b"]
    assert build_models([both, _table("08_y", [OWN], ["train_x"])]) == ["m-a", "m-b", OWN]


def test_lab_settings_turn_news_and_update_checks_off(tmp_path):
    from jupyterlab_server.settings_utils import _get_overrides

    from llmdyn.runner import lab_settings

    path = lab_settings.install(tmp_path)
    overrides, error = _get_overrides(str(lab_settings.settings_dir(tmp_path)))
    assert not error and path.exists()
    got = overrides[lab_settings.NOTIFICATION]
    assert got["fetchNews"] == "false" and got["checkForUpdates"] is False
    # "false" is the schema's "Never" (JupyterLab's own schema in this environment)
    import sys
    from pathlib import Path
    schema = json.loads((Path(sys.prefix) / "share/jupyter/lab/schemas/@jupyterlab/"
                         "apputils-extension/notification.json").read_text())
    never = {o["const"]: o["title"] for o in schema["properties"]["fetchNews"]["oneOf"]}
    assert never["false"] == "Never"


def test_the_intro_cell_shows_the_rule_and_the_stand_in():
    from dataclasses import replace

    from llmdyn.claims.abstracts import sentence_table

    lines = [Headline("B", "B4", "abstract", "two stages", "two stages", ("geo_criteria_{model}",))]
    spread = replace(_rec("geo_criteria_m_a", "m-a", "no verdict"), number="16 (n = 1 prompt)",
                     bound="≤ 3", stand_in="SQuAD questions for the paper's prompts")
    page = sentence_table([Published("02_x", "T", "scorecard", "a", ("m-a",), (spread,))],
                          lines, ["m-a"])
    assert '16 (n = 1 prompt)</span> <span class="bound">(rule: ≤ 3)</span>' in page
    assert "<em>stand-in: SQuAD questions for the paper&#x27;s prompts</em>" in page


def test_open_questions_list_each_open_headline_claim_with_what_would_decide_it():
    from dataclasses import replace

    from llmdyn.claims.abstracts import open_questions

    lines = [Headline("A", "A3", "abstract", "coupling in LLMs", "w", ("depth_coupled",))]
    rec = replace(_rec("depth_coupled", "m-a", "inconclusive"), number="1.2× [0.9×, 1.6×]",
                  to_decide="n = 40 prompts (81% of simulated samples decide, most as 'holds')")
    text = open_questions([Published("05_x", "T", "scorecard", "a", ("m-a",), (rec,))], lines)
    assert text.startswith("- Paper A, coupling in LLMs (m-a): s is **inconclusive** at 1.2×")
    assert "to decide: n = 40 prompts" in text
    assert open_questions([Published("05_x", "T", "scorecard", "a", ("m-a",),
                                     (_rec("depth_coupled", "m-a"),))], lines) == \
        "No claim of the abstracts is open in this build."


def test_a_to_decide_command_shows_as_code_in_the_scorecard_cell():
    from llmdyn.claims.scoreboard import code_spans
    assert code_spans("n = 40 prompts; then `llmdyn workflow --only 05 <x>`") == (
        "n = 40 prompts; then <code>llmdyn workflow --only 05 &lt;x&gt;</code>")
