"""The database store's kept changes (schema v2): what history shows between two consecutive
snapshots, computed once by the caller's `Differ` when a snapshot is saved and read back without
reading a document (`pair_changes`, `kept_histories`, `key_changes`). The store computes no diff
itself: the diff lives above it.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..errors import InputError
from .store_records import StoredSnapshot, safe_component
from .store_sql_connection import SqlConnection
from .store_sql_schema import CHUNK, DbRecord, Differ, KeptRow, UnitRows, _from_dict, _instant, _json, _unpack

if TYPE_CHECKING:  # typing a snapshot imports the engines: only where a document is read
    from .snapshot import Snapshot


class KeptChanges(SqlConnection):
    """Reading and keeping the changes between consecutive rows (the ``changes`` table)."""

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
        differ = self.differ
        if differ is None or (before is None and after is None):
            return  # saved without a differ, or the unit's first snapshot: nothing changed yet
        since_before: list = []
        until_after: list = []
        try:
            mine = _from_dict(data, "new snapshot")
            if before is not None:
                since_before = differ(self._typed(before), mine)
            if after is not None:
                until_after = differ(mine, self._typed(after))
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
                if engine_version is not None or not rows[i].follows(rows[i - 1])]
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
        for i in range(0, len(hosts), CHUNK):
            part = tuple(hosts[i:i + CHUNK])
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
                    "SELECT COUNT(r.at), MAX(r.at), s.host, s.unit FROM runs r JOIN snapshots s "
                    f"ON s.id = r.snapshot_id WHERE s.host IN ({marks}) GROUP BY s.host, s.unit", part):
                if (host, unit) in out:
                    out[(host, unit)].runs, out[(host, unit)].last_run = int(total), int(last)
        for entry in out.values():
            unit_rows = entry.rows
            entry.first = entry.first or unit_rows[0]
            start = 1
            while start < len(unit_rows) and unit_rows[start].at < cut:
                start += 1
            entry.start = start
        ids = sorted(by_id)
        for i in range(0, len(ids), CHUNK):
            id_part = tuple(ids[i:i + CHUNK])
            marks = ", ".join("?" * len(id_part))
            for sid, n, last in self._query(f"SELECT snapshot_id, COUNT(at), MAX(at) FROM runs WHERE snapshot_id IN "
                                            f"({marks}) GROUP BY snapshot_id", id_part):
                by_id[int(sid)].stats[int(sid)] = (int(n), int(last))
            for sid, body in self._query(f"SELECT snapshot_id, body FROM changes WHERE snapshot_id IN ({marks}) "
                                         f"ORDER BY snapshot_id, ord", id_part):
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
