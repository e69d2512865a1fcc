"""Records the workflow's jobs leave: a ViT grid's record and when it is stale."""


def test_a_grid_record_is_current_only_while_its_runs_are_unchanged(tmp_path):
    # rule vit_grid's output: the workflow deletes a stale record, so the grid's job (which trains
    # only what is missing) and chapter 10 run again after a run is deleted or retrained
    import hashlib
    import json

    from llmdyn.runner.records import grid_record_current, write_grid_record

    digests = {}
    for run in ("r0", "r1"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "run.json").write_text(json.dumps({"wall_s": 1.0, "run": run}))
        digests[run] = hashlib.sha256((tmp_path / run / "run.json").read_bytes()).hexdigest()
    record = tmp_path / "grid.json"
    written = write_grid_record(record, "tiny", "digits", [tmp_path / "r0", tmp_path / "r1"])
    assert written == json.loads(record.read_text()) == {"grid": "tiny", "dataset": "digits",
                                                         "runs": digests}
    assert grid_record_current(record, remove=True) and record.exists()
    (tmp_path / "r1" / "run.json").write_text(json.dumps({"wall_s": 2.0}))  # retrained
    assert not grid_record_current(record) and record.exists()  # reported, kept
    assert not grid_record_current(record, remove=True) and not record.exists()
    record.write_text("{not json")
    assert not grid_record_current(record, remove=True) and not record.exists()
    assert not grid_record_current(record)  # none at all
