"""The snapshot that tells whether the tests touched the user's results/ and cache."""

import os

from tests import user_files


def test_changes_name_what_was_added_changed_and_removed(tmp_path):
    (tmp_path / "kept").write_text("a")
    (tmp_path / "edited").write_text("a")
    (tmp_path / "gone").write_text("a")
    before = user_files.snapshot(tmp_path)
    (tmp_path / "edited").write_text("ab")
    (tmp_path / "gone").unlink()
    (tmp_path / "suite" / "t1-seed0").mkdir(parents=True)
    (tmp_path / "suite" / "t1-seed0" / "run.json").write_text("{}")
    assert user_files.changes(before, user_files.snapshot(tmp_path)) == [
        "added suite/t1-seed0/run.json", "changed edited", "removed gone"]
    assert user_files.changes(before, before) == []


def test_session_cache_links_downloads_and_conversions_not_locks_or_logs(tmp_path):
    user = tmp_path / "user"
    for name in ("corpus/a.tgz", "gguf/m.gguf", "gguf/m.gguf.lock", "models/m-0123abcd/w",
                 "models/m-0123abcd.convert.log", "models/m-0123abcd.lock", "file-hashes.json"):
        (user / name).parent.mkdir(parents=True, exist_ok=True)
        (user / name).write_text("x")
    cache = user_files.session_cache(user)
    try:
        linked = sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_symlink())
        assert linked == ["corpus/a.tgz", "gguf/m.gguf", "models/m-0123abcd"]
        assert (cache / "models" / "m-0123abcd" / "w").read_text() == "x"
    finally:
        user_files.remove(cache)
    assert (user / "models" / "m-0123abcd" / "w").exists()  # removing links keeps their targets


def test_processes_of_this_session_are_not_counted_as_others():
    assert os.getpid() not in user_files.other_llmdyn_processes()
