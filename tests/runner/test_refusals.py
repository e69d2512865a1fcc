"""Snakemake's refusals while planning, as one line: known reports."""

from llmdyn.runner.refusals import planning_refusal

# What Snakemake 9 printed for `llmdyn workflow -n <results>/vit/tiny/mnist/<run>/run.json`.
INPUT_FUNCTION = """Building DAG of jobs...
InputFunctionException in rule vit_run in file "/repo/workflow/Snakefile", line 464:
Error:
  ValueError: /r/vit/tiny/mnist: no data set is named 'mnist'; ViTs train on fashion-mnist
Wildcards:
  grid=tiny
  dataset=mnist
  run=sd0-wd0.01-seed0
Traceback:
  File "/repo/workflow/Snakefile", line 468, in <lambda>
"""
NO_RULE = """Building DAG of jobs...
MissingRuleException:
No rule to produce results/vit/tiny/digits/r0/run.json (if you use input functions make sure \
that they don't raise unexpected exceptions).
"""
SNAKEFILE_CHECK = """LlmdynError in file "/repo/workflow/Snakefile", line 66:
workflow config measure.k: '1;touch x' is not of type 'integer'
"""


def test_a_refused_target_is_the_snakefiles_reason_in_one_line():
    assert str(planning_refusal(INPUT_FUNCTION)) == (
        "rule vit_run refused the target: /r/vit/tiny/mnist: no data set is named 'mnist'; "
        "ViTs train on fashion-mnist")
    assert str(planning_refusal(SNAKEFILE_CHECK)) == (
        "workflow config measure.k: '1;touch x' is not of type 'integer'")


def test_a_bug_in_an_input_function_keeps_snakemakes_report():
    assert planning_refusal(INPUT_FUNCTION.replace("ValueError", "KeyError")) is None
    assert planning_refusal("Error in rule chapter:\n    jobid: 0\n") is None


def test_a_results_target_names_where_llmdyn_results_puts_it(monkeypatch, tmp_path):
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path))
    assert str(planning_refusal(NO_RULE)) == (
        "no rule of the workflow writes results/vit/tiny/digits/r0/run.json; LLMDYN_RESULTS is "
        f"set, so the workflow writes its results under {tmp_path}: ask for "
        f"{tmp_path}/vit/tiny/digits/r0/run.json")
    monkeypatch.delenv("LLMDYN_RESULTS")
    assert str(planning_refusal(NO_RULE)) == (
        "no rule of the workflow writes results/vit/tiny/digits/r0/run.json")
