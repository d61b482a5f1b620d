"""The database store's upkeep: `prune` (retention, with what protects a snapshot) and `check`
(every document read as a question would). Apart from the questions and saves because they change
with the retention rules, not with what history asks.
"""
from __future__ import annotations

import datetime as _dt
import os
import zlib
from collections.abc import Iterable

from ..errors import DriftwatchError
from ..timestamps import UTC
from .store_records import BaselineSource, SnapshotKey, SnapshotRecord, check_prune_request, safe_component
from .store_sql_connection import SqlConnection
from .store_sql_schema import CHUNK, DbRecord, _epoch, _from_dict, _unpack


class StoreUpkeep(SqlConnection):
    """Retention and the store check."""

    def prune(self, keep: int | None = None, older_than: _dt.timedelta | None = None,
              protected: Iterable = (), *, host: str | None = None, unit: str | None = None,
              now: _dt.datetime | None = None, dry_run: bool = False) -> list[SnapshotRecord]:
        """As the file store's `prune`: one query finds the rows outside the newest `keep` whose
        state was last seen before the cut-off (the newest of each host/unit never), protections are
        checked against those candidates only, and one DELETE removes them (their runs go with them).
        With `older_than`, runs older than the cut-off go too, but the newest of each snapshot."""
        check_prune_request(keep, older_than)
        cutoff = None if older_than is None else _epoch((now or _dt.datetime.now(UTC)) - older_than)
        hashes: set[str] = set()
        paths: set[str] = set()
        keys: set[tuple[str, str, int]] = set()
        sources: list[BaselineSource] = []
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
                for i in range(0, len(digests), CHUNK):
                    part = digests[i:i + CHUNK]
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
                for i in range(0, len(ids), CHUNK):
                    gone = ids[i:i + CHUNK]
                    run(f"DELETE FROM snapshots WHERE id IN ({', '.join('?' * len(gone))})", tuple(gone))
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
        a key changed, so neither reads every document; this does, CHUNK rows at a time."""
        where, params = self._filter(host, unit)
        bad: list[tuple[DbRecord, str]] = []
        last, count = -1, 0
        while True:
            rows = self._query(f"SELECT {self._COLUMNS}, document FROM snapshots"
                               f"{where + ' AND' if where else ' WHERE'} id > ? ORDER BY id LIMIT {CHUNK}",
                               params + (last,))
            for row in rows:
                record = self._record(row[:6])
                count += 1
                try:
                    _from_dict(_unpack(row[6]), str(record.path), engine_version)
                except (DriftwatchError, zlib.error, ValueError, UnicodeDecodeError, TypeError) as exc:
                    bad.append((record, str(exc)))
            if len(rows) < CHUNK:
                return count, bad
            last = int(rows[-1][0])
