"""Fixtures for the store tests: a real PostgreSQL server per session (see pg_server.py)."""
from __future__ import annotations

import itertools

import pg_server
import pytest

_names = itertools.count()


@pytest.fixture(scope="session")
def pg():
    server, reason = pg_server.start()
    if server is None:
        pytest.skip(reason)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg):
    """A fresh database's URL on the session's server."""
    return pg.database(f"dw{next(_names)}")


@pytest.fixture(params=["sqlite", "postgresql"])
def db_location(request, tmp_path):
    """Each database backend: a directory (SQLite, store.db in it) or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "store")
    return request.getfixturevalue("pg_url")
