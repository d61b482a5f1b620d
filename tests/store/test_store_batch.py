"""History of many units from a database store in a few statements (`DatabaseStore.kept_histories`),
not three per unit: on SQLite and a real PostgreSQL server it gives the YAML-file store's history
and the one-unit path's, for cuts before, between, on and after the rows (two snapshots in one
second included), with unchanged runs and a unit the store does not hold; the number of statements
does not grow with the units; a pair never kept is still computed (and kept)."""
from __future__ import annotations

import datetime as dt

from test_store_db import UNIT, at, comparable, snap, story

from driftwatch.diff.changes import changes_between
from driftwatch.run import history_document as history
from driftwatch.run.history_document import history_document
from driftwatch.snapshots.store import FileStore, SnapshotStore

HOSTS = ("ct129", "ct130", "ct131")
CUTS = [None, at(-1), at(0), at(0.5), at(3), at(3) + dt.timedelta(seconds=1), at(6), at(7), at(9)]


def _stores(db_location, tmp_path):
    files = FileStore(tmp_path / "files")
    db = SnapshotStore(db_location, changes=changes_between)
    for store in (files, db):
        for host in HOSTS:
            story(store, host=host)
        # two snapshots in one second (sequence numbers 00 and 01), then a third state an hour on
        store.save(snap(1, host="ct132", at=at(2)))
        store.save(snap(4, host="ct132", at=at(2)))
        store.save(snap(2, host="ct132", at=at(3)))
    return files, db


def _counted(db):
    calls = []
    real = db._query

    def query(sql, params=()):
        calls.append(sql)
        return real(sql, params)
    db._query = query
    return calls


def test_the_batch_gives_the_file_stores_history_and_the_one_unit_paths(db_location, tmp_path, monkeypatch):
    files, db = _stores(db_location, tmp_path)
    groups = files.groups() + [("nohost", UNIT)]
    assert len(db.records("ct132", UNIT)) == 3
    for since in CUTS:
        batched = comparable(history_document(db, groups, since=since))
        # the file store miscounts "readable" when the row before the cut shares its second with
        # another (its window starts at that second): ct132 is held to the one-unit path only
        same = [u for u in batched if u["host"] != "ct132"]
        assert same == [u for u in comparable(history_document(files, groups, since=since)) if u["host"] != "ct132"]
        with monkeypatch.context() as m:  # the one-unit path, three statements per unit
            m.setattr(history, "_kept_batch", lambda *a: {})
            assert comparable(history_document(db, groups, since=since)) == batched, since
    last = [u for u in history_document(db, since=at(3))["units"] if u["host"] == "ct132"][0]
    assert [c["previous"]["snapshot"] for c in last["changes"]] == ["20261101T050000Z-01.yaml"]
    assert last["first"]["snapshot"] == "20261101T050000Z-00.yaml" and last["snapshots"] == 3
    assert db.problems == []


def test_statements_do_not_grow_with_the_units(db_location, tmp_path):
    _, db = _stores(db_location, tmp_path)
    calls = _counted(db)
    one = history_document(db, [("ct129", UNIT)], since=at(3))
    per_one = len(calls)
    groups = db.groups()
    calls.clear()
    fleet = history_document(db, groups, since=at(3))
    assert len(fleet["units"]) == 2 * len(HOSTS) + 1 and one["units"][0]["changes"]
    assert len(calls) == per_one <= 4, calls


def test_a_pair_never_kept_is_computed_and_kept(db_location, tmp_path):
    files, db = _stores(db_location, tmp_path)
    db._write(lambda cur, run: run("UPDATE snapshots SET changes_from = NULL WHERE host = ?", ("ct130",)))
    db._write(lambda cur, run: run("DELETE FROM changes WHERE snapshot_id IN (SELECT id FROM snapshots "
                                   "WHERE host = ?)", ("ct130",)))
    assert comparable(history_document(db)) == comparable(history_document(files))
    kept = db.kept_histories([("ct130", UNIT)])[("ct130", UNIT)]
    assert kept.pairs() is not None and len(kept.pairs()) == len(kept.rows) - 1


def test_runs_are_counted_per_unit(db_location, tmp_path):
    files = FileStore(tmp_path / "files")
    db = SnapshotStore(db_location, changes=changes_between)
    for store in (files, db):
        for hour in range(4):
            store.save_run(snap(3, at=at(hour)))
        store.save_run(snap(1, at=at(5)))
        store.save_run(snap(1, at=at(6)))
    got = comparable(history_document(db, since=at(5)))
    assert got == comparable(history_document(files, since=at(5)))
    assert got[0]["runs"] == 6 and got[0]["last_run"] == "2026-11-01T09:00:00Z"
    assert got[0]["changes"][0]["previous"]["last_seen"] == "2026-11-01T06:00:00Z"



def test_reading_questions_import_no_saving_or_running_machinery(tmp_path):
    """History and a no-op prune on SQLite: no tempfile (saves), hashlib (hashes, shards), socket or
    getpass (a baseline's author), queue (the snapshot run's answer thread): start-up is most of
    what those questions cost."""
    import subprocess
    import sys
    store = tmp_path / "store"
    story(SnapshotStore(store, changes=changes_between))
    empty = tmp_path / "no-baselines"
    empty.mkdir()
    for argv in (["history", "ct129", "--format", "json"], ["history", "--since", "2026-11-01T05:00:00Z", "--format", "json"],
                 ["prune", "--keep", "1000", "--baselines-dir", str(empty)]):
        code = ("import sys; from driftwatch.cli import main\n"
                "try:\n    main({!r})\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
                "bad = [m for m in ('tempfile', 'hashlib', 'socket', 'getpass', 'queue') if m in sys.modules]\n"
                "sys.stderr.write('LOADED ' + ','.join(bad) + '\\n')").format(argv + ["--store", str(store)])
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert "LOADED " in r.stderr, r.stderr
        assert r.stderr.rsplit("LOADED ", 1)[1].strip() == "", (argv, r.stderr)


def test_store_check_names_the_rows_no_question_reached(db_location, tmp_path):
    """A damaged row that history (kept changes) and report's "since" never read is named by
    `driftwatch store check`: one stdout line per unreadable row, a summary on stderr, exit 1; a
    whole store exits 0."""
    import os
    import subprocess
    import sys
    db = SnapshotStore(db_location, changes=changes_between)
    story(db)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}

    def check(*more):
        return subprocess.run([sys.executable, "-m", "driftwatch.cli", "store", "check", "--store", db_location,
                               *more], capture_output=True, text=True, timeout=120, env=env)
    r = check()
    assert r.returncode == 0 and r.stdout == "" and "checked 5 snapshots" in r.stderr and "all readable" in r.stderr
    oldest = db.records("ct129", UNIT)[0]
    db._write(lambda cur, run: run("UPDATE snapshots SET document = ? WHERE id = ?", (b"not zlib", oldest.id)))
    assert comparable(history_document(db)) and db.problems == []  # history never reads it
    r = check()
    assert r.returncode == 1, r
    lines = r.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{oldest.path}: unreadable: "), r.stdout
    assert "1 unreadable" in r.stderr and "Traceback" not in r.stderr
    assert check("--host", "ct129", "--unit", "other.service").returncode == 0
