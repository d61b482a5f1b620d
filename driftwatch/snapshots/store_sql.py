"""The snapshot store on a database: SQLite (stdlib, ``STORE/store.db``) or PostgreSQL
(``postgresql://…``, psycopg 3, the ``[postgres]`` extra). One schema for both (`SCHEMA`), versioned
in ``driftwatch_meta`` and brought up to date by `MIGRATIONS` when a store is opened.

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

Every write is one transaction: a save takes the host/unit's lock (SQLite: the database's write
lock, ``BEGIN IMMEDIATE``; PostgreSQL: an advisory transaction lock on the host/unit), reads the
newest row's state hash and inserts either a run row or a snapshot row. A killed writer loses its
own uncommitted run, nothing else. Nothing here imports sqlite3 or psycopg at module level.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple, Sequence
from urllib.parse import unquote

from ..errors import DriftwatchError, InputError
from ..timestamps import UTC, epoch_stamp, file_stamp, format_utc
from .store_records import (MAX_PER_SECOND, BaselineSource, SaveResult, Seen, SnapshotKey, SnapshotRecord, StoreBase,
                            StoredSnapshot, check_prune_request, component_name, row_hashes, safe_component,
                            snapshot_dict, snapshot_hash, stamped, state_hash)

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
_CHUNK = 500  # ids per IN (...) list
# What history shows between two consecutive snapshots of a unit: `diff.changes.changes_between`,
# given to the store by the layer that owns it (the store computes no diff itself).
Differ = Callable[["Snapshot", "Snapshot"], list]


_SECRET_PARAMS = frozenset({"password", "sslpassword", "passfile"})  # libpq settings never printed


def _url_parts(rest: str) -> tuple[str | None, str, str | None]:
    """(userinfo, host and path, query) of a URL after its ``scheme://``, by hand: the userinfo ends at
    the last ``@`` before the first ``/`` (libpq's reading) or before the first ``?`` (urlsplit's),
    whichever is later, so a ``/`` or ``?`` inside an unencoded password masks more, never less."""
    at = max(rest[:rest.find("/") if "/" in rest else len(rest)].rfind("@"), rest.partition("?")[0].rfind("@"))
    userinfo, after = (rest[:at], rest[at + 1:]) if at >= 0 else (None, rest)
    host_path, qmark, query = after.partition("?")
    return userinfo, host_path, query if qmark else None


def redact_url(url: str) -> str:
    """A database URL fit to print: the password of ``user:PASSWORD@`` and the values of
    ``password=``, ``sslpassword=`` and ``passfile=`` in the query replaced by ``***``.

    Parsed by hand (`_url_parts`), not by urlsplit, which refuses a malformed URL (an unclosed ``[``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    userinfo, host_path, query = _url_parts(rest)
    if userinfo is not None and ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    if query is not None:
        pairs = []
        for pair in query.split("&"):
            key, eq, _value = pair.partition("=")
            pairs.append(f"{key}=***" if eq and unquote(key).strip().lower() in _SECRET_PARAMS else pair)
        query = "&".join(pairs)
    return (f"{scheme}://" + (f"{userinfo}@" if userinfo is not None else "") + host_path
            + (f"?{query}" if query is not None else ""))


def _url_secrets(url: str) -> set[str]:
    """Every password the store's URL and libpq's environment may give: the userinfo's, the query's
    (password, sslpassword), PGPASSWORD, and those of the pg_service.conf service named; each as
    written and percent-decoded. Scrubbed from any message before it is printed."""
    found: set[str] = set()
    userinfo, _, query = _url_parts(url.partition("://")[2])
    if userinfo is not None and ":" in userinfo:
        found.add(userinfo.split(":", 1)[1])
    service = os.environ.get("PGSERVICE")
    for pair in query.split("&") if query else ():
        key, _, value = pair.partition("=")
        key = unquote(key).strip().lower()
        if key in ("password", "sslpassword"):
            found.add(value)
        elif key == "service":
            service = unquote(value)
    for name in ("PGPASSWORD", "PGSSLPASSWORD"):
        if os.environ.get(name):
            found.add(os.environ[name])
    if service:
        found |= _service_passwords(service)
    return {v for text in found for v in (text, unquote(text)) if v}


def _service_passwords(service: str) -> set[str]:
    """The ``password=`` of `service` in the pg_service.conf files libpq reads (unreadable: none)."""
    import configparser
    files = [os.environ.get("PGSERVICEFILE") or os.path.expanduser("~/.pg_service.conf")]
    if os.environ.get("PGSYSCONFDIR"):
        files.append(os.path.join(os.environ["PGSYSCONFDIR"], "pg_service.conf"))
    found = set()
    for path in files:
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
            for key in ("password", "sslpassword"):
                if parser.has_option(service, key):
                    found.add(parser.get(service, key).strip())
        except (OSError, UnicodeError, configparser.Error):
            continue
    return found


_SETTING = re.compile(r"\b((?:ssl)?password|passfile)(\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)
_USERINFO = re.compile(r"(postgres(?:ql)?://[^\s:/@\"']*:)[^\s\"']*@")


def scrub_message(text: str, url: str = "") -> str:
    """A database error's message fit to print: the store's URL as `redact_url` prints it, any other
    URL's password, ``password=…``-like settings and every known password (`_url_secrets`) masked.
    psycopg and libpq quote the whole connection string in some messages (a malformed URL)."""
    if url:
        text = text.replace(url, redact_url(url))
    text = _USERINFO.sub(lambda m: m.group(1) + "***@", text)
    text = _SETTING.sub(lambda m: m.group(1) + m.group(2) + "***", text)
    for secret in sorted(_url_secrets(url), key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, "***")
        else:  # a very short password: only where it stands as a word of its own
            text = re.sub(rf"(?<![\w]){re.escape(secret)}(?![\w])", "***", text)
    return text


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
            if new.changes_from is None or int(new.changes_from) != old.id:
                return None
            out.append((old, new, self.kept.get(new.id, [])))
        return out


class _Dialect:
    """What differs between SQLite and PostgreSQL: connecting, placeholders, locks, a few types."""

    name = "?"
    types = {"id": "", "blob": ""}
    greatest = "MAX"

    def connect(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def sql(self, text: str) -> str:
        return text

    def begin_write(self, cur) -> None:
        pass

    def lock_group(self, cur, host: str, unit: str) -> None:
        pass

    def errors(self) -> tuple:
        return ()


class _Sqlite(_Dialect):
    name = "sqlite"
    types = {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "blob": "BLOB"}
    greatest = "MAX"

    def __init__(self, path: Path):
        self.path = path

    def connect(self):
        import sqlite3
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"{self.path}: cannot open the snapshot store: {exc}") from None
        return conn

    def begin_write(self, cur) -> None:
        cur.execute("BEGIN IMMEDIATE")  # the database's one write lock, taken before reading

    def begin_read(self, cur) -> None:
        cur.execute("BEGIN")

    def errors(self) -> tuple:
        import sqlite3
        return (sqlite3.Error,)


class _Postgres(_Dialect):
    name = "postgresql"
    types = {"id": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "blob": "BYTEA"}
    greatest = "GREATEST"

    def __init__(self, url: str):
        self.url = url

    def connect(self):
        try:
            import psycopg
        except ImportError:
            raise InputError(f"{redact_url(self.url)}: a PostgreSQL store needs psycopg 3 "
                             f"(pip install 'driftwatch[postgres]')") from None
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except (psycopg.Error, ValueError) as exc:
            raise InputError(f"{redact_url(self.url)}: cannot open the snapshot store: {_scrub(exc, self.url)}") from None
        return conn

    def sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def begin_write(self, cur) -> None:
        cur.execute("BEGIN")

    def begin_read(self, cur) -> None:
        cur.execute("BEGIN")

    def lock_group(self, cur, host: str, unit: str) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{host}/{unit}",))

    def errors(self) -> tuple:
        import psycopg
        return (psycopg.Error,)


def _scrub(exc: BaseException, url: str) -> str:
    """An exception's first line without the URL's password (`scrub_message`)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return scrub_message(text, url)


def is_database_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


class DatabaseStore(StoreBase):
    """The snapshots in a database, with the interface of the file store (`SnapshotStore`).

    `root` is what listings print: the store's directory (SQLite) or its URL without the password.
    Record paths are names under it (``ROOT/HOST/UNIT/20261128T030000Z-00.yaml``) that identify a
    row; nothing is written there but ``store.db``."""

    indexed = True

    def __init__(self, location: str | os.PathLike, on_problem: Callable[[str], None] | None = None,
                 changes: Differ | None = None):
        if getattr(self, "dialect", None) is not None:
            return  # SnapshotStore(location) opened it: type() calls __init__ again with the same words
        self.differ = changes  # with it, every new snapshot row gets its changes from the row before
        text = os.fspath(location)
        if is_database_url(text):
            self.dialect: _Dialect = _Postgres(text)
            self.root = redact_url(text)
            self.label = Path("postgresql:") / self.root.split("://", 1)[1].split("@")[-1]
        else:
            folder = Path(os.path.expanduser(text))
            self.dialect = _Sqlite(folder / DB_NAME if not text.endswith(".db") else folder)
            self.root = folder if not text.endswith(".db") else folder.parent
            self.label = Path(self.root)
        self.on_problem = on_problem
        self.problems: list[str] = []
        self._conn = None
        self._mutex = threading.RLock()

    # ------------------------------------------------------------------ connection and schema

    def _connection(self):
        if self._conn is None:
            conn = self.dialect.connect()
            try:
                self._migrate(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _where(self) -> str:
        return str(self.dialect.path) if isinstance(self.dialect, _Sqlite) else str(self.root)

    def _fail(self, exc: BaseException, doing: str) -> InputError:
        url = getattr(self.dialect, "url", "")
        return InputError(f"{self._where()}: cannot {doing} the snapshot store: {_scrub(exc, url)}")

    def _migrate(self, conn) -> None:
        d = self.dialect
        cur = conn.cursor()
        try:  # up to date (every open but the first): one read, no write lock taken
            cur.execute(d.sql("SELECT value FROM driftwatch_meta WHERE key = ?"), ("schema_version",))
            row = cur.fetchone()
            if row is not None and int(row[0]) == SCHEMA_VERSION:
                return
        except d.errors():
            pass  # no meta table yet: created below
        try:
            d.begin_write(cur)
            d.lock_group(cur, "driftwatch", "schema")
            cur.execute("CREATE TABLE IF NOT EXISTS driftwatch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            cur.execute(d.sql("SELECT value FROM driftwatch_meta WHERE key = ?"), ("schema_version",))
            row = cur.fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                cur.execute("ROLLBACK")
                raise InputError(f"{self._where()}: the snapshot store has schema v{version}; this driftwatch "
                                 f"knows up to v{SCHEMA_VERSION} (upgrade driftwatch)")
            for number in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[number]:
                    cur.execute(statement.format(**d.types))
            if version < SCHEMA_VERSION:
                cur.execute(d.sql("DELETE FROM driftwatch_meta WHERE key = ?"), ("schema_version",))
                cur.execute(d.sql("INSERT INTO driftwatch_meta (key, value) VALUES (?, ?)"),
                            ("schema_version", str(SCHEMA_VERSION)))
            cur.execute("COMMIT")
        except InputError:
            raise
        except d.errors() as exc:
            try:
                cur.execute("ROLLBACK")
            except d.errors():
                pass
            raise self._fail(exc, "open") from None

    def schema_version(self) -> int:
        """The store's schema version (opening it creates or migrates it)."""
        with self._mutex:
            self._connection()
        rows = self._query("SELECT value FROM driftwatch_meta WHERE key = ?", ("schema_version",))
        return int(rows[0][0]) if rows else 0

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._mutex:
            if self._conn is None and isinstance(self.dialect, _Sqlite) and not self.dialect.path.exists():
                return []  # nothing saved yet: a question creates no database
            conn = self._connection()
            try:
                cur = conn.cursor()
                cur.execute(self.dialect.sql(sql), params)
                return cur.fetchall()
            except self.dialect.errors() as exc:
                raise self._fail(exc, "read") from None

    def _write(self, body: Callable, host: str | None = None, unit: str | None = None):
        """Run `body(cur)` in one write transaction (with the host/unit's lock); commit or roll back."""
        with self._mutex:
            conn = self._connection()
            d = self.dialect
            cur = conn.cursor()
            try:
                d.begin_write(cur)
                if host is not None:
                    d.lock_group(cur, host, unit)
                result = body(cur, lambda sql, params=(): cur.execute(d.sql(sql), params))
                cur.execute("COMMIT")
                return result
            except BaseException as exc:
                try:
                    cur.execute("ROLLBACK")
                except d.errors():
                    pass
                if isinstance(exc, d.errors()):
                    raise self._fail(exc, "write to") from None
                raise

    # ------------------------------------------------------------------ records

    def folder(self, host: str | None, unit: str | None) -> Path:
        return self.label / safe_component(host, "local") / safe_component(unit, "unit")

    _COLUMNS = "id, host, unit, collected_at, seq, name"

    def _record(self, row) -> DbRecord:
        rid, host, unit, at, seq, name = row
        return DbRecord(self.label / host / unit / name, host, unit, _instant(at), int(seq), id=int(rid), store=self)

    def _document(self, record: DbRecord) -> dict:
        rows = self._query("SELECT document FROM snapshots WHERE id = ?", (record.id,))
        if not rows:
            raise InputError(f"{record.path}: no longer in the store (pruned)")
        try:
            return _unpack(rows[0][0])
        except (zlib.error, ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"{record.path}: not a readable snapshot ({exc})") from None

    def groups(self, host: str | None = None) -> list[tuple[str, str]]:
        """(host, unit) names that hold snapshots (of `host`, as stored, when given: one index range);
        the names themselves (`component_name`), which `records`, `runs`, ... take back."""
        if host is not None:
            return [(component_name(h), component_name(u))
                    for h, u in self._query("SELECT DISTINCT host, unit FROM snapshots WHERE host = ? ORDER BY unit",
                                            (host,))]
        return [(component_name(h), component_name(u))
                for h, u in self._query("SELECT DISTINCT host, unit FROM snapshots ORDER BY host, unit")]

    @staticmethod
    def _filter(host: str | None, unit: str | None) -> tuple[str, tuple]:
        clauses, params = [], []
        if host is not None:
            clauses.append("host = ?")
            params.append(safe_component(host))
        if unit is not None:
            clauses.append("unit = ?")
            params.append(safe_component(unit, "unit"))
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", tuple(params)

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
                           "WHERE s.host = ? AND s.unit = ? GROUP BY s.id, s.host, s.unit, s.collected_at, s.seq, s.name",
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

    def _diff_neighbours(self, cur, run, h: str, u: str, rid: int, at: int, seq: int, data: dict) -> None:
        """In the saving transaction: the new row's changes from the row before it, and (saved out
        of order) the next row's changes from the new one. A neighbour that cannot be read leaves
        its pair uncomputed (`pair_changes` says so when asked)."""
        where = "host = ? AND unit = ? AND "
        run(f"SELECT id, document FROM snapshots WHERE {where}(collected_at < ? OR (collected_at = ? AND seq < ?)) "
            "ORDER BY collected_at DESC, seq DESC LIMIT 1", (h, u, at, at, seq))
        before = cur.fetchone()
        run(f"SELECT id, document FROM snapshots WHERE {where}(collected_at > ? OR (collected_at = ? AND seq > ?)) "
            "ORDER BY collected_at, seq LIMIT 1", (h, u, at, at, seq))
        after = cur.fetchone()
        if before is None and after is None:
            return  # the unit's first snapshot: nothing changed yet
        try:
            mine = _from_dict(data, "new snapshot")
            since_before = None if before is None else self.differ(self._typed(before), mine)
            until_after = None if after is None else self.differ(mine, self._typed(after))
        except Exception:  # noqa: BLE001 - the snapshot is saved whatever the diff does
            return  # left uncomputed: history computes the pairs when it asks (and says why if it cannot)
        if before is not None:  # a database error here fails the save, as any other
            self._put_changes(run, rid, before[0], since_before)
        if after is not None:
            self._put_changes(run, after[0], rid, until_after)

    @staticmethod
    def _typed(row) -> Snapshot:
        return _from_dict(_unpack(row[1]), f"row {row[0]}")

    @staticmethod
    def _put_changes(run, snapshot_id: int, from_id: int, changes: Sequence[dict]) -> None:
        run("DELETE FROM changes WHERE snapshot_id = ?", (snapshot_id,))
        for number, change in enumerate(changes):
            run("INSERT INTO changes (snapshot_id, ord, key, body) VALUES (?, ?, ?, ?)",
                (snapshot_id, number, str(change.get("key")), _json(change)))
        run("UPDATE snapshots SET changes_from = ? WHERE id = ?", (from_id, snapshot_id))

    def pair_changes(self, host: str | None, unit: str | None, since: _dt.datetime | None = None,
                     differ: Differ | None = None, engine_version: str | None = None
                     ) -> tuple[list[KeptRow], list[tuple[KeptRow, KeptRow, list[dict]]]]:
        """One host/unit's rows (oldest first, as `KeptRow`s: nothing but their index columns) and,
        for each consecutive pair whose newer row was collected at or after `since`, what changed:
        read from the ``changes`` table where they were kept for exactly that pair (no document is
        read), else computed by `differ` from the two documents and kept for the next question (a
        pair is stale when a row between them was pruned, or the rows were saved without a differ
        or by schema v1). With `engine_version` every pair is computed under that catalog and
        nothing is kept. InputError when a pair must be computed and no differ is given or a
        document cannot be read."""
        h, u = safe_component(host, "local"), safe_component(unit, "unit")
        rows = [KeptRow(int(r[0]), r[1], int(r[2]), int(r[3]), r[4]) for r in self._query(
            "SELECT id, name, collected_at, seq, changes_from FROM snapshots WHERE host = ? AND unit = ? "
            "ORDER BY collected_at, seq", (h, u))]
        start = 1
        if since is not None:
            cut = since.timestamp()
            while start < len(rows) and rows[start].at < cut:
                start += 1
        if start >= len(rows):
            return rows, []
        kept: dict[int, list[dict]] = {}
        if engine_version is None:
            first = rows[start]
            for sid, body in self._query(
                    "SELECT c.snapshot_id, c.body FROM changes c JOIN snapshots s ON s.id = c.snapshot_id "
                    "WHERE s.host = ? AND s.unit = ? AND (s.collected_at > ? OR (s.collected_at = ? AND s.seq >= ?)) "
                    "ORDER BY c.snapshot_id, c.ord", (h, u, first.at, first.at, first.seq)):
                kept.setdefault(int(sid), []).append(json.loads(body))
        todo = [i for i in range(start, len(rows))
                if engine_version is not None or rows[i].changes_from is None
                or int(rows[i].changes_from) != rows[i - 1].id]
        computed: dict[int, list[dict]] = {}
        if todo:
            if differ is None:
                raise InputError(f"{self.folder(host, unit)}: changes not kept for {len(todo)} snapshot pairs")
            typed = self._snapshots({rows[i].id for i in todo} | {rows[i - 1].id for i in todo}, engine_version)
            for i in todo:
                old, new = rows[i - 1], rows[i]
                computed[new.id] = json.loads(_json(differ(typed[old.id], typed[new.id])))
            if engine_version is None:
                self._keep_changes([(rows[i].id, rows[i - 1].id, computed[rows[i].id]) for i in todo])
        pairs = [(rows[i - 1], rows[i], computed[rows[i].id] if rows[i].id in computed
                  else kept.get(rows[i].id, [])) for i in range(start, len(rows))]
        return rows, pairs

    def kept_histories(self, groups: Iterable[tuple[str | None, str | None]], since: _dt.datetime | None = None
                       ) -> dict[tuple[str, str], UnitRows]:
        """History's rows for many host/units in a few statements (not three per unit): per (host, unit)
        that holds snapshots, its row count and first row, its rows from the one before `since` on
        (all of them without `since`), their kept changes and the unit's unchanged runs. Only the
        rows the answer shows are read (an index range per unit); no document. A pair whose changes
        were not kept for it has `changes` None: the caller asks `pair_changes`, which computes it."""
        wanted = {(safe_component(h, "local"), safe_component(u, "unit")) for h, u in groups}
        hosts = sorted({h for h, _ in wanted})
        if not hosts:
            return {}
        cut = -(2 ** 62) if since is None else math.ceil(since.timestamp())  # rows before it: at < cut
        out: dict[tuple[str, str], UnitRows] = {}
        by_id: dict[int, UnitRows] = {}
        for i in range(0, len(hosts), _CHUNK):
            part = tuple(hosts[i:i + _CHUNK])
            marks = ", ".join("?" * len(part))
            # per unit: the last instant before the cut (NULL: none), the first instant, the count
            bounds = (f"SELECT host, unit, MAX(CASE WHEN collected_at < ? THEN collected_at END) AS cut, "
                      f"MIN(collected_at) AS lo, COUNT(*) AS n FROM snapshots WHERE host IN ({marks}) "
                      f"GROUP BY host, unit")
            rows = self._query(
                f"WITH b AS ({bounds}) "
                "SELECT s.id, s.host, s.unit, s.name, s.collected_at, s.seq, s.changes_from, b.n, 0 AS part "
                "FROM b JOIN snapshots s ON s.host = b.host AND s.unit = b.unit "
                "AND s.collected_at >= COALESCE(b.cut, b.lo) "
                "UNION ALL "
                "SELECT s.id, s.host, s.unit, s.name, s.collected_at, s.seq, s.changes_from, b.n, 1 AS part "
                "FROM b JOIN snapshots s ON s.host = b.host AND s.unit = b.unit AND s.collected_at = b.lo "
                "WHERE b.cut IS NOT NULL AND b.cut > b.lo "
                "ORDER BY 2, 3, 9 DESC, 5, 6", (cut,) + part)
            for rid, host, unit, name, at, seq, changes_from, n, first in rows:
                if (host, unit) not in wanted:
                    continue
                entry = out.get((host, unit))
                if entry is None:
                    entry = out[(host, unit)] = UnitRows(int(n))
                row = KeptRow(int(rid), name, int(at), int(seq), changes_from)
                if first:
                    if entry.first is None:
                        entry.first = row
                    continue
                entry.rows.append(row)
                by_id[row.id] = entry
            for total, last, host, unit in self._query(
                    f"SELECT COUNT(r.at), MAX(r.at), s.host, s.unit FROM runs r JOIN snapshots s ON s.id = r.snapshot_id "
                    f"WHERE s.host IN ({marks}) GROUP BY s.host, s.unit", part):
                if (host, unit) in out:
                    out[(host, unit)].runs, out[(host, unit)].last_run = int(total), int(last)
        for entry in out.values():
            rows = entry.rows
            entry.first = entry.first or rows[0]
            start = 1
            while start < len(rows) and rows[start].at < cut:
                start += 1
            entry.start = start
        ids = sorted(by_id)
        for i in range(0, len(ids), _CHUNK):
            part = tuple(ids[i:i + _CHUNK])
            marks = ", ".join("?" * len(part))
            for sid, n, last in self._query(f"SELECT snapshot_id, COUNT(at), MAX(at) FROM runs WHERE snapshot_id IN "
                                            f"({marks}) GROUP BY snapshot_id", part):
                by_id[int(sid)].stats[int(sid)] = (int(n), int(last))
            for sid, body in self._query(f"SELECT snapshot_id, body FROM changes WHERE snapshot_id IN ({marks}) "
                                         f"ORDER BY snapshot_id, ord", part):
                by_id[int(sid)].kept.setdefault(int(sid), []).append(json.loads(body))
        return out

    def key_changes(self, host: str | None, unit: str | None, keys: Iterable[str]
                    ) -> tuple[list[KeptRow], dict[str, dict[int, dict]]]:
        """For report's "since": one host/unit's rows (index columns, oldest first) and, per key, the
        kept change of that key each row brought (row id -> change record), one indexed query per
        key; no document is read. A row whose pair is not current (`changes_from` is not the row
        before it) has no trustworthy record: the caller judges it."""
        h, u = safe_component(host, "local"), safe_component(unit, "unit")
        rows = [KeptRow(int(r[0]), r[1], int(r[2]), int(r[3]), r[4]) for r in self._query(
            "SELECT id, name, collected_at, seq, changes_from FROM snapshots WHERE host = ? AND unit = ? "
            "ORDER BY collected_at, seq", (h, u))]
        changed: dict[str, dict[int, dict]] = {}
        for key in dict.fromkeys(keys):
            changed[key] = {int(sid): json.loads(body) for sid, body in self._query(
                "SELECT c.snapshot_id, c.body FROM changes c JOIN snapshots s ON s.id = c.snapshot_id "
                "WHERE s.host = ? AND s.unit = ? AND c.key = ?", (h, u, key))}
        return rows, changed

    def stored_row(self, row: KeptRow, host: str | None, unit: str | None,
                   engine_version: str | None = None) -> StoredSnapshot:
        """One row as `newest_first` yields it (same record and path); InputError when unreadable."""
        h, u = safe_component(host, "local"), safe_component(unit, "unit")
        record = DbRecord(self.label / h / u / row.name, h, u, _instant(row.at), int(row.seq), id=row.id, store=self)
        return StoredSnapshot(record, self._snapshots({row.id}, engine_version)[row.id])

    def run_stats(self, host: str | None, unit: str | None) -> dict[int, tuple[int, int]]:
        """Per snapshot row of a host/unit that unchanged runs saw again: (how many, the last one's
        time in epoch seconds); `seen` without building a record per row."""
        # Driven from the unit's index entries: with statistics, SQLite would rather walk every
        # snapshot row in id order (documents and all) than search the index (tests/store/test_store_plans.py).
        rows = self._query("SELECT snapshot_id, COUNT(at), MAX(at) FROM runs WHERE snapshot_id IN "
                           "(SELECT id FROM snapshots WHERE host = ? AND unit = ?) GROUP BY snapshot_id",
                           (safe_component(host, "local"), safe_component(unit, "unit")))
        return {int(i): (int(n), int(last)) for i, n, last in rows}

    def _snapshots(self, ids: set[int], engine_version: str | None) -> dict[int, Snapshot]:
        """The documents of rows `ids`, typed (InputError naming the first that cannot be read)."""
        out: dict[int, Snapshot] = {}
        wanted = sorted(ids)
        for i in range(0, len(wanted), _CHUNK):
            part = wanted[i:i + _CHUNK]
            for row in self._query(f"SELECT {self._COLUMNS}, document FROM snapshots WHERE id IN "
                                   f"({', '.join('?' * len(part))})", tuple(part)):
                record = self._record(row[:6])
                try:
                    out[record.id] = _from_dict(_unpack(row[6]), str(record.path), engine_version)
                except (zlib.error, ValueError, UnicodeDecodeError) as exc:
                    raise InputError(f"{record.path}: not a readable snapshot ({exc})") from None
        missing = set(wanted) - set(out)
        if missing:
            raise InputError(f"{self.label}: snapshot rows {sorted(missing)[:3]} no longer in the store (pruned)")
        return out

    def _keep_changes(self, computed: list[tuple[int, int, list[dict]]]) -> None:
        """Keep computed changes (a row pruned meanwhile keeps nothing); a store this process cannot
        write to (read-only file, a read-only database role) just keeps nothing."""
        def body(cur, run):
            for snapshot_id, from_id, changes in computed:
                run("SELECT 1 FROM snapshots WHERE id = ?", (snapshot_id,))
                if cur.fetchone() is not None:
                    self._put_changes(run, snapshot_id, from_id, changes)
        host_unit = self._group_of(computed[0][0])
        if host_unit is None:
            return
        try:
            self._write(body, *host_unit)
        except InputError:
            pass

    def _group_of(self, snapshot_id: int) -> tuple[str, str] | None:
        rows = self._query("SELECT host, unit FROM snapshots WHERE id = ?", (snapshot_id,))
        return (rows[0][0], rows[0][1]) if rows else None

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

    # ------------------------------------------------------------------ retention

    def prune(self, keep: int | None = None, older_than: _dt.timedelta | None = None,
              protected: Iterable = (), *, host: str | None = None, unit: str | None = None,
              now: _dt.datetime | None = None, dry_run: bool = False) -> list[SnapshotRecord]:
        """As the file store's `prune`: one query finds the rows outside the newest `keep` whose
        state was last seen before the cut-off (the newest of each host/unit never), protections are
        checked against those candidates only, and one DELETE removes them (their runs go with them).
        With `older_than`, runs older than the cut-off go too, but the newest of each snapshot."""
        check_prune_request(keep, older_than)
        cutoff = None if older_than is None else _epoch((now or _dt.datetime.now(UTC)) - older_than)
        hashes, paths, keys, sources = set(), set(), set(), []
        for item in protected:
            if isinstance(item, BaselineSource):
                sources.append(item)
            elif isinstance(item, SnapshotKey):
                keys.add((safe_component(item.host, "local"), safe_component(item.unit, "unit"),
                          _epoch(item.collected_at)))
            else:
                text = os.fspath(item)
                (hashes if isinstance(text, str) and text.startswith("sha256:") else paths).add(str(text))
        where, params = self._filter(host, unit)
        last_seen = (f"{self.dialect.greatest}(s.collected_at, COALESCE((SELECT MAX(r.at) FROM runs r "
                     "WHERE r.snapshot_id = s.id), s.collected_at))")
        oldest_kept = max(keep or 1, 1)
        scoped = where.replace('host', 's.host').replace('unit', 's.unit')
        # only the host/units with more rows than are kept are ranked (an index-only count): a prune
        # that deletes nothing reads no row, and no document is carried through the ranking
        crowded = (f"(s.host, s.unit) IN (SELECT host, unit FROM snapshots{where} GROUP BY host, unit "
                   "HAVING COUNT(*) > ?)")
        sql = ("SELECT id, host, unit, collected_at, seq, name, content_hash, source_hash FROM ("
               "SELECT s.id, s.host, s.unit, s.collected_at, s.seq, s.name, s.content_hash, s.source_hash, "
               "ROW_NUMBER() OVER (PARTITION BY s.host, s.unit ORDER BY s.collected_at DESC, s.seq DESC) AS age"
               + (f", {last_seen} AS last_seen" if cutoff is not None else "")
               + f" FROM snapshots s{scoped}{' AND ' if scoped else ' WHERE '}{crowded}) t WHERE age > ?")
        params = params + params + (oldest_kept, oldest_kept)
        if cutoff is not None:
            sql += " AND last_seen < ?"
            params += (cutoff,)

        def body(cur, run):
            run(sql + " ORDER BY host, unit, collected_at, seq", params)
            candidates = cur.fetchall()
            by_source = {}
            if sources and candidates:
                digests = sorted({s.digest for s in sources})
                found = set()
                for i in range(0, len(digests), _CHUNK):
                    part = digests[i:i + _CHUNK]
                    run(f"SELECT DISTINCT source_hash FROM snapshots WHERE source_hash IN "
                        f"({', '.join('?' * len(part))})", tuple(part))
                    found |= {r[0] for r in cur.fetchall()}
                for source in sources:
                    if source.digest in found:
                        by_source[source.digest] = True
                    elif source.key is not None:
                        keys.add((safe_component(source.key.host, "local"), safe_component(source.key.unit, "unit"),
                                  _epoch(source.key.collected_at)))
            doomed = []
            for row in candidates:
                record = self._record(row[:6])
                if str(record.path) in paths or row[6] in hashes or row[7] in by_source:
                    continue
                if (record.host, record.unit, row[3]) in keys:
                    continue
                doomed.append(record)
            if not dry_run:
                ids = [r.id for r in doomed]
                for i in range(0, len(ids), _CHUNK):
                    part = ids[i:i + _CHUNK]
                    run(f"DELETE FROM snapshots WHERE id IN ({', '.join('?' * len(part))})", tuple(part))
                if cutoff is not None:
                    scope = "" if not where else (" AND snapshot_id IN (SELECT id FROM snapshots" + where + ")")
                    run("DELETE FROM runs WHERE at < ? AND at < (SELECT MAX(r2.at) FROM runs r2 "
                        "WHERE r2.snapshot_id = runs.snapshot_id)" + scope, (cutoff,) + self._filter(host, unit)[1])
            return doomed

        return self._write(body)

    # ------------------------------------------------------------------ check

    def check(self, host: str | None = None, unit: str | None = None,
              engine_version: str | None = None) -> tuple[int, list[tuple[DbRecord, str]]]:
        """Read every snapshot document (of `host`/`unit`) as a question would: (rows read, [(record,
        why it cannot be read)]). History reads kept changes and report's "since" only the rows where
        a key changed, so neither reads every document; this does, _CHUNK rows at a time."""
        where, params = self._filter(host, unit)
        bad: list[tuple[DbRecord, str]] = []
        last, count = -1, 0
        while True:
            rows = self._query(f"SELECT {self._COLUMNS}, document FROM snapshots"
                               f"{where + ' AND' if where else ' WHERE'} id > ? ORDER BY id LIMIT {_CHUNK}",
                               params + (last,))
            for row in rows:
                record = self._record(row[:6])
                count += 1
                try:
                    _from_dict(_unpack(row[6]), str(record.path), engine_version)
                except (DriftwatchError, zlib.error, ValueError, UnicodeDecodeError, TypeError) as exc:
                    bad.append((record, str(exc)))
            if len(rows) < _CHUNK:
                return count, bad
            last = int(rows[-1][0])

    # ------------------------------------------------------------------ export

    def documents(self, host: str | None = None, unit: str | None = None) -> Iterable[tuple[DbRecord, dict, list]]:
        """(record, document, unchanged-run times) for every snapshot, oldest first per host/unit."""
        for record in self.records(host, unit):
            yield record, record.document(), [_instant(r[0]) for r in self._query(
                "SELECT at FROM runs WHERE snapshot_id = ? ORDER BY at", (record.id,))]


__all__ = ["DB_NAME", "Differ", "KeptRow", "UnitRows", "MIGRATIONS", "SCHEMA_VERSION", "DatabaseStore", "DbRecord", "is_database_url", "redact_url"]
