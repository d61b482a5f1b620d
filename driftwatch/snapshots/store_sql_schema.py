"""The database store's schema and rows: the tables, their migrations, how a document is packed
into a row and the row types the store hands out. One schema for SQLite and PostgreSQL, versioned in
``driftwatch_meta`` and brought up to date by `MIGRATIONS` when a store is opened (`store_sql_connection`).

Tables (schema v1)::

    snapshots(id, host, unit, collected_at, seq, name, state_hash, content_hash, source_hash, document)
        one row per state a host/unit was seen in; host and unit are `safe_component` names (as the
        folders of the file store), collected_at whole seconds since the epoch (UTC), name the
        snapshot's name in listings (``20261128T030000Z-00.yaml``), document the snapshot as
        zlib-compressed JSON (``snapshot_to_dict``); UNIQUE (host, unit, collected_at, seq) is the
        host/unit/time index every question reads through.
    runs(snapshot_id, at)   one small row per run that found its unit unchanged (ON DELETE CASCADE)

Schema v2 adds what history shows, kept when a snapshot is saved so that no question re-reads,
re-types or re-diffs a document::

    snapshots.changes_from  the id of the row the snapshot's changes were computed against (its
                            predecessor at the time); NULL: never computed (a v1 row)
    changes(snapshot_id, ord, key, body)
        the snapshot's changes from that row, in the diff's order, each a history change record
        (``diff.changes.changes_between``: typed old and new values, secrets already redacted) as
        JSON; ON DELETE CASCADE. A pair is current when ``changes_from`` is the id of the row now
        before it; otherwise (v1 rows, a row pruned between, a late save) `pair_changes` computes
        it once from the two documents and keeps it.

The store computes no diff itself (the diff lives above it): the caller gives one (`Differ`) to
the store (``changes=``) or to `pair_changes`. Migrating v1 to v2 adds the column and the table;
the pairs are filled on the first history that needs them.
"""
from __future__ import annotations

import datetime as _dt
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ..timestamps import UTC, epoch_stamp
from .store_records import SnapshotRecord, snapshot_hash, state_hash

if TYPE_CHECKING:  # typing a snapshot imports the engines: only where a document is read
    from .snapshot import Snapshot

DB_NAME = "store.db"
SCHEMA_VERSION = 2
# Each migration: the statements that bring a store from version N-1 to N. {id} and {blob} are the
# dialect's auto-increment key and binary type; everything else is the SQL both engines speak.
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE snapshots (
               id {id},
               host TEXT NOT NULL,
               unit TEXT NOT NULL,
               collected_at BIGINT NOT NULL,
               seq INTEGER NOT NULL,
               name TEXT NOT NULL,
               state_hash TEXT NOT NULL,
               content_hash TEXT NOT NULL,
               source_hash TEXT NOT NULL,
               document {blob} NOT NULL,
               UNIQUE (host, unit, collected_at, seq))""",
        "CREATE INDEX snapshots_source ON snapshots (source_hash)",
        "CREATE INDEX snapshots_content ON snapshots (content_hash)",
        """CREATE TABLE runs (
               snapshot_id BIGINT NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
               at BIGINT NOT NULL)""",
        "CREATE INDEX runs_snapshot ON runs (snapshot_id, at)",
    ],
    2: [
        # the id of the row a snapshot's changes were computed against (its predecessor then);
        # NULL: not computed (a v1 row, or saved without a differ)
        "ALTER TABLE snapshots ADD COLUMN changes_from BIGINT",
        """CREATE TABLE changes (
               snapshot_id BIGINT NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
               ord INTEGER NOT NULL,
               key TEXT NOT NULL,
               body TEXT NOT NULL,
               PRIMARY KEY (snapshot_id, ord))""",
    ],
}
CHUNK = 500  # ids per IN (...) list
# What history shows between two consecutive snapshots of a unit: `diff.changes.changes_between`,
# given to the store by the layer that owns it (the store computes no diff itself).
Differ = Callable[["Snapshot", "Snapshot"], list]


def _epoch(moment: _dt.datetime) -> int:
    return int(moment.timestamp())


def _instant(seconds: int) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(int(seconds), UTC)


_ROW_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)  # built once, not per call


def _pack(data: dict) -> bytes:
    return zlib.compress(_ROW_JSON.encode(data).encode("utf-8"), 6)


def _from_dict(data, origin: str, engine_version: str | None = None) -> Snapshot:
    from .snapshot import snapshot_from_dict  # typed (the engines imported) only when a document is read
    return snapshot_from_dict(data, origin, engine_version)


def _json(value) -> str:
    return _ROW_JSON.encode(value)


def _unpack(blob) -> dict:
    return json.loads(zlib.decompress(bytes(blob)).decode("utf-8"))


@dataclass(frozen=True)
class DbRecord(SnapshotRecord):
    """One snapshot row, known from its index columns (the document is read by `read`)."""

    id: int = 0
    store: Any = field(default=None, compare=False, repr=False, hash=False)

    def document(self) -> dict:
        return self.store._document(self)

    def read(self, engine_version: str | None = None) -> Snapshot:
        return _from_dict(self.document(), str(self.path), engine_version)

    def content_hash(self) -> str:
        return snapshot_hash(self.document())

    def state_hash(self) -> str:
        return state_hash(self.document())


class KeptRow(NamedTuple):
    """A snapshot row's index columns, for history read from kept changes (no path, no document)."""

    id: int
    name: str
    at: int  # collected_at, epoch seconds
    seq: int
    changes_from: int | None

    @property
    def stamp(self) -> str:
        return epoch_stamp(self.at)

    def follows(self, before: KeptRow) -> bool:
        """Whether this row's kept changes were computed against `before` (the pair is current)."""
        return self.changes_from is not None and int(self.changes_from) == before.id


class UnitRows:
    """One host/unit as `kept_histories` reads it: the answer's rows (`rows[start:]` are the rows the
    answer shows, each with the row before it), its kept changes and run counts (of those rows).
    A plain class: a dataclass costs a millisecond to create at every start."""

    __slots__ = ("count", "first", "rows", "start", "kept", "stats", "runs", "last_run")

    def __init__(self, count: int):
        self.count = count
        self.first: KeptRow | None = None
        self.rows: list[KeptRow] = []
        self.start = 1
        self.kept: dict[int, list[dict]] = {}  # row id -> its kept changes, in order
        self.stats: dict[int, tuple[int, int]] = {}  # row id -> (unchanged runs, the last one's time)
        self.runs = 0  # the unit's unchanged runs, all rows
        self.last_run: int | None = None

    def pairs(self) -> list[tuple[KeptRow, KeptRow, list[dict]]] | None:
        """(older, newer, changes) for the rows the answer shows; None when a pair's changes were not
        kept for exactly that pair."""
        out = []
        for i in range(self.start, len(self.rows)):
            old, new = self.rows[i - 1], self.rows[i]
            if not new.follows(old):
                return None
            out.append((old, new, self.kept.get(new.id, [])))
        return out
