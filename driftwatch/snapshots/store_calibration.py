"""The fleet's own calibration pairs, kept in the snapshot store (issue 35 item 4).

One row per change the store's history holds with a measured throughput on both sides: the interval the
models predicted for it, the ratio measured, and the family of the change (findings/fleet.py). They live in
their own table of the store's database (SQLite or PostgreSQL), created when first written, so the snapshot
schema (store_sql.py) is not touched; a directory of YAML snapshots from an older release has no database:
import it first (`driftwatch store import`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError

TABLE = "calibration_pairs"
_CREATE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (host TEXT NOT NULL, unit TEXT NOT NULL, baseline TEXT NOT NULL, "
           "current TEXT NOT NULL, family TEXT NOT NULL, point REAL, lo REAL NOT NULL, hi REAL NOT NULL, "
           "measured REAL NOT NULL, top_key TEXT, PRIMARY KEY (host, unit, baseline, current))")
_COLUMNS = "host, unit, baseline, current, family, point, lo, hi, measured, top_key"


@dataclass(frozen=True)
class CalibrationPair:
    """One change on this fleet: what the models predicted (80 % interval, point) and what was measured."""

    host: str
    unit: str
    baseline: str  # the snapshot names (as the store lists them) of both sides
    current: str
    family: str
    lo: float
    hi: float
    measured: float
    point: float | None = None
    top_key: str | None = None  # the top finding's key (what changed)

    @property
    def covered(self) -> bool:
        return self.lo <= self.measured <= self.hi

    def row(self) -> tuple:
        return (self.host, self.unit, self.baseline, self.current, self.family, self.point, self.lo, self.hi,
                self.measured, self.top_key)


def _database(store: Any):
    if not callable(getattr(store, "_write", None)) or not callable(getattr(store, "_query", None)):
        raise InputError(f"{getattr(store, 'root', store)}: the fleet's calibration is kept in a database store; "
                         "this one holds YAML files of an older release (import it: driftwatch store import)")
    return store


def save_pairs(store: Any, pairs: list[CalibrationPair]) -> int:
    """Insert or replace the pairs (one per host, unit and snapshot pair); the number written."""
    db = _database(store)

    def body(cur, run):
        run(_CREATE)
        for p in pairs:
            run(f"DELETE FROM {TABLE} WHERE host = ? AND unit = ? AND baseline = ? AND current = ?",
                (p.host, p.unit, p.baseline, p.current))
            run(f"INSERT INTO {TABLE} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", p.row())
        return len(pairs)

    return int(db._write(body))


def load_pairs(store: Any) -> list[CalibrationPair]:
    """Every pair the store keeps (none before the first `driftwatch calibration`)."""
    db = _database(store)
    path = getattr(getattr(db, "dialect", None), "path", None)
    if path is not None and not path.exists():
        return []  # nothing saved yet: a question creates no database
    db._write(lambda cur, run: run(_CREATE))  # a store that never kept one answers "none", not an error
    rows = db._query(f"SELECT {_COLUMNS} FROM {TABLE} ORDER BY family, host, unit, current")
    return [CalibrationPair(host=r[0], unit=r[1], baseline=r[2], current=r[3], family=r[4], point=r[5],
                            lo=float(r[6]), hi=float(r[7]), measured=float(r[8]), top_key=r[9]) for r in rows]
