"""What writing costs: a save serialises its document for the hashes once (`store_records.row_hashes`),
not three times, and gets the very hashes `state_hash`, `snapshot_hash` and `source_hash` give (a
store's existing rows and baselines keep matching); the row's own JSON is the one other pass.
`store export` syncs each folder once, not per file, and never leaves one unsynced."""
from __future__ import annotations

import copy
import json

from test_store_db import at, snap

from driftwatch.snapshots import store_records, store_sql_schema
from driftwatch.snapshots.snapshot import snapshot_to_dict
from driftwatch.snapshots.store import SnapshotStore
from driftwatch.snapshots.store_records import row_hashes, snapshot_hash, source_hash, state_hash


def _documents():
    base = snapshot_to_dict(snap(3))
    live = copy.deepcopy(base)
    live["engine"] = {"derived": "dropped from every hash"}
    live["issues"] = ["also derived"]
    live["runtime"] = dict(live.get("runtime") or {}, main_pid=4242, measured={"tokens_per_s": 70.5},
                           effective={"figures": {"kv": 1.5}, "context_len": 131072})
    odd = copy.deepcopy(base)
    odd["runtime"] = {"effective": "not a mapping", "measured": None}
    odd["environment"] = {"É": "ü 😀", "b": [1, 2.5, None, True]}
    return [base, live, odd, {}, {"host": "h"}]


def test_row_hashes_are_the_three_hashes_byte_for_byte():
    for doc in _documents():
        before = copy.deepcopy(doc)
        assert row_hashes(doc) == (state_hash(doc), snapshot_hash(doc), source_hash(doc)), doc.keys()
        assert doc == before  # nothing changed in place
    moved = _documents()[1]
    moved["runtime"]["measured"] = {"tokens_per_s": 12.0}
    moved["runtime"]["effective"]["figures"] = {"kv": 9}
    assert row_hashes(moved).state == row_hashes(_documents()[1]).state  # live figures: the same state
    assert row_hashes(moved).content != row_hashes(_documents()[1]).content


def test_a_save_serialises_the_whole_document_once_for_its_hashes(tmp_path, monkeypatch):
    whole = []

    def is_whole(value):
        return isinstance(value, dict) and "collected_at" in value and "host" in value

    real = json.dumps

    def counting(value, *args, **kwargs):
        if is_whole(value):
            whole.append("sorted" if kwargs.get("sort_keys") else "row")
        return real(value, *args, **kwargs)

    class Counting:
        def __init__(self, encoder, label):
            self.encoder, self.label = encoder, label

        def encode(self, value):
            if is_whole(value):
                whole.append(self.label)
            return self.encoder.encode(value)
    store = SnapshotStore(tmp_path / "store")
    store.save(snap(3))
    for module in (store_records, store_sql_schema):
        monkeypatch.setattr(module.json, "dumps", counting)
    monkeypatch.setattr(store_records, "_CANON", Counting(store_records._CANON, "sorted"))
    monkeypatch.setattr(store_sql_schema, "_ROW_JSON", Counting(store_sql_schema._ROW_JSON, "row"))
    changed = store.save_run(snap(1, at=at(1)))
    assert changed.written
    # the row's document (natural key order) once; the hashes' canonical text never of the whole
    # document (each top-level field once instead)
    assert whole == ["row"], whole
    row = store._query("SELECT state_hash, content_hash, source_hash FROM snapshots ORDER BY id DESC LIMIT 1")[0]
    data = snapshot_to_dict(store.records()[-1].read())
    assert tuple(row) == (state_hash(data), snapshot_hash(data), source_hash(data))


def test_export_syncs_every_folder_it_wrote_in_once(tmp_path, monkeypatch):
    """`store export` writes each file without a directory sync, then syncs every folder once: the
    unit folders (with or without a runs.log), the host folders and the output folder."""
    from test_store_db import story

    from driftwatch import filewrite
    from driftwatch.snapshots.store_transfer import export_files
    db = SnapshotStore(tmp_path / "db")
    story(db)  # ct129: two units with unchanged runs (a runs.log each)
    db.save(snap(2, unit="third.service"))  # and one without
    db.save(snap(2, host="ct130"))
    synced = []
    real = filewrite._sync_directory
    monkeypatch.setattr(filewrite, "_sync_directory", lambda d: (synced.append(str(d)), real(d)))
    out = tmp_path / "out"
    assert export_files(db, out).snapshots == 7
    units = {str(p.parent) for p in out.glob("*/*/*.yaml")}
    assert len(units) == 4
    assert sorted(synced) == sorted(units | {str(out / "ct129"), str(out / "ct130"), str(out)}), synced
