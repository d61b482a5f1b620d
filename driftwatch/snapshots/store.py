"""The snapshot store, opened by where it is: `SnapshotStore(location)` (or `open_store`) gives
the SQLite or PostgreSQL store (`store_sql.DatabaseStore`), or the YAML-file store of older
releases (`store_files.FileStore`, for import and export); `save_snapshot` saves into one,
`read_snapshot_file` reads a snapshot a listing named. The shared records and hashes are in
`store_records` and are re-exported here, so callers import the store from this one module.
"""
from __future__ import annotations

import os
from abc import ABCMeta
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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
    from .store_sql import DatabaseStore

_LAZY = {"FileStore", "LOCK", "is_file_store"}  # the YAML-file store: imported by those who use it


def __getattr__(name: str):
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

    Every backend answers the same methods (records, groups, latest, load, newest_first, seen, runs,
    save, save_run, prune, first_seen, since); records are `SnapshotRecord`s.
    """

    @classmethod
    def __subclasshook__(cls, other):
        # every backend is a SnapshotStore (isinstance), though none imports this facade
        return True if cls is SnapshotStore and issubclass(other, StoreBase) else NotImplemented

    def __new__(cls, root=None, on_problem=None, *args, changes=None, **kwargs):
        if cls is not SnapshotStore:
            return super().__new__(cls)
        return open_store(root, on_problem, changes=changes)


def open_store(location=None, on_problem: Callable[[str], None] | None = None, *,
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
           "Seen", "SnapshotKey", "SnapshotRecord", "SnapshotStore", "StoreBase", "StoredSnapshot",
           "baseline_protections", "check_prune_request", "component_name", "is_file_store", "open_store",
           "read_snapshot_file", "safe_component", "save_snapshot", "since_window", "snapshot_hash", "source_hash",
           "state_hash"]
