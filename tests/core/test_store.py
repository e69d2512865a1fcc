import errno
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.core.store import ResultStore, params_hash, safe_name, temp_prefix, writer_state

PARAMS = {"layers": (0, 1, 2), "k": 8, "scale": np.float32(0.5), "mode": "exact"}


class Counter:
    """Compute function that counts its calls and can fail on a chosen call."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls: list[str] = []
        self.fail_on = fail_on

    def __call__(self, item: str = "x") -> dict[str, np.ndarray]:
        self.calls.append(item)
        if self.fail_on is not None and len(self.calls) == self.fail_on:
            raise KeyboardInterrupt
        return {"value": np.full(3, float(len(item)))}


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    return ResultStore("google/gemma-3-270m", root=tmp_path,
                       provenance={"name": "gemma-3-270m", "sha256": "abc123"})


def result_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_round_trip_exact_and_dtypes(store):
    rng = np.random.default_rng(0)
    arrays = {
        "f32": rng.standard_normal((4, 5)).astype(np.float32),
        "f64": rng.standard_normal((2, 3, 4)),
        "i64": np.arange(7, dtype=np.int64),
        "scalar": np.array(3.25),
    }
    first = store.cached("jac", PARAMS, "p0", lambda: arrays)
    again = store.cached("jac", PARAMS, "p0", lambda: pytest.fail("should not recompute"))
    for out in (first, again):
        assert set(out) == set(arrays)
        for k, a in arrays.items():
            assert out[k].dtype == a.dtype and out[k].shape == a.shape
            np.testing.assert_array_equal(out[k], a)


def test_layout_and_provenance_sidecar(store, tmp_path):
    store.cached("jac", PARAMS, "p0", lambda: {"J": np.eye(2)})
    npz = tmp_path / "google_gemma-3-270m" / f"jac-{params_hash(PARAMS)}" / "p0.npz"
    assert npz.is_file() and store.path("jac", PARAMS, "p0") == npz
    meta = json.loads(npz.with_suffix(".json").read_text())
    assert meta["measurement"] == "jac" and meta["item"] == "p0"
    assert meta["params"] == {"layers": [0, 1, 2], "k": 8, "scale": 0.5, "mode": "exact"}
    assert meta["model"] == {"name": "gemma-3-270m", "sha256": "abc123"}
    assert meta["arrays"] == {"J": {"dtype": "float64", "shape": [2, 2]}}
    assert meta["versions"]["numpy"] == np.__version__ and meta["versions"]["python"]
    assert "nnsight" in meta["versions"]  # present even when not installed (None)
    assert meta["created"].endswith("+00:00")


def test_params_hash_canonical():
    a = params_hash({"b": [1, 2], "a": np.int64(3)})
    assert a == params_hash({"a": 3, "b": (1, 2)})
    assert len(a) == 12 and int(a, 16) >= 0
    assert a != params_hash({"a": 3, "b": [2, 1]})
    assert params_hash({"x": 1}) != params_hash({"x": 1.0})


def test_changed_param_recomputes_same_param_does_not(store):
    count = Counter()
    store.cached("jac", {"k": 4}, "p0", count)
    store.cached("jac", {"k": 4}, "p0", count)
    assert len(count.calls) == 1
    store.cached("jac", {"k": 5}, "p0", count)
    assert len(count.calls) == 2
    store.cached("other", {"k": 4}, "p0", count)
    assert len(count.calls) == 3


def test_interrupted_map_resumes(store):
    items = [f"prompt_{i}" for i in range(5)]
    first = Counter(fail_on=3)
    with pytest.raises(KeyboardInterrupt):
        store.map("traj", PARAMS, items, first, progress=False)
    assert store.missing("traj", PARAMS, items) == items[2:]
    assert len(list(store.directory("traj", PARAMS).glob("*.npz"))) == 2
    second = Counter()
    out = store.map("traj", PARAMS, items, second, progress=False)
    assert second.calls == items[2:]
    assert [o["value"][0] for o in out] == [float(len(it)) for it in items]
    assert store.missing("traj", PARAMS, items) == []


def test_map_with_progress_bar(store, capsys):
    out = store.map("traj", {"k": 1}, ["a", "bb"], Counter(), progress=True)
    assert [o["value"][0] for o in out] == [1.0, 2.0]
    assert "traj" in capsys.readouterr().err


def test_crash_mid_write_leaves_nothing(store, tmp_path, monkeypatch):
    def broken_replace(src, dst):
        raise OSError("disk died")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk died"):
        store.cached("jac", PARAMS, "p0", Counter())
    assert result_files(tmp_path) == []  # temp file removed, no npz, no sidecar
    monkeypatch.undo()
    count = Counter()
    store.cached("jac", PARAMS, "p0", count)
    assert len(count.calls) == 1


def test_partial_or_corrupt_files_are_recomputed(store):
    npz = store.path("jac", PARAMS, "p0")
    npz.parent.mkdir(parents=True)
    npz.write_bytes(b"PK\x03\x04 truncated")  # npz without sidecar
    (npz.parent / ".p0.npz.abc.tmp").write_bytes(b"leftover")
    count = Counter()
    assert store.missing("jac", PARAMS, ["p0"]) == ["p0"]
    store.cached("jac", PARAMS, "p0", count)
    assert len(count.calls) == 1
    npz.write_bytes(b"PK\x03\x04 truncated")  # corrupt npz under a valid sidecar
    store.cached("jac", PARAMS, "p0", count)
    assert len(count.calls) == 2
    assert store.cached("jac", PARAMS, "p0", count)["value"].shape == (3,)
    assert len(count.calls) == 2


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_refused(store, tmp_path, bad):
    J = np.ones((2, 2), dtype=np.float32)
    J[1, 0] = bad
    with pytest.raises(LlmdynError, match="non-finite values in 'J'.*not cached"):
        store.cached("jac", PARAMS, "p0", lambda: {"ok": np.zeros(2), "J": J})
    assert not store.path("jac", PARAMS, "p0").exists()
    assert [p for p in result_files(tmp_path) if p.suffix in (".npz", ".json")] == []


def test_object_dtype_refused(store, tmp_path):
    with pytest.raises(LlmdynError, match="'obj'.*pickle"):
        store.cached("jac", PARAMS, "p0", lambda: {"obj": np.array([{"a": 1}], dtype=object)})
    assert result_files(tmp_path) == []


def test_non_array_result_refused(store):
    with pytest.raises(LlmdynError, match="'x' is a list"):
        store.cached("jac", PARAMS, "p0", lambda: {"x": [1.0, 2.0]})
    with pytest.raises(LlmdynError, match="dict"):
        store.cached("jac", PARAMS, "p0", lambda: np.zeros(3))


def test_torch_tensor_converted(store):
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32, requires_grad=True).reshape(2, 3)
    out = store.cached("jac", PARAMS, "p0", lambda: {"t": t * 2})
    assert out["t"].dtype == np.float32
    np.testing.assert_array_equal(out["t"], np.arange(6).reshape(2, 3) * 2)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"path": Path("x")}, r"params\['path'\] is a PosixPath"),
        ({"nested": {"f": object()}}, r"params\['nested'\]\['f'\]"),
        ({"lr": float("nan")}, r"params\['lr'\] is nan"),
        ({1: "a"}, "string keys"),
        ([("k", 1)], "must be a dict"),
    ],
)
def test_non_json_params_refused(store, params, match):
    with pytest.raises(LlmdynError, match=match):
        store.cached("jac", params, "p0", Counter())


def test_bad_names_refused(tmp_path):
    with pytest.raises(LlmdynError, match="model_id"):
        ResultStore("//", root=tmp_path)
    with pytest.raises(LlmdynError, match="provenance"):
        ResultStore("m", root=tmp_path, provenance={"when": object()})
    store = ResultStore("m", root=tmp_path)
    with pytest.raises(LlmdynError, match="measurement"):
        store.cached("../up", {}, "p0", Counter())
    with pytest.raises(LlmdynError, match="items"):
        store.missing("jac", {}, "abc")


def test_unsafe_item_names_are_distinct(store):
    assert safe_name("hf:org/model") == "hf_org_model"
    a = store.cached("jac", {}, "a/b", lambda: {"v": np.array([1])})
    b = store.cached("jac", {}, "a_b", lambda: {"v": np.array([2])})
    assert (a["v"][0], b["v"][0]) == (1, 2)
    assert store.path("jac", {}, "a/b").parent == store.directory("jac", {})
    assert store.cached("jac", {}, "a/b", Counter())["v"][0] == 1


def test_default_root_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMDYN_RESULTS", str(tmp_path / "env"))
    assert ResultStore("m").root == tmp_path / "env"
    monkeypatch.delenv("LLMDYN_RESULTS")
    assert ResultStore("m").root == Path("results")


# --- identity, refusals and non-finite values ---

def test_every_bit_flip_recomputes_or_reads_the_exact_arrays(store):
    arrays = {"J": np.arange(12, dtype=np.float32).reshape(3, 4), "s": np.arange(3.0)}
    store.save("jac", PARAMS, "p0", arrays)
    npz = store.path("jac", PARAMS, "p0")
    pristine = npz.read_bytes()
    for i in range(len(pristine)):
        for bit in (0, 7):
            data = bytearray(pristine)
            data[i] ^= 1 << bit
            npz.write_bytes(bytes(data))
            got = store.load("jac", PARAMS, "p0")  # never raises
            assert got is None or all(np.array_equal(got[k], arrays[k]) for k in arrays), i
    npz.write_bytes(pristine)
    sidecar = npz.with_suffix(".json")
    meta = sidecar.read_bytes()
    for i in range(0, len(meta), 7):
        data = bytearray(meta)
        data[i] ^= 0x20
        sidecar.write_bytes(bytes(data))
        got = store.load("jac", PARAMS, "p0")
        assert got is None or all(np.array_equal(got[k], arrays[k]) for k in arrays), i


def test_hand_rewritten_npz_is_detected_by_its_content_hash(store):
    store.save("jac", PARAMS, "p0", {"value": np.zeros(3)})
    npz = store.path("jac", PARAMS, "p0")
    np.savez(npz, value=np.ones(3))  # same names, dtypes and shapes: only the hash can tell
    count = Counter()
    assert store.cached("jac", PARAMS, "p0", count)["value"][0] == 1.0  # recomputed
    assert len(count.calls) == 1


def test_other_model_identity_under_the_same_id_recomputes(store, tmp_path):
    store.cached("jac", PARAMS, "p0", Counter())
    other = ResultStore("google/gemma-3-270m", root=tmp_path,
                        provenance={"name": "gemma-3-270m", "sha256": "def456"})
    count = Counter()
    other.cached("jac", PARAMS, "p0", count)
    assert len(count.calls) == 1


def test_result_of_other_library_code_is_not_read_back(store, monkeypatch):
    from llmdyn.core import store as store_module

    store.cached("jac", PARAMS, "p0", Counter())
    monkeypatch.setattr(store_module, "code_hash", lambda module=None: "a-changed-metric")
    count = Counter()
    store.cached("jac", PARAMS, "p0", count)
    assert len(count.calls) == 1
    meta = json.loads(store.path("jac", PARAMS, "p0").with_suffix(".json").read_text())
    assert meta["code"] == "a-changed-metric"


def _computed_in(module: str):
    """A compute function that the store takes for one defined in library module ``module``."""
    def compute(item: str = "x") -> dict[str, np.ndarray]:
        compute.calls += 1
        return {"value": np.full(3, float(len(item)))}
    compute.__module__, compute.calls = module, 0
    return compute


def test_the_code_hash_of_a_result_is_that_of_its_computing_module(store, monkeypatch):
    from llmdyn.core import result_code

    compute = _computed_in("llmdyn.coupling.depth")
    store.map("depth_coupling", PARAMS, ["a", "bb"], compute, progress=False)
    meta = json.loads(store.path("depth_coupling", PARAMS, "a").with_suffix(".json").read_text())
    assert meta["computed_by"] == "llmdyn.coupling.depth"
    assert meta["code"] == result_code.code_hash("llmdyn.coupling.depth") != result_code.code_hash()
    # an edit outside the module's closure (here: any other module's hash moves) keeps it ...
    monkeypatch.setitem(result_code._HASHES, "llmdyn.plots.depth", "plot-edited")
    monkeypatch.setitem(result_code._HASHES, None, "library-edited")
    store.map("depth_coupling", PARAMS, ["a", "bb"], compute, progress=False)
    assert compute.calls == 2 and store.missing("depth_coupling", PARAMS, ["a", "bb"]) == []
    # ... one inside recomputes every item
    monkeypatch.setitem(result_code._HASHES, "llmdyn.coupling.depth", "metric-edited")
    assert store.missing("depth_coupling", PARAMS, ["a", "bb"]) == ["a", "bb"]
    store.map("depth_coupling", PARAMS, ["a", "bb"], compute, progress=False)
    assert compute.calls == 4


def test_a_result_computed_outside_the_library_depends_on_all_of_it(store, monkeypatch):
    from llmdyn.core import result_code

    store.cached("jac", PARAMS, "p0", Counter())  # a test's compute: not a library module
    meta = json.loads(store.path("jac", PARAMS, "p0").with_suffix(".json").read_text())
    assert meta["computed_by"] is None and meta["code"] == result_code.code_hash()
    monkeypatch.setitem(result_code._HASHES, None, "library-edited")
    assert store.missing("jac", PARAMS, ["p0"]) == ["p0"]


def test_a_sidecar_of_before_the_computing_module_was_recorded_still_reads(store):
    # Format 2 sidecars written before `computed_by` existed hold the hash of the whole
    # library as it was then (less the presentation folders): today that hash differs, so
    # they are computed again; one whose hash matches is read back, never refused for the
    # missing key.
    store.save("jac", PARAMS, "p0", {"value": np.zeros(3)})
    sidecar = store.path("jac", PARAMS, "p0").with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    del meta["computed_by"]
    sidecar.write_text(json.dumps(meta))
    assert store.load("jac", PARAMS, "p0") is not None
    sidecar.write_text(json.dumps({**meta, "code": "8fe1fb06d9ff"}))
    assert store.load("jac", PARAMS, "p0") is None


def test_a_sidecar_naming_no_library_module_is_recomputed(store):
    store.save("jac", PARAMS, "p0", {"value": np.zeros(3)})
    sidecar = store.path("jac", PARAMS, "p0").with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    for named in ("llmdyn.gone", "llmdyn/../../etc", "os.path", 3):
        sidecar.write_text(json.dumps({**meta, "computed_by": named}))
        assert store.load("jac", PARAMS, "p0") is None, named


def test_stale_temp_files_of_a_killed_writer_are_swept_on_open(store, tmp_path):
    store.save("jac", PARAMS, "p0", {"value": np.zeros(3)})
    folder = store.path("jac", PARAMS, "p0").parent
    stale = folder / ".p1.npz.abc.tmp"
    fresh = folder / ".p2.npz.def.tmp"  # a concurrent writer's file: keep it
    stale.write_bytes(b"x" * 4096)
    fresh.write_bytes(b"x")
    old = os.stat(stale).st_mtime - 7 * 3600  # of unknown naming: judged by age (6 hours)
    os.utime(stale, (old, old))
    ResultStore("google/gemma-3-270m", root=tmp_path)
    assert not stale.exists() and fresh.exists()


def test_live_writers_file_is_kept_whatever_its_age(store, tmp_path):
    """Clock skew of 15 minutes or more made the sweep delete a live writer's file (#31, 8)."""
    store.save("jac", PARAMS, "p0", {"value": np.zeros(3)})
    folder = store.path("jac", PARAMS, "p0").parent
    live = folder / f"{temp_prefix('p1.npz')}abc123.tmp"  # this process: alive
    elsewhere = folder / ".p2.npz.@otherhost.1-abc123.tmp"  # another machine's writer
    gone = folder / ".p3.npz.@otherhost.1-def456.tmp"  # another machine's, a day old
    for path in (live, elsewhere, gone):
        path.write_bytes(b"x")
    for path, age in ((live, 3600), (elsewhere, 20 * 60), (gone, 24 * 3600)):
        then = time.time() - age  # the disk's clock 1 hour (20 minutes, a day) behind
        os.utime(path, (then, then))
    assert writer_state(live.name) == "alive" and writer_state(gone.name) == "unknown"
    ResultStore("google/gemma-3-270m", root=tmp_path)
    assert live.exists() and elsewhere.exists() and not gone.exists()
    assert store.load("jac", PARAMS, "p0") is not None  # the finished result is untouched


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_broken_results_symlink_is_one_sentence(tmp_path, monkeypatch, kind):
    link = tmp_path / "results"
    link.symlink_to(tmp_path / ("nowhere" if kind == "dangling" else "results"))
    monkeypatch.setenv("LLMDYN_RESULTS", str(link))
    want = "points to .*nowhere.*does not exist" if kind == "dangling" else "loops"
    with pytest.raises(LlmdynError, match=f"LLMDYN_RESULTS=.*symbolic link {want}.*point "
                                          "LLMDYN_RESULTS at a directory"):
        ResultStore("m")


