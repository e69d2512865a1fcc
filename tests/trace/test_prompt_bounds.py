"""A prompt is bounded: over 1 MB it is refused, and a long one is tokenised from its end only."""

from __future__ import annotations

import time

import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.models.loading import load_model
from llmdyn.trace import MAX_PROMPT_CHARS, check_prompts_fit, context_note, encode


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-llama")


def test_a_prompt_over_the_bound_is_refused_in_one_line(tiny):
    prompt = "x" * (MAX_PROMPT_CHARS + 1)
    for call in (lambda: encode(tiny, prompt, cut_long_prompts=True),
                 lambda: check_prompts_fit(tiny, [prompt], cut_long_prompts=True)):
        with pytest.raises(LlmdynError, match=r"prompt has 1,000,001 characters, more than the "
                                              r"1,000,000 llmdyn reads; .* give a shorter"):
            call()


def test_a_long_prompt_keeps_the_last_tokens_of_the_whole_tokenisation(tiny):
    # the known answer: the whole prompt's ids, cut to the context by hand
    prompt = " ".join(f"word{i}" for i in range(12_000))  # 100 kB
    start = time.process_time()
    cut = encode(tiny, prompt, cut_long_prompts=True)
    assert time.process_time() - start < 0.5  # the tail only
    whole = tiny.tokenizer(prompt, return_tensors="pt").input_ids
    assert torch.equal(cut.cpu(), whole[:, -tiny.n_ctx:])


def test_a_long_prompt_not_cut_is_refused_naming_its_size(tiny):
    prompt = "word " * 10_000
    with pytest.raises(LlmdynError, match=r"prompt has 50,000 characters, far more than 64 "
                                          r"tokens but tiny-llama accepts at most 64"):
        encode(tiny, prompt)
    with pytest.raises(LlmdynError, match="far more than 64 tokens"):
        check_prompts_fit(tiny, ["short", prompt], cut_long_prompts=False)
    note = context_note(tiny, ["short", prompt], cut_long_prompts=True)
    assert "1 of 2 prompts are longer" in note and "more for a prompt far longer" in note
    assert "more for" not in context_note(tiny, ["short", "word " * 20], cut_long_prompts=True)
