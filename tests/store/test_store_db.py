"""The snapshot store on a database, SQLite and a real PostgreSQL server: saving, unchanged runs as
rows, listings, history bounded by its answer, prune, schema versions, import from the YAML-file
format giving the same history, concurrent writers, and bad input as one line and exit 2."""
from __future__ import annotations

import datetime as dt
import functools
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from driftwatch.errors import InputError
from driftwatch.run.history_document import history_document
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.store import FileStore, SnapshotKey, SnapshotStore, open_store, snapshot_hash
from driftwatch.snapshots.store_sql import DB_NAME, SCHEMA_VERSION, DatabaseStore, redact_url
from driftwatch.snapshots.store_transfer import export_files, import_files

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).with_name("driftwatch")
U70 = ROOT / "examples" / "sglang-qwen-70toks.service"
U40 = ROOT / "examples" / "sglang-qwen-40toks.service"
UNIT = "sglang-qwen.service"
UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 1, 3, 0, tzinfo=UTC)


@functools.cache
def _base(steps: int):
    text = U70.read_text().replace("--speculative-num-steps 3", f"--speculative-num-steps {steps}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sglang-qwen.service"
        path.write_text(text)
        return snapshot_from_unit_file(str(path), host="ct129")


def snap(steps=3, host="ct129", at=T0, unit=UNIT):
    return replace(_base(steps), host=host, unit=unit, collected_at=at.strftime("%Y-%m-%dT%H:%M:%SZ"))


def at(hours: float) -> dt.datetime:
    return T0 + dt.timedelta(hours=hours)


def story(store, host="ct129"):
    """steps 3 (three runs), 1, 1 again, 3 (reverted), 2; a second unit with one state."""
    plan = [(0, 3), (1, 3), (2, 3), (3, 1), (4, 1), (5, 3), (6, 2)]
    for hour, steps in plan:
        store.save(snap(steps, host=host, at=at(hour)))
    store.save(snap(3, host=host, at=at(0), unit="other.service"))
    store.save(snap(3, host=host, at=at(7), unit="other.service"))


def comparable(doc: dict) -> list:
    """What a history says per unit, without where the store is or when it was written."""
    out = []
    for u in doc["units"]:
        out.append({k: u[k] for k in ("host", "unit", "snapshots", "readable", "runs", "first", "latest", "last_run",
                                      "changes")})
    return out


# ----------------------------------------------------------------------------- the store on either database


def test_unchanged_runs_are_rows_and_a_change_is_a_snapshot(db_location):
    store = SnapshotStore(db_location)
    assert isinstance(store, DatabaseStore) and store.schema_version() == SCHEMA_VERSION
    first = store.save_run(snap(3, at=at(0)))
    again = store.save_run(snap(3, at=at(1)))
    changed = store.save_run(snap(1, at=at(2)))
    assert first.written and not again.written and changed.written
    assert again.path == first.path and first.path.name == "20261101T030000Z-00.yaml"
    records = store.records("ct129", UNIT)
    assert [r.path for r in records] == [first.path, changed.path]
    assert [r.read().engine.flags["speculative_num_steps"].value for r in records] == [3, 1]
    assert store.runs("ct129", UNIT) == [at(1)]
    seen = store.seen("ct129", UNIT)
    assert (seen[first.path].runs, seen[first.path].last) == (2, at(1))
    assert store.latest("ct129", UNIT).path == changed.path
    assert store.latest("ct129", "nothing.service") is None
    # the same second twice (dedupe off): a second sequence number, in time order
    twin = store.save_run(snap(3, at=at(2)), dedupe=False)
    assert twin.path.name == "20261101T050000Z-01.yaml"
    assert [r.path for r in store.records("ct129", UNIT)][-1] == twin.path
    # the document is kept whole: its content hash is the saved snapshot's
    assert records[0].content_hash() == snapshot_hash(replace(snap(3, at=at(0))))
    assert store.groups() == [("ct129", UNIT)]


def test_history_from_the_database_is_the_file_stores(db_location, tmp_path):
    files = FileStore(tmp_path / "files")
    story(files)
    db = SnapshotStore(db_location)
    done = import_files(tmp_path / "files", db)
    assert (done.snapshots, done.runs, done.present) == (5, 4, 0)
    assert comparable(history_document(db)) == comparable(history_document(files))
    since = at(4.5)
    assert comparable(history_document(db, since=since)) == comparable(history_document(files, since=since))
    bounded = {u["unit"]: u for u in history_document(db, since=since)["units"]}[UNIT]
    assert sorted({c["at"] for c in bounded["changes"]}) == ["2026-11-01T08:00:00Z", "2026-11-01T09:00:00Z"]
    assert bounded["changes"][0]["previous"]["snapshot"] == "20261101T080000Z-00.yaml"
    # importing again imports nothing twice
    assert import_files(tmp_path / "files", db).present == 5
    assert len(db.records()) == 5


def test_export_writes_the_file_layout_that_imports_back(tmp_path):
    db = SnapshotStore(tmp_path / "db")
    story(db)
    export_files(db, tmp_path / "out")
    back = FileStore(tmp_path / "out")
    assert [(r.host, r.unit, r.path.name) for r in back.records()] == \
        [(r.host, r.unit, r.path.name) for r in db.records()]
    assert comparable(history_document(back)) == comparable(history_document(db))


def test_since_reads_from_the_snapshot_before_the_cut(db_location):
    store = SnapshotStore(db_location)
    story(store)
    loaded = store.load("ct129", UNIT, at(4.5), previous=True)
    assert [s.collected_at for s in loaded] == [at(3), at(5), at(6)]  # at(3): the state before the cut
    assert [s.collected_at for s in store.load("ct129", UNIT, at(4.5))] == [at(5), at(6)]
    walked = []
    for stored in store.newest_first("ct129", UNIT):
        walked.append(stored.collected_at)
        if len(walked) == 2:
            break
    assert walked == [at(6), at(5)]


def test_prune_keeps_the_newest_protected_and_recent_and_deletes_in_one_go(db_location):
    store = SnapshotStore(db_location)
    story(store)
    before = [r.path for r in store.records("ct129", UNIT)]
    assert store.prune(keep=100) == [] and [r.path for r in store.records("ct129", UNIT)] == before
    key = SnapshotKey("ct129", UNIT, at(3))
    doomed = store.prune(keep=1, protected=[key], dry_run=True)
    assert [(r.unit, r.collected_at) for r in doomed] == [(UNIT, at(0)), (UNIT, at(5))]
    assert len(store.records()) == 5  # a dry run deletes nothing
    gone = store.prune(keep=1, protected=[key])
    assert [r.path for r in gone] == [r.path for r in doomed]
    assert [r.collected_at for r in store.records("ct129", UNIT)] == [at(3), at(6)]
    assert store.runs("ct129", UNIT) == [at(4)]  # runs of a deleted snapshot go with it
    # older_than: the state of at(3) was last seen at(4): kept with a cut-off before that
    assert store.prune(older_than=dt.timedelta(hours=1), now=at(4.5)) == []
    assert [r.collected_at for r in store.prune(older_than=dt.timedelta(hours=1), now=at(6))] == [at(3)]
    with pytest.raises(InputError, match="keep N newest"):
        store.prune()


def test_two_writers_of_one_sqlite_store_lose_nothing(tmp_path):
    location = str(tmp_path / "store")
    SnapshotStore(location).groups()
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(location, n, 40))
             for n in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    store = SnapshotStore(location)
    assert len(store.groups()) == 2 * 10
    assert sum(len(store.runs(h, u)) + len(store.records(h, u)) for h, u in store.groups()) == 2 * 40