@pytest.mark.parametrize("code, why", [
    (errno.ENOSPC, "no space left on the device; free space or write elsewhere"),
    (errno.EROFS, "the file system is read-only; write elsewhere")])  # no space to free there
def test_full_disk_or_read_only_store_is_one_sentence(store, monkeypatch, code, why):
    store.save("jac", PARAMS, "p0", {"value": np.arange(3.0)})
    before = store.path("jac", PARAMS, "p0").read_bytes()

    def refused(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", refused)
    with pytest.raises(LlmdynError, match=f"results cache .*: cannot write .*: {why}.*"
                                          "LLMDYN_RESULTS"):
        store.save("jac", PARAMS, "p1", {"value": np.zeros(3)})
    monkeypatch.undo()
    folder = store.path("jac", PARAMS, "p0").parent
    assert not list(folder.glob(".*.tmp"))  # nothing left that fills the disk
    assert store.path("jac", PARAMS, "p0").read_bytes() == before  # finished result kept


def test_temp_file_of_a_killed_writer_is_swept_at_once(store, tmp_path):
    import subprocess
    import sys

    store.save("jac", PARAMS, "p0", {"value": np.zeros(3)})
    folder = store.path("jac", PARAMS, "p0").parent
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    killed = folder / f".p1.npz.{dead}-abc123.tmp"  # its writer exited without cleaning up
    mine = folder / f".p2.npz.{os.getpid()}-def456.tmp"  # a live writer's file: keep it
    killed.write_bytes(b"x" * 4096)
    mine.write_bytes(b"x")
    ResultStore("google/gemma-3-270m", root=tmp_path)
    assert not killed.exists() and mine.exists()


def test_sigkill_mid_write_leaves_nothing_after_the_next_open(tmp_path):
    import subprocess
    import sys

    child = (
        "import os, signal, numpy as np\n"
        "from llmdyn.core.store import ResultStore\n"
        "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"ResultStore('m', root={str(tmp_path)!r}).save('jac', {{}}, 'p0', "
        "{'value': np.zeros((512, 512))})\n")
    done = subprocess.run([sys.executable, "-c", child], env=os.environ.copy())
    assert done.returncode == -9
    assert list(tmp_path.rglob(".*.tmp"))  # the probe: a hidden temp file is left behind
    store = ResultStore("m", root=tmp_path)
    assert list(tmp_path.rglob(".*.tmp")) == []
    assert store.load("jac", {}, "p0") is None


def test_a_long_item_is_recorded_by_digest_and_length(store):
    import hashlib

    prompt = "What is the capital of France? " * 40_000  # 1.2 MB of prompt
    store.cached("jac", PARAMS, prompt, lambda: {"J": np.eye(2)})
    meta = json.loads(store.path("jac", PARAMS, prompt).with_suffix(".json").read_text())
    assert meta["item"] == {"sha256": hashlib.sha256(prompt.encode()).hexdigest(),
                            "chars": len(prompt)}
    assert store.path("jac", PARAMS, prompt).with_suffix(".json").stat().st_size < 4000
    again = store.cached("jac", PARAMS, prompt, lambda: pytest.fail("should not recompute"))
    np.testing.assert_array_equal(again["J"], np.eye(2))
    assert store.load("jac", PARAMS, prompt[:-1]) is None  # another prompt, another entry


@pytest.mark.parametrize("where", ["measurement", "model"])
def test_a_file_where_a_store_directory_belongs_is_refused_in_one_line(store, tmp_path, where):
    entry = store.directory("jac", PARAMS)
    blocked = entry if where == "measurement" else entry.parent
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("not a directory")
    with pytest.raises(LlmdynError, match=f"{blocked} is a file, not a directory of results; "
                                          "move it away"):
        store.cached("jac", PARAMS, "p0", lambda: {"J": np.eye(2)})
    assert blocked.read_text() == "not a directory"
