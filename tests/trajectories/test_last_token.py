"""One prompt per last token: the units of a reading of layer 0."""

import pytest

from llmdyn import LlmdynError
from llmdyn.trajectories.last_token import distinct_last_tokens


def test_distinct_last_tokens_keeps_one_prompt_per_last_token(tiny64):
    prompts = ["The answer is:", "Say it:", "United States of", "What month was I born in"]
    chosen = distinct_last_tokens(tiny64, prompts, 3)  # the second ends in ":" too: skipped
    assert chosen == [prompts[0], prompts[2], prompts[3]]
    with pytest.raises(LlmdynError, match="only 3 of the 4 prompts end in distinct tokens"):
        distinct_last_tokens(tiny64, prompts, 4)
