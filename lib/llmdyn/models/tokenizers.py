"""A byte-level tokenizer built in memory, for tiny test models that must not download anything."""

from __future__ import annotations

from functools import lru_cache

from transformers import GPT2TokenizerFast


def _byte_alphabet() -> list[str]:
    """The 256 printable stand-ins a byte-level BPE uses for raw bytes, in byte order.

    Printable Latin-1 bytes stand for themselves; the others are shifted past 255 so that
    every byte has a visible, non-whitespace character.
    """
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(
        range(0xAE, 0x100))
    shifted = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(shifted)) for b in range(256)]


@lru_cache(maxsize=1)
def byte_tokenizer() -> GPT2TokenizerFast:
    """One token per byte (256) plus an end-of-text token; no merges, no files.

    transformers 5 ignores ``vocab_file=`` here, so the vocabulary is passed as a dict.
    """
    vocab = {char: i for i, char in enumerate(_byte_alphabet())}
    vocab["<|endoftext|>"] = len(vocab)
    return GPT2TokenizerFast(vocab=vocab, merges=[], bos_token="<|endoftext|>",
                             eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                             add_prefix_space=False)
