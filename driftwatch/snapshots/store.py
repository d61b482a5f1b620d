"""The snapshot store, opened by where it is: `SnapshotStore(location)` (or `open_store`) gives
the SQLite or PostgreSQL store (`store_sql.DatabaseStore`), or the YAML-file store of older
releases (`store_files.FileStore`, for import and export); `save_snapshot` saves into one,
`read_snapshot_file` reads a snapshot a listing named. The shared records and hashes are in
`store_records` and are re-exported here, so callers import the store from this one module.
"""
from __future__ import annotations

import datetime as _dt
import os
from abc import ABCMeta
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload, runtime_checkable

from ..errors import InputError
from .store_records import (
    DEFAULT_STORE,
    LATEST,
    MAX_PER_SECOND,
    RUNS,
    BaselineSource,
    SaveResult,
    Seen,
    SnapshotKey,
    SnapshotRecord,
    Store,
    StoreBase,
    StoredSnapshot,
    baseline_protections,
    check_prune_request,
    component_name,
    read_yaml_snapshot,
    safe_component,
    since_window,
    snapshot_hash,
    source_hash,
    state_hash,
)

if TYPE_CHECKING:
    from .snapshot import Snapshot
    from .store_files import LOCK, FileStore, is_file_store
    from .store_sql import DatabaseStore, KeptRow, UnitRows

