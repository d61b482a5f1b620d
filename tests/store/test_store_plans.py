"""Questions bounded by their answer whatever SQLite's planner knows (issue 23 item 3): once a store has
statistics (`ANALYZE`, `PRAGMA optimize`, a DBA's `sqlite3` session), the planner may prefer walking a
whole table in id order to an index search. On a 151 000-snapshot store that turned one per-unit
statement into a scan of every row, document pages included: `history --since` went from 0.4 to 19 s.

Here a small real store gets the statistics of that fleet-sized store, and every statement the
bounded questions run (history of one host, of one unit, `--since` of the fleet, a no-op prune) is
explained by SQLite itself: none may scan `snapshots`, `runs` or `changes` in full."""
from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from driftwatch.cli import cli
from driftwatch.diff.changes import changes_between
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.store import SnapshotStore
from driftwatch.snapshots.store_sql import DB_NAME

ROOT = Path(__file__).resolve().parents[2]
U70 = ROOT / "examples" / "sglang-qwen-70toks.service"
T0 = dt.datetime(2026, 11, 1, 3, 0, tzinfo=dt.timezone.utc)

# sqlite_stat1 of benchmarks/bench_history.py's store made 10x as long (--scale-days 10): 151 000
# snapshots of 151 units, 1 000 each; `runs` empty (every day a new state), so it has no row here.
FLEET_STATS = [
    ("changes", "sqlite_autoindex_changes_1", "163080 1 1"),
    ("snapshots", "snapshots_content", "151000 10"),
    ("snapshots", "snapshots_source", "151000 14"),
    ("snapshots", "sqlite_autoindex_snapshots_1", "151000 1337 1000 1 1"),
]
# A scan of a table reads every row, documents included; a scan of a covering index reads only the
# index's small entries (listing the units of a whole-fleet question, or a prune's window over them),
# and a scan of a subquery's or CTE's rows reads what that subquery found.
TABLES = ("snapshots", "runs", "changes")
SCAN = re.compile(r"^SCAN (\w+)(?! USING COVERING INDEX)")
ALIAS = re.compile(r"\b(snapshots|runs|changes)\s+(?:AS\s+)?(?!WHERE|ON|JOIN|LEFT|GROUP|ORDER|USING|LIMIT)([A-Za-z_]\w*)",
                   re.IGNORECASE)


def _table_scanned(detail: str, sql: str) -> bool:
    """True when a plan step scans one of the store's tables in full (by its name or its alias in `sql`)."""
    m = SCAN.match(detail)
    if m is None:
        return False
    names = set(TABLES) | {alias for table, alias in ALIAS.findall(sql)}
    return m.group(1) in names


def _fill(folder: Path, keep_changes: bool) -> None:
    base = snapshot_from_unit_file(str(U70), host="gpu000")
    text = U70.read_text()
    # as `snapshot` saves (each row's changes kept), or as a v1 store or a pruned gap leaves it (not kept:
    # history computes the pairs the one-unit way, then keeps them)
    store = SnapshotStore(folder, changes=changes_between if keep_changes else None)
    for host in ("gpu000", "gpu001", "gpu002"):
        for unit in ("sglang-qwen.service", "sglang-llama.service"):
            for day in range(6):
                steps = 1 + day % 3
                changed = replace(base, host=host, unit=unit,
                                  collected_at=(T0 + dt.timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ"))
                if steps != 3:  # steps 1, 2, 3, 1, 2, 3: a new state every day
                    path = folder.parent / f"u{steps}.service"
                    path.write_text(text.replace("--speculative-num-steps 3", f"--speculative-num-steps {steps}"))
                    changed = replace(snapshot_from_unit_file(str(path), host=host), unit=unit,
                                      collected_at=changed.collected_at)
                store.save_run(changed)
    store.close()


def _with_fleet_statistics(db_file: Path) -> None:
    db = sqlite3.connect(str(db_file))
    db.execute("ANALYZE")  # creates sqlite_stat1
    db.execute("DELETE FROM sqlite_stat1")
    db.executemany("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", FLEET_STATS)
    db.commit()
    db.close()


@pytest.fixture(params=["changes kept", "changes not kept"])
def fleet_sized(request, tmp_path, monkeypatch):
    """A real SQLite store with fleet-sized statistics, and every statement run against it."""
    folder = tmp_path / "store"
    _fill(folder, keep_changes=request.param == "changes kept")
    _with_fleet_statistics(folder / DB_NAME)
    statements: list[str] = []
    real_connect = sqlite3.connect

    def traced(*args, **kw):
        conn = real_connect(*args, **kw)
        conn.set_trace_callback(statements.append)  # the statements with their values bound
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    return folder, statements, request.param == "changes kept"


def _scans(db_file: Path, statements: list[str]) -> list[tuple[str, str]]:
    db = sqlite3.connect(str(db_file))
    out = []
    for sql in statements:
        if not sql.lstrip().upper().startswith(("SELECT", "WITH", "DELETE", "UPDATE")):
            continue
        for row in db.execute("EXPLAIN QUERY PLAN " + sql):
            if _table_scanned(row[3], sql):
                out.append((row[3], sql[:160]))
    db.close()
    return out


QUESTIONS = {
    "one host": ["history", "gpu001"],
    "one unit": ["history", "gpu001", "--unit", "sglang-llama.service"],
    "since, whole fleet": ["history", "--since", (T0 + dt.timedelta(days=4)).strftime("%Y-%m-%dT%H:%M:%SZ")],
    "no-op prune": ["prune", "--keep", "1000"],
}


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_bounded_questions_search_indexes_on_a_store_with_fleet_statistics(fleet_sized, tmp_path, question):
    folder, statements, _ = fleet_sized
    (tmp_path / "no-baselines").mkdir()
    result = CliRunner().invoke(cli, [*QUESTIONS[question], "--store", str(folder), "--format", "json"]
                                if question != "no-op prune" else
                                [*QUESTIONS[question], "--store", str(folder), "--baselines-dir",
                                 str(tmp_path / "no-baselines")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    if question != "no-op prune":
        units = json.loads(result.stdout)["units"]
        assert units and all(u["snapshots"] for u in units)
        if question == "since, whole fleet":
            assert len(units) == 6
    else:
        assert "pruned 0 snapshots" in result.output
    assert statements, "no statement was traced"
    assert _scans(folder / DB_NAME, statements) == []


def test_report_since_reads_one_units_kept_changes_by_index(fleet_sized):
    """Report's "since" (one indexed query per finding key, `key_changes`) on the same store."""
    folder, statements, kept = fleet_sized
    rows, changed = SnapshotStore(folder).key_changes("gpu001", "sglang-qwen.service", ["speculative_num_steps"])
    # a new state each day; where nothing was kept, nothing is claimed (the caller walks those rows)
    assert len(rows) == 6 and len(changed["speculative_num_steps"]) == (5 if kept else 0)
    assert statements and _scans(folder / DB_NAME, statements) == []