def _writer(location: str, n: int, count: int) -> None:
    store = SnapshotStore(location)
    for i in range(count):
        host = f"r{n}-h{i % 10}"
        store.save(snap(3 if (i // 10) % 2 == 0 else 1, host=host, at=at(i)))


def test_two_concurrent_runners_writing_one_postgresql_store_lose_nothing(pg_url, tmp_path):
    """Two `driftwatch snapshot` processes, the same hosts and units, the same PostgreSQL store."""
    units = []
    for i in range(12):
        path = tmp_path / f"h{i}.service"
        path.write_text(U70.read_text().replace("--speculative-num-steps 3", f"--speculative-num-steps {1 + i % 4}"))
        units.append(path)
    procs = []
    for _n in range(2):
        argv = [str(DW), "snapshot", "--store", pg_url, "--host-name", "shared"]
        for path in units:
            argv += ["--unit-file", str(path)]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert pg_url.split("@")[0].split(":")[-1] not in "".join(o + e for o, e in outs)  # no password printed
    store = SnapshotStore(pg_url)
    # every save of both runners is a snapshot row or a run row of one
    rows = len(store.records("shared")) + sum(len(store.runs("shared", u)) for _, u in store.groups())
    assert rows == 2 * len(units)
    assert all(len(out.splitlines()) == len(units) for out, _ in outs)
    records = store.records("shared")
    steps = {r.read().engine.flags["speculative_num_steps"].value for r in records}
    assert steps == {1, 2, 3, 4} and len({(r.collected_at, r.seq) for r in records}) == len(records)


def test_concurrent_threads_in_one_process_share_the_store(db_location):
    import threading
    store = SnapshotStore(db_location)
    errors = []

    def work(n):
        try:
            for i in range(10):
                store.save(snap(3, host=f"t{n}", at=at(i)))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(len(store.runs(f"t{n}", UNIT)) for n in range(4)) == 4 * 9


# ----------------------------------------------------------------------------- versions and bad input


def test_a_newer_schema_is_refused_and_an_old_store_says_how_to_import(tmp_path):
    store = SnapshotStore(tmp_path / "new")
    story(store)
    with sqlite3.connect(tmp_path / "new" / DB_NAME) as db:
        db.execute("UPDATE driftwatch_meta SET value = '99' WHERE key = 'schema_version'")
    db.close()
    r = _dw("history", "--store", tmp_path / "new")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "schema v99" in r.stderr and "Traceback" not in r.stderr
    story(FileStore(tmp_path / "old"))
    r = _dw("history", "--store", tmp_path / "old")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"driftwatch store import {tmp_path / 'old'}" in r.stderr
    r = _dw("store", "import", tmp_path / "old", "--store", tmp_path / "old")
    assert r.returncode == 0 and "imported 5 snapshots and 4 unchanged runs" in r.stderr
    r = _dw("history", "--store", tmp_path / "old", "--format", "json")
    assert r.returncode == 0 and len(json.loads(r.stdout)["units"]) == 2
    assert open_store(tmp_path / "old").schema_version() == SCHEMA_VERSION


def test_unreachable_database_and_bad_urls_are_one_line_without_the_password(tmp_path):
    for url in ("postgresql://dw:hunter2pw@127.0.0.1:1/dw", "postgresql://dw:hunter2pw@127.0.0.1:notaport/dw"):
        r = _dw("history", "--store", url)
        assert r.returncode == 2, r
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("driftwatch: ") and "Traceback" not in r.stderr
        assert "hunter2pw" not in r.stdout + r.stderr and "***" in r.stderr
    assert redact_url("postgresql://u:p%40ss@h/db") == "postgresql://u:***@h/db"
    assert redact_url("postgresql://h/db") == "postgresql://h/db"
    (tmp_path / "plain").write_text("not a directory\n")
    r = _dw("snapshot", "--unit-file", U70, "--store", tmp_path / "plain" / "sub")
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_compare_on_a_local_file_imports_no_database_module():
    code = ("import sys; from driftwatch.cli import main\n"
            "try:\n    main(['compare', '--baseline', {!r}, '--unit-file', {!r}, '--format', 'json'])\n"
            "except SystemExit: pass\n"
            "bad = [m for m in ('sqlite3', 'psycopg', 'paramiko', 'deepdiff') if m in sys.modules]\n"
            "sys.stderr.write('LOADED ' + ','.join(bad) + '\\n')").format(str(ROOT / "baselines" / "70toks.yaml"),
                                                                     str(U40))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    loaded = r.stderr.rsplit("LOADED ", 1)[1].strip()
    assert "sqlite3" not in loaded and "psycopg" not in loaded, loaded


def _dw(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    return subprocess.run([str(DW), *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


def test_a_killed_writer_loses_only_its_unfinished_run(tmp_path):
    """SIGKILL a writer in the middle of its saves: every committed save is there, the database is
    intact, and the next writer goes on."""
    import signal
    import time
    location = str(tmp_path / "store")
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "from test_store_db import snap, at\n"
            "from driftwatch.snapshots.store import SnapshotStore\n"
            f"store = SnapshotStore({location!r})\n"
            "for i in range(100000):\n"
            "    store.save(snap(1 + i % 4, host='k', at=at(i)))\n"
            "    print(i, flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    done = -1
    deadline = time.monotonic() + 60
    while done < 20 and time.monotonic() < deadline:
        done = int(proc.stdout.readline() or done)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    for line in proc.stdout.read().split():  # saves it reported before the kill but not yet read here
        done = max(done, int(line))
    store = SnapshotStore(location)
    saved = len(store.records("k", UNIT))
    assert saved >= done + 1 and saved <= done + 2  # every save it reported, at most one more committed
    with sqlite3.connect(Path(location) / DB_NAME) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    store.save(snap(3, host="k", at=at(10 ** 6)))
    assert len(store.records("k", UNIT)) == saved + 1
