"""The snapshot store on a database: SQLite (stdlib, ``STORE/store.db``) or PostgreSQL
(``postgresql://…``, psycopg 3, the ``[postgres]`` extra). `DatabaseStore` answers the questions
(records, loads, runs) and saves; the rest is split by the reason it changes:

    store_url             the database URL: recognised, printed without its secrets (libpq's rules)
    store_sql_schema      tables, migrations (`MIGRATIONS`, `SCHEMA_VERSION`), row packing, row types
    store_sql_connection  SQLite / PostgreSQL dialects, opening and migrating, one read, one write
    store_sql_changes     the changes kept at save time (schema v2) and history's reads of them
    store_sql_upkeep      prune (retention) and check

Every write is one transaction: a save takes the host/unit's lock (SQLite: the database's write
lock, ``BEGIN IMMEDIATE``; PostgreSQL: an advisory transaction lock on the host/unit), reads the
newest row's state hash and inserts either a run row or a snapshot row. A killed writer loses its
own uncommitted run, nothing else. Nothing here imports sqlite3 or psycopg at module level.
"""
from __future__ import annotations

import datetime as _dt
import os
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..errors import DriftwatchError, InputError
from ..timestamps import file_stamp, format_utc
from .store_records import (
    MAX_PER_SECOND,
    SaveResult,
    Seen,
    SnapshotRecord,
    StoredSnapshot,
    component_name,
    row_hashes,
    safe_component,
    snapshot_dict,
    stamped,
)
from .store_sql_changes import KeptChanges

# DB_NAME ... scrub_message: also the names callers import from here (store.py, the CLI, tests, benchmarks)
from .store_sql_schema import (
    DB_NAME,
    MIGRATIONS,
    SCHEMA_VERSION,
    DbRecord,
    Differ,
    KeptRow,
    UnitRows,
    _epoch,
    _from_dict,
    _instant,
    _pack,
    _unpack,
)
from .store_sql_upkeep import StoreUpkeep
from .store_url import is_database_url, redact_url, scrub_message

if TYPE_CHECKING:  # typing a snapshot imports the engines: only where a document is read
    from .snapshot import Snapshot


