"""Schema v2: each snapshot row keeps its changes from the row before it (`changes`), filled when
it is saved or imported, so history reads rows instead of reading, typing and diffing snapshots.
On SQLite and a real PostgreSQL server: the kept changes give the file store's history, history
reads no document when they are kept, a v1 store is migrated and gives the same history, and a
snapshot saved out of order or a pruned gap between two kept rows still gives the right pairs."""
from __future__ import annotations

from test_store_db import UNIT, at, comparable, snap, story

from driftwatch.diff.changes import changes_between
from driftwatch.run.history_document import history_document
from driftwatch.snapshots.snapshot import snapshot_to_dict
from driftwatch.snapshots.store import FileStore, SnapshotKey, SnapshotStore, snapshot_hash, source_hash, state_hash
from driftwatch.snapshots.store_sql import MIGRATIONS, SCHEMA_VERSION, DatabaseStore, _epoch, _pack
from driftwatch.snapshots.store_transfer import import_files


def _pairs_kept(db) -> tuple[int, int]:
    """(rows that follow another row of their unit, those whose changes are kept for that pair)."""
    follow = kept = 0
    for host, unit in db.groups():
        ids = [r.id for r in db.records(host, unit)]
        froms = dict(db._query("SELECT id, changes_from FROM snapshots WHERE host = ? AND unit = ?", (host, unit)))
        for older, newer in zip(ids, ids[1:], strict=False):
            follow += 1
            kept += froms[newer] == older
    return follow, kept


def test_changes_are_kept_at_save_and_history_reads_them_not_the_documents(db_location, tmp_path):
    files = FileStore(tmp_path / "files")
    story(files)
    db = SnapshotStore(db_location, changes=changes_between)
    story(db)
    follow, kept = _pairs_kept(db)
    assert follow == 3 and kept == follow
    assert db._query("SELECT COUNT(*) FROM changes")[0][0] > 0
    expected = comparable(history_document(files))
    assert comparable(history_document(db)) == expected
    since = at(4.5)
    expected_since = comparable(history_document(files, since=since))
    # every document made unreadable: the history is still whole, read from the kept rows alone
    db._write(lambda cur, run: run("UPDATE snapshots SET document = ?", (b"not zlib",)))
    assert comparable(history_document(db)) == expected
    assert comparable(history_document(db, since=since)) == expected_since
    assert db.problems == []


def test_a_store_imported_from_files_keeps_the_changes_of_every_pair(db_location, tmp_path):
    files = FileStore(tmp_path / "files")
    story(files)
    db = DatabaseStore(db_location, changes=changes_between)
    done = import_files(tmp_path / "files", db)
    assert (done.snapshots, done.runs) == (5, 4)
    follow, kept = _pairs_kept(db)
    assert follow == 3 and kept == follow
    assert comparable(history_document(db)) == comparable(history_document(files))


def _v1_store(location: str, files: FileStore) -> None:
    """A store as schema v1 wrote it: its tables only, and the rows an import made."""
    dialect = DatabaseStore(location).dialect
    conn = dialect.connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE driftwatch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for statement in MIGRATIONS[1]:
        cur.execute(statement.format(**dialect.types))
    cur.execute(dialect.sql("INSERT INTO driftwatch_meta (key, value) VALUES (?, ?)"), ("schema_version", "1"))
    owned = {}
    for host, unit in files.groups():
        owned.update(files._attribute(files.records(host, unit)))
    for record in files.records():
        data = snapshot_to_dict(record.read())
        cur.execute(dialect.sql("INSERT INTO snapshots (host, unit, collected_at, seq, name, state_hash, content_hash,"
                                " source_hash, document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                    (record.host, record.unit, _epoch(record.collected_at), record.seq, record.name, state_hash(data),
                     snapshot_hash(data), source_hash(data), _pack(data)))
        cur.execute(dialect.sql("SELECT id FROM snapshots WHERE host = ? AND unit = ? AND name = ?"),
                    (record.host, record.unit, record.name))
        rid = cur.fetchone()[0]
        for when in owned.get(record.path, []):
            cur.execute(dialect.sql("INSERT INTO runs (snapshot_id, at) VALUES (?, ?)"), (rid, _epoch(when)))
    conn.close()


def test_a_v1_store_is_migrated_and_gives_the_same_history(db_location, tmp_path):
    files = FileStore(tmp_path / "files")
    story(files)
    _v1_store(db_location, files)
    db = SnapshotStore(db_location)
    assert db.schema_version() == SCHEMA_VERSION == 2
    assert _pairs_kept(db) == (3, 0)  # v1 kept no changes
    expected = comparable(history_document(files))
    assert comparable(history_document(db)) == expected  # computed once from the documents, and kept
    assert _pairs_kept(db) == (3, 3)
    assert comparable(history_document(SnapshotStore(db_location))) == expected
    assert [r.read().engine.flags["speculative_num_steps"].value for r in db.records("ct129", UNIT)] == [3, 1, 3, 2]


def test_a_snapshot_saved_out_of_order_and_a_pruned_gap_keep_the_pairs_right(db_location, tmp_path):
    files = FileStore(tmp_path / "files")
    db = SnapshotStore(db_location, changes=changes_between)
    for store in (files, db):
        for hour, steps in [(0, 3), (2, 1), (3, 4), (1, 2)]:  # hour 1 arrives last (a runner's late save)
            store.save(snap(steps, at=at(hour)))
    assert _pairs_kept(db) == (3, 3)  # hour 2's changes are now from hour 1, not hour 0
    assert comparable(history_document(db)) == comparable(history_document(files))
    keep_first = [SnapshotKey("ct129", UNIT, at(0))]
    for store in (files, db):
        assert [r.collected_at for r in store.prune(keep=2, protected=keep_first)] == [at(1)]
    assert _pairs_kept(db) == (2, 1)  # hour 2 followed hour 1, which is gone
    assert comparable(history_document(db)) == comparable(history_document(files))
    assert _pairs_kept(db) == (2, 2)
    assert comparable(history_document(db, since=at(2.5))) == comparable(history_document(files, since=at(2.5)))



def test_a_differ_that_fails_never_costs_a_save(db_location, tmp_path):
    def broken(old, new):
        raise TypeError("a bug in the diff")
    files = FileStore(tmp_path / "files")
    db = DatabaseStore(db_location, changes=broken)
    for store in (files, db):
        for hour, steps in [(0, 3), (1, 1), (2, 2)]:
            assert store.save_run(snap(steps, at=at(hour))).written
    assert len(db.records("ct129", UNIT)) == 3 and _pairs_kept(db) == (2, 0)
    assert comparable(history_document(db)) == comparable(history_document(files))  # computed when asked
    assert _pairs_kept(db) == (2, 2)
