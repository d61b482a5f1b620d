"""The names `snapshot` prints for a snapshot kept in a database store, and reading one back.

A database row is not a file, so its name must say which store holds it, in a form `show --snapshot`
and `compare --snapshot` accept and that never carries a password:

- SQLite in a directory: ``DIR/HOST/UNIT/NAME.yaml`` (``DIR/store.db`` holds it);
- SQLite in a ``*.db`` file: ``FILE.db/HOST/UNIT/NAME.yaml``;
- PostgreSQL: ``postgresql://USER@HOST:PORT/DB#HOST/UNIT/NAME.yaml`` — the store's URL without its
  password (nor ``password=``, ``sslpassword=``, ``passfile=``); reading it back, libpq finds the
  password where docs/history.md says to keep it (``~/.pgpass``, ``PGPASSWORD``, a service file).

HOST and UNIT are the store's own names (`store_records.safe_component`: never a ``/`` or ``#``).
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

from ..errors import InputError
from .store_records import DEFAULT_STORE
from .store_sql import DB_NAME, DatabaseStore, is_database_url
from .store_url import _SECRET_PARAMS, _url_parts


def url_without_password(url: str) -> str:
    """`url` with no password at all: ``user:PW@`` -> ``user@``, secret query settings dropped."""
    scheme, _, rest = url.partition("://")
    userinfo, host_path, query = _url_parts(rest)
    if userinfo is not None:
        userinfo = userinfo.split(":", 1)[0]
    if query is not None:
        kept = [p for p in query.split("&") if unquote(p.partition("=")[0]).strip().lower() not in _SECRET_PARAMS]
        query = "&".join(kept) or None
    return (f"{scheme}://" + (f"{userinfo}@" if userinfo is not None else "") + host_path
            + (f"?{query}" if query is not None else ""))


def snapshot_name(store: str | os.PathLike | None, saved: str | os.PathLike) -> str:
    """What `snapshot` prints for `saved` (the path `save_snapshot` returned) in the store at `store`."""
    location = os.fspath(store) if store else DEFAULT_STORE
    host, unit, name = Path(saved).parts[-3:]
    if is_database_url(location):
        return f"{url_without_password(location)}#{host}/{unit}/{name}"
    if location.endswith(".db"):
        return str(Path(os.path.expanduser(location)) / host / unit / name)
    return os.fspath(saved)


def _where(text: str) -> tuple[str, str, str, str] | None:
    """(store location, host, unit, name) of a name `snapshot_name` printed, or None."""
    if is_database_url(text):
        url, hash_, rest = text.rpartition("#")
        parts = rest.split("/")
        if not hash_ or len(parts) != 3 or not all(parts):
            return None
        return url, parts[0], parts[1], parts[2]
    path = Path(text)
    if len(path.parts) < 4:
        return None
    store = path.parent.parent.parent
    if (store / DB_NAME).is_file():
        return str(store), path.parent.parent.name, path.parent.name, path.name
    if store.suffix == ".db" and store.is_file():
        return str(store), path.parent.parent.name, path.parent.name, path.name
    return None


def read_stored(text: str, engine_version: str | None = None):
    """The snapshot a store name names (a `Snapshot`), or None when `text` is not such a name. A URL
    name whose row is not in its store is an InputError (there is no file to fall back on)."""
    where = _where(text)
    if where is None:
        if is_database_url(text):
            raise InputError(f"{url_without_password(text.partition('#')[0])}: not a snapshot name "
                             "(a PostgreSQL snapshot is named URL#HOST/UNIT/NAME.yaml, as `snapshot` prints it)")
        return None
    location, host, unit, name = where
    store = DatabaseStore(location)
    try:
        record = store.find(host, unit, name)
        if record is not None:
            return record.read(engine_version)
    finally:
        store.close()
    if is_database_url(location):
        raise InputError(f"{url_without_password(location)}#{host}/{unit}/{name}: no such snapshot in the store")
    return None


__all__ = ["read_stored", "snapshot_name", "url_without_password"]