class DatabaseStore(KeptChanges, StoreUpkeep):
    """The snapshots in a database, with the interface of the file store (`SnapshotStore`): the
    questions (records, loads, runs) and the saves here, the connection in `SqlConnection`, kept
    changes in `KeptChanges`, prune and check in `StoreUpkeep`."""

    def groups(self, host: str | None = None) -> list[tuple[str, str]]:
        """(host, unit) names that hold snapshots (of `host`, as stored, when given: one index range);
        the names themselves (`component_name`), which `records`, `runs`, ... take back."""
        if host is not None:
            return [(component_name(h), component_name(u))
                    for h, u in self._query("SELECT DISTINCT host, unit FROM snapshots WHERE host = ? ORDER BY unit",
                                            (host,))]
        return [(component_name(h), component_name(u))
                for h, u in self._query("SELECT DISTINCT host, unit FROM snapshots ORDER BY host, unit")]

    def records(self, host: str | None = None, unit: str | None = None) -> list[SnapshotRecord]:
        where, params = self._filter(host, unit)
        rows = self._query(f"SELECT {self._COLUMNS} FROM snapshots{where} ORDER BY host, unit, collected_at, seq",
                           params)
        return [self._record(r) for r in rows]

    def _group(self, host, unit):
        return self.records(host or "local", unit or "unit")  # records() makes them store names

    def latest(self, host: str | None, unit: str | None) -> SnapshotRecord | None:
        rows = self._query(f"SELECT {self._COLUMNS} FROM snapshots WHERE host = ? AND unit = ? "
                           "ORDER BY collected_at DESC, seq DESC LIMIT 1",
                           (safe_component(host, "local"), safe_component(unit, "unit")))
        return self._record(rows[0]) if rows else None

    def find(self, host: str, unit: str, name: str) -> DbRecord | None:
        """The row a listing named ``HOST/UNIT/NAME`` (folder names as listed)."""
        rows = self._query(f"SELECT {self._COLUMNS} FROM snapshots WHERE host = ? AND unit = ? AND name = ?",
                           (host, unit, name))
        return self._record(rows[0]) if rows else None

    def read(self, record, engine_version: str | None = None) -> Snapshot:
        if isinstance(record, DbRecord):
            return record.read(engine_version)
        path = Path(record.path if isinstance(record, SnapshotRecord) else os.fspath(record))
        if not os.path.lexists(path) and len(path.parts) >= 3:  # a name this store listed
            found = self.find(path.parent.parent.name, path.parent.name, path.name)
            if found is not None:
                return found.read(engine_version)
        return super().read(record, engine_version)

    def _stored(self, rows, engine_version) -> Iterable[StoredSnapshot]:
        for row in rows:
            record = self._record(row[:6])
            try:
                snap = _from_dict(_unpack(row[6]), str(record.path), engine_version)
            except (DriftwatchError, zlib.error, ValueError, UnicodeDecodeError) as exc:
                self._problem(f"{record.path}: skipped: {exc}")
                continue
            yield StoredSnapshot(record, snap)

    def load(self, host: str | None, unit: str | None, since: _dt.datetime | None = None,
             engine_version: str | None = None, previous: bool = False) -> list[StoredSnapshot]:
        """The readable snapshots of one host/unit, oldest first (collected at or after `since`;
        with `previous`, also the one before it: a change since then is between the two)."""
        h, u = safe_component(host, "local"), safe_component(unit, "unit")
        sql = f"SELECT {self._COLUMNS}, document FROM snapshots WHERE host = ? AND unit = ?"
        params: tuple = (h, u)
        if since is not None:
            cut = _epoch(since) + (1 if since.microsecond else 0)
            if previous:
                sql += (" AND collected_at >= COALESCE((SELECT MAX(collected_at) FROM snapshots"
                        " WHERE host = ? AND unit = ? AND collected_at < ?), ?)")
                params += (h, u, cut, cut)
            else:
                sql += " AND collected_at >= ?"
                params += (cut,)
        rows = self._query(sql + " ORDER BY collected_at, seq", params)
        loaded = list(self._stored(rows, engine_version))
        if since is not None and previous:
            before = [s for s in loaded if s.collected_at < since]
            loaded = before[-1:] + [s for s in loaded if s.collected_at >= since]
        return loaded

    def newest_first(self, host: str | None, unit: str | None,
                     engine_version: str | None = None) -> Iterable[StoredSnapshot]:
        """Newest first, read a page at a time (walking back stops reading where the caller stops)."""
        h, u = safe_component(host, "local"), safe_component(unit, "unit")
        after, page = None, 8
        while True:
            sql = f"SELECT {self._COLUMNS}, document FROM snapshots WHERE host = ? AND unit = ?"
            params: tuple = (h, u)
            if after is not None:
                sql += " AND (collected_at < ? OR (collected_at = ? AND seq < ?))"
                params += (after[0], after[0], after[1])
            rows = self._query(sql + f" ORDER BY collected_at DESC, seq DESC LIMIT {page}", params)
            if not rows:
                return
            yield from self._stored(rows, engine_version)
            after = (rows[-1][3], rows[-1][4])
            page = min(page * 2, 256)

    # ------------------------------------------------------------------ runs

    def runs(self, host: str | None, unit: str | None) -> list[_dt.datetime]:
        rows = self._query("SELECT r.at FROM runs r JOIN snapshots s ON s.id = r.snapshot_id "
                           "WHERE s.host = ? AND s.unit = ? ORDER BY r.at",
                           (safe_component(host, "local"), safe_component(unit, "unit")))
        return [_instant(r[0]) for r in rows]

    def seen(self, host: str | None, unit: str | None) -> dict[Path, Seen]:
        rows = self._query("SELECT s.id, s.host, s.unit, s.collected_at, s.seq, s.name, COUNT(r.at), MAX(r.at) "
                           "FROM snapshots s LEFT JOIN runs r ON r.snapshot_id = s.id "
                           "WHERE s.host = ? AND s.unit = ? "
                           "GROUP BY s.id, s.host, s.unit, s.collected_at, s.seq, s.name",
                           (safe_component(host, "local"), safe_component(unit, "unit")))
        out = {}
        for row in rows:
            record = self._record(row[:6])
            last = max(record.collected_at, _instant(row[7])) if row[7] is not None else record.collected_at
            out[record.path] = Seen(record.collected_at, last, 1 + int(row[6]))
        return out

    # ------------------------------------------------------------------ saving

    def save(self, snapshot: Snapshot, *, dedupe: bool = True) -> Path:
        return self.save_run(snapshot, dedupe=dedupe).path

    def save_run(self, snapshot: Snapshot, *, dedupe: bool = True) -> SaveResult:
        """Save `snapshot` in one transaction: a run row when its state is the newest row's (and it
        was not collected before it), else a snapshot row."""
        snapshot, moment = stamped(snapshot)
        data = snapshot_dict(snapshot)
        return self.insert(data, snapshot.host, snapshot.unit, moment, dedupe=dedupe)

    def insert(self, data: dict, host: str | None, unit: str | None, moment: _dt.datetime, *,
               dedupe: bool = True, name: str | None = None, seq: int | None = None,
               runs: Iterable[_dt.datetime] = ()) -> SaveResult:
        """One snapshot document (and, from an import, the unchanged runs that saw it again)."""
        h, u = safe_component(host, "local"), safe_component(unit, "unit")
        at = _epoch(moment)
        hashes = row_hashes(data)  # one serialisation for the three hashes; _pack is the other
        digest = hashes.state

        def body(cur, run):
            if dedupe:
                run(f"SELECT {self._COLUMNS}, state_hash FROM snapshots WHERE host = ? AND unit = ? "
                    "ORDER BY collected_at DESC, seq DESC LIMIT 1", (h, u))
                newest = cur.fetchone()
                if newest is not None and at >= newest[3] and newest[6] == digest:
                    run("INSERT INTO runs (snapshot_id, at) VALUES (?, ?)", (newest[0], at))
                    return SaveResult(self._record(newest[:6]).path, False, moment)
            number = seq
            if number is None:
                run("SELECT MAX(seq) FROM snapshots WHERE host = ? AND unit = ? AND collected_at = ?", (h, u, at))
                top = cur.fetchone()[0]
                number = 0 if top is None else int(top) + 1
                if number >= MAX_PER_SECOND:
                    raise InputError(f"{self.folder(host, unit)}: already {MAX_PER_SECOND} snapshots collected "
                                     f"at {format_utc(moment)}")
            label = name or f"{file_stamp(moment)}-{number:02d}.yaml"
            run("INSERT INTO snapshots (host, unit, collected_at, seq, name, state_hash, content_hash, source_hash,"
                " document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (h, u, at, number, label, digest, hashes.content, hashes.source, _pack(data)))
            run("SELECT id FROM snapshots WHERE host = ? AND unit = ? AND collected_at = ? AND seq = ?",
                (h, u, at, number))
            rid = cur.fetchone()[0]
            for when in runs:
                run("INSERT INTO runs (snapshot_id, at) VALUES (?, ?)", (rid, _epoch(when)))
            if self.differ is not None:
                self._diff_neighbours(cur, run, h, u, rid, at, number, data)
            return SaveResult(self.label / h / u / label, True, moment)

        return self._write(body, h, u)

    # ------------------------------------------------------------------ changes (schema v2)

    def import_group(self, host: str, unit: str, batch: list) -> tuple[int, int]:
        """One host/unit's snapshots from the file store, in one transaction: `batch` is
        [(record, document, unchanged-run times)], oldest first. A snapshot already here (same
        time and sequence number) is left alone. (snapshots written, runs written)."""
        h, u = safe_component(host, "local"), safe_component(unit, "unit")

        def body(cur, run):
            run("SELECT collected_at, seq FROM snapshots WHERE host = ? AND unit = ?", (h, u))
            present = {(int(a), int(b)) for a, b in cur.fetchall()}
            wrote = runs = 0
            for record, data, times in batch:
                at = _epoch(record.collected_at)
                if (at, record.seq) in present:
                    continue
                present.add((at, record.seq))
                hashes = row_hashes(data)
                run("INSERT INTO snapshots (host, unit, collected_at, seq, name, state_hash, content_hash, "
                    "source_hash, document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (h, u, at, record.seq, record.name, hashes.state, hashes.content, hashes.source, _pack(data)))
                run("SELECT id FROM snapshots WHERE host = ? AND unit = ? AND collected_at = ? AND seq = ?",
                    (h, u, at, record.seq))
                rid = cur.fetchone()[0]
                for when in times:
                    run("INSERT INTO runs (snapshot_id, at) VALUES (?, ?)", (rid, _epoch(when)))
                wrote += 1
                runs += len(times)
            return wrote, runs

        done = self._write(body, h, u)
        if self.differ is not None and done[0]:
            try:
                self.pair_changes(h, u, differ=self.differ)  # kept now, so history never computes them
            except Exception:  # noqa: BLE001 - the snapshots are imported whatever the diff does
                pass  # left uncomputed: history computes the pairs when it asks (and names what it cannot)
        return done

    # ------------------------------------------------------------------ export

    def documents(self, host: str | None = None, unit: str | None = None) -> Iterable[tuple[DbRecord, dict, list]]:
        """(record, document, unchanged-run times) for every snapshot, oldest first per host/unit."""
        for row in self.records(host, unit):
            record = cast(DbRecord, row)  # every record of this store is a row
            yield record, record.document(), [_instant(r[0]) for r in self._query(
                "SELECT at FROM runs WHERE snapshot_id = ? ORDER BY at", (record.id,))]


__all__ = ["DB_NAME", "MIGRATIONS", "SCHEMA_VERSION", "DatabaseStore", "DbRecord", "Differ", "KeptRow", "UnitRows",
           "is_database_url", "redact_url", "scrub_message"]