_LAZY = {"FileStore", "LOCK", "is_file_store"}  # the YAML-file store: imported by those who use it


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import store_files
        return getattr(store_files, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_snapshot_file(path: str | os.PathLike, engine_version: str | None = None) -> Snapshot:
    """One saved snapshot, from the store or anywhere else (``--snapshot FILE``)."""
    name = os.fspath(path)
    if not os.path.lexists(name):  # a name `snapshot` printed for a database row (snapshots/names.py)
        from .names import read_stored  # lazy: names loads store_sql; `compare --snapshot FILE` needs no store
        stored = read_stored(name, engine_version)
        if stored is not None:
            return stored
    return read_yaml_snapshot(name, engine_version)


class SnapshotStore(StoreBase, metaclass=ABCMeta):
    """The snapshot store at a location: ``SnapshotStore(location, on_problem)`` opens

    - ``postgresql://USER:PASSWORD@HOST:PORT/DB`` (or ``postgres://``): PostgreSQL, shared by several
      runners (`store_sql.DatabaseStore`, psycopg 3: ``pip install 'driftwatch[postgres]'``);
    - a directory (``--store DIR``, default ``~/.local/state/driftwatch``): SQLite in ``DIR/store.db``,
      created on first use; a ``*.db`` file: that SQLite database;
    - a directory that holds a store of today's YAML files and no ``store.db``: refused with how to
      import it (``driftwatch store import DIR``); `FileStore` reads and writes that format.

    Every backend answers the same methods, the `Store` interface; records are `SnapshotRecord`s.
    Typed code opens a store with `open_store`, which says which backend it gives.
    """

    @classmethod
    def __subclasshook__(cls, other: type) -> bool:
        # every backend is a SnapshotStore (isinstance), though none imports this facade
        return True if cls is SnapshotStore and issubclass(other, StoreBase) else NotImplemented

    def __new__(cls, root: str | os.PathLike | None = None, on_problem: Callable[[str], None] | None = None,
                *args: Any, changes: Callable | None = None, **kwargs: Any) -> SnapshotStore:
        if cls is not SnapshotStore:
            return super().__new__(cls)
        return open_store(root, on_problem, changes=changes)  # type: ignore[return-value]  # a backend (hook)


@runtime_checkable
class KeptChanges(Protocol):
    """What a store that keeps each snapshot's changes as it saves answers (a database store: schema
    v2). History and report's "since" read these instead of diffing; `isinstance(store,
    KeptChanges)` says whether a store can (the YAML-file store cannot)."""

    def pair_changes(self, host: str | None, unit: str | None, since: _dt.datetime | None = None,
                     differ: Callable[[Snapshot, Snapshot], list] | None = None, engine_version: str | None = None
                     ) -> tuple[list[KeptRow], list[tuple[KeptRow, KeptRow, list[dict]]]]:
        """One host/unit's rows and, per consecutive pair, the changes kept (computed once when not)."""

    def kept_histories(self, groups: Iterable[tuple[str | None, str | None]], since: _dt.datetime | None = None
                       ) -> dict[tuple[str, str], UnitRows]:
        """History's rows for many host/units in a few statements."""

    def key_changes(self, host: str | None, unit: str | None, keys: Iterable[str]
                    ) -> tuple[list[KeptRow], dict[str, dict[int, dict]]]:
        """One host/unit's rows and, per key, the rows where it changed."""

    def stored_row(self, row: KeptRow, host: str | None, unit: str | None,
                   engine_version: str | None = None) -> StoredSnapshot:
        """One row read as `newest_first` yields it."""

    def run_stats(self, host: str | None, unit: str | None) -> dict[int, tuple[int, int]]:
        """Per snapshot row that unchanged runs saw again: (how many, the last one's time)."""


if TYPE_CHECKING:
    def _backends_are_stores(database: DatabaseStore, files: FileStore) -> tuple[Store, Store, KeptChanges]:
        """Never called: makes the type checker hold both backends to the `Store` interface, and the
        database store to `KeptChanges`."""
        return database, files, database


@overload
def open_store(location: str | os.PathLike | None = None, on_problem: Callable[[str], None] | None = None, *,
               allow_files: Literal[False] = False, changes: Callable | None = None) -> DatabaseStore: ...


@overload
def open_store(location: str | os.PathLike | None = None, on_problem: Callable[[str], None] | None = None, *,
               allow_files: bool, changes: Callable | None = None) -> DatabaseStore | FileStore: ...


def open_store(location: str | os.PathLike | None = None, on_problem: Callable[[str], None] | None = None, *,
               allow_files: bool = False, changes: Callable | None = None) -> DatabaseStore | FileStore:
    """The store at `location` (see `SnapshotStore`); `allow_files`: a YAML-file store opens as one.
    `changes` (`diff.changes.changes_between`): a database store keeps each new snapshot's changes
    from the one before it as it saves (schema v2), so history reads them instead of diffing."""
    text = os.fspath(location) if location is not None else DEFAULT_STORE
    if not text:
        text = DEFAULT_STORE
    # lazy: only the backend opened is imported (`read_snapshot_file`, for `compare --snapshot`, needs neither)
    from .store_sql import DB_NAME, DatabaseStore, is_database_url
    if is_database_url(text):
        return DatabaseStore(text, on_problem, changes)
    folder = Path(os.path.expanduser(text))
    if text.endswith(".db") or (folder / DB_NAME).exists():
        return DatabaseStore(text, on_problem, changes)
    from .store_files import FileStore, is_file_store
    if not is_file_store(folder):
        return DatabaseStore(text, on_problem, changes)
    if allow_files:
        return FileStore(folder, on_problem)
    raise InputError(f"{folder}: a snapshot store of YAML files (the format before the database); import it "
                     f"once with: driftwatch store import {folder} --store {folder}")


_OPEN: dict[str, DatabaseStore | FileStore] = {}


def save_snapshot(snapshot: Snapshot, store: str | os.PathLike | None, *, dedupe: bool = True,
                  changes: Callable | None = None) -> Path:
    """Save one snapshot in the store at `store` (None: the default); the path that holds it.
    The store is opened once per process and location (one database connection for a fleet run).
    `changes` (`diff.changes.changes_between`): keep the new snapshot's changes as it is saved."""
    key = os.fspath(store) if store else DEFAULT_STORE
    opened = _OPEN.get(key)
    if opened is None:
        opened = _OPEN[key] = open_store(store or None, changes=changes)
    elif changes is not None:
        from .store_sql import DatabaseStore  # loaded already: open_store opened this one
        if isinstance(opened, DatabaseStore) and opened.differ is None:
            opened.differ = changes
    return opened.save(snapshot, dedupe=dedupe)



__all__ = ["DEFAULT_STORE", "LATEST", "LOCK", "MAX_PER_SECOND", "RUNS", "BaselineSource", "FileStore", "SaveResult",
           "KeptChanges", "Seen", "SnapshotKey", "SnapshotRecord", "SnapshotStore", "Store", "StoreBase",
           "StoredSnapshot", "baseline_protections", "check_prune_request", "component_name", "is_file_store",
           "open_store", "read_snapshot_file", "safe_component", "save_snapshot", "since_window", "snapshot_hash",
           "source_hash", "state_hash"]
