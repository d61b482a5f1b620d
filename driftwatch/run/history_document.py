"""The ``driftwatch.history/v1`` document, read from the snapshot store: per host and unit, the
changes between consecutive snapshots (time, key/concept, old -> new, the file that set each side),
newest first; with a baseline, each finding's history (run/since.py).

- `history_document(store, groups, …)`: the document for (host, unit) pairs;
- `unit_history(store, host, unit, …)`: one element of its `units`, from a database store's kept
  changes when it has them, else by reading and diffing the snapshots (`diff.changes`);
- `groups_for(store, hosts, unit, pairs)`: the (host, unit) pairs a history is asked for.

``driftwatch.history/v1`` (additive changes only)::

    {"schema": "driftwatch.history/v1", "generated_at": T, "store": DIR, "since": T|null,
     "baseline": {"name", "host", "unit", "metrics"}|null, "problems": ["FILE: skipped, …"],
     "units": [{"host", "unit", "snapshots": N, "readable": N, "runs": N, "first": REF, "latest": REF,
                "last_run": T,
                "changes": [{"at": T, "snapshot": NAME, "key", "concept", "flag", "kind", "old", "new",
                             "old_source", "new_source", "secret"?, "origin": {"old", "new"}?, "note"?,
                             "previous": {"snapshot", "collected_at", "last_seen"}}],      # newest first
                "findings": [{"rank", "key", "concept", "flag", "baseline", "current", "rule", "severity",
                              "impact", "origin"?, "since": REF, "first_seen": REF, "went_away": bool,
                              "episodes": [{"from": REF, "gone_at": REF|null}], "value_since": REF?}]}]}
    REF = {"snapshot": NAME, "collected_at": T}; T = RFC 3339 UTC (2026-11-28T03:00:00Z)

A change's time is the `collected_at` of the first snapshot that shows it; the change happened
after the last run that still saw the old state (``previous.last_seen``, from the store's run log)
and at or before that time. Unreadable files are skipped with a problem naming them
(`Store.problems`), never fatal. Nothing here formats text: report/wording.py phrases what
this module records.
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from ..errors import DriftwatchError
from ..snapshots.store import KeptChanges, Store, StoredSnapshot, component_name, safe_component, since_window
from ..timestamps import epoch_stamp, format_utc, utc_now
from .since import FindingsThroughTime, baseline_findings, stored_ref

if TYPE_CHECKING:
    from ..findings.judging import Judging
    from ..report.document import BaselineRef, HistoryDoc, UnitHistoryDoc
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot
    from ..snapshots.store_sql import KeptRow

HISTORY_SCHEMA = "driftwatch.history/v1"


def _record_ref(record: KeptRow) -> dict:
    return {"snapshot": record.name, "collected_at": record.stamp}


def _kept_unit_history(store: KeptChanges, host: str | None, unit: str | None, since: _dt.datetime | None,
                       engine_version: str | None) -> dict:
    """`unit_history` from a database store's rows and kept changes (schema v2): no snapshot is
    read or typed unless a pair's changes were never kept (then they are computed once and kept)."""
    def differ(old: Snapshot, new: Snapshot) -> list[dict]:
        from ..diff.changes import changes_between  # the engines: only for a pair whose changes were never kept
        return changes_between(old, new, engine_version)

    rows, pairs = store.pair_changes(host, unit, since, differ, engine_version)
    stats = store.run_stats(host, unit)  # row id -> (unchanged runs, the last one's time)
    newest = rows[-1] if rows else None
    last_run = None
    if newest is not None:
        last_run = max([newest.at] + [s[1] for s in stats.values()])
    return _kept_entry(host, unit, pairs, stats, len(rows), rows[0] if rows else None, newest,
                       len(rows) + sum(s[0] for s in stats.values()), last_run)


def _kept_entry(host: str | None, unit: str | None, pairs: list[tuple[KeptRow, KeptRow, list[dict]]],
                stats: dict[int, tuple[int, int]], count: int, first: KeptRow | None, newest: KeptRow | None,
                runs: int, last_run: int | None) -> dict:
    """One element of `units` from kept rows: `pairs` (older, newer, changes) the answer shows,
    `stats` row id -> (unchanged runs, the last one's time) for their older rows."""
    per_pair = []
    for old, new, changes in pairs:
        previous = _record_ref(old)
        last = max(old.at, stats[old.id][1]) if old.id in stats else old.at
        previous["last_seen"] = previous["collected_at"] if last == old.at else epoch_stamp(last)
        at, name = new.stamp, new.name
        per_pair.append([{"at": at, "snapshot": name, **change, "previous": previous} for change in changes])
    return {
        "host": component_name(safe_component(host, "local")),
        "unit": component_name(safe_component(unit, "unit")),
        "snapshots": count, "readable": count,
        "runs": runs,
        "first": _record_ref(first) if first is not None else None,
        "latest": _record_ref(newest) if newest is not None else None,
        "last_run": epoch_stamp(last_run) if last_run is not None else None,
        "changes": [change for pair in reversed(per_pair) for change in pair],
    }


def _kept_batch(store: Store, groups: list[tuple[str | None, str | None]], since: _dt.datetime | None) -> dict:
    """Every unit's kept rows in a few statements (a database store of schema v2), or {}."""
    if not isinstance(store, KeptChanges) or not groups:
        return {}
    try:
        return {"units": store.kept_histories(groups, since)}
    except DriftwatchError:
        return {}  # each unit is asked again on its own, and named if it cannot be read


def _batched_entry(batch: dict, where: tuple[str, str], names: tuple[str, str]) -> dict | None:
    """A unit's history from the batch (keyed by store names, `where`), when all the pairs it shows
    were kept; else None (the unit is asked on its own: a pair never kept is computed there and
    kept). The entry is named by the host and unit themselves (`names`), never their store keys."""
    if not batch:
        return None
    got = batch["units"].get(where)
    if got is None:  # no snapshot of it: listed with zero snapshots
        return _kept_entry(names[0], names[1], [], {}, 0, None, None, 0, None)
    pairs = got.pairs()
    if pairs is None:
        return None
    newest = got.rows[-1]
    last_run = newest.at if got.last_run is None else max(newest.at, got.last_run)
    return _kept_entry(names[0], names[1], pairs, got.stats, got.count, got.first, newest, got.count + got.runs,
                       last_run)


def unit_history(store: Store, host: str | None, unit: str | None, since: _dt.datetime | None = None,
                 findings: FindingsThroughTime | None = None, engine_version: str | None = None) -> dict:
    """One host/unit's history (one element of the document's `units`): from a database store's
    kept changes when it has them (no baseline asked), else by reading and diffing the snapshots."""
    if findings is None and isinstance(store, KeptChanges):
        try:
            return _kept_unit_history(store, host, unit, since, engine_version)
        except DriftwatchError:
            pass  # a row that cannot be read: the reading path below skips it and names it
    from ..diff.changes import changes_between
    records = store.records(host or "local", unit or "unit")  # names: records() makes them store names
    if since is not None and findings is None:  # read from the snapshot before the cut, not the whole unit
        loaded = store.load(host, unit, since, engine_version=engine_version, previous=True)
        readable = len(records) - (len(since_window(records, since)) - len(loaded))  # the window `load` read
    else:
        loaded = store.load(host, unit, engine_version=engine_version)
        readable = len(loaded)
    seen = store.seen(host, unit)
    per_pair = []
    for old, new in zip(loaded, loaded[1:], strict=False):  # consecutive pairs
        if since is not None and new.collected_at < since:
            continue
        previous = stored_ref(old)
        previous["last_seen"] = format_utc(seen[old.path].last) if old.path in seen else previous["collected_at"]
        per_pair.append([{"at": new.record.stamp, "snapshot": new.record.name, **change, "previous": previous}
                         for change in changes_between(old.snapshot, new.snapshot, engine_version)])
    # newest first; the changes a snapshot brought keep the diff's order (cause first)
    changes = [change for pair in reversed(per_pair) for change in pair]
    first = loaded[0] if loaded else None
    if first is not None and since is not None and findings is None and records:
        first = StoredSnapshot(records[0], first.snapshot)  # named only (stored_ref): the oldest row
    newest = loaded[-1] if loaded else None
    entry = {
        "host": component_name(safe_component(host, "local")),
        "unit": component_name(safe_component(unit, "unit")),
        "snapshots": len(records), "readable": readable,
        "runs": sum(s.runs for s in seen.values()),
        "first": stored_ref(first), "latest": stored_ref(newest),
        "last_run": format_utc(max((s.last for s in seen.values()), default=newest.collected_at))
        if newest is not None else None,
        "changes": changes,
    }
    if findings is not None:
        entry["findings"] = baseline_findings(loaded, findings)
    return entry


def history_document(store: Store, groups: Iterable[tuple[str | None, str | None]] | None = None,
                     since: _dt.datetime | None = None, baseline: Baseline | None = None,
                     judging: Judging | None = None, *,
                     engine_version: str | None = None,
                     baseline_of: Callable[[str | None, str | None], Any] | None = None) -> HistoryDoc:
    """``driftwatch.history/v1`` for `groups` ((host, unit) pairs; None: every unit in the store).
    A pair with no snapshots is listed with zero snapshots, so a typo shows as such. Snapshots are
    read with `engine_version` (`judging.engine_version` when a judging is given); with a
    `baseline`, each finding's history is judged by `judging` (give it the rules). `baseline_of(host,
    unit)`: each unit's own baseline (its target's: the inventory's for it), instead of one for all;
    each unit's entry then names its `baseline`."""
    if groups is None:
        groups = store.groups()
    if judging is not None:
        engine_version = judging.engine_version
    if (baseline is not None or baseline_of is not None) and judging is None:
        from ..findings.judging import Judging
        judging = Judging(engine_version=engine_version)
    per_baseline: dict[int, FindingsThroughTime] = {}

    def findings_of(host: str | None, unit: str | None) -> tuple[FindingsThroughTime | None, Any]:
        base = baseline_of(host, unit) if baseline_of is not None else baseline
        if base is None:
            return None, None
        if id(base) not in per_baseline:
            per_baseline[id(base)] = FindingsThroughTime(base, judging)  # type: ignore[arg-type]  # set above
        return per_baseline[id(base)], base

    units: list[dict] = []
    seen: set[tuple[str, str]] = set()
    used: dict[str, BaselineRef] = {}  # baseline name -> its reference
    groups = list(groups)
    judged_any = baseline is not None or baseline_of is not None
    batch = _kept_batch(store, groups, since) if not judged_any and engine_version is None else {}
    for host, unit in groups:
        where = (safe_component(host, "local"), safe_component(unit, "unit"))
        if where in seen:
            continue
        seen.add(where)
        try:
            findings, base = findings_of(host, unit)
            entry = _batched_entry(batch, where, (host or "local", unit or "unit"))
            units.append(entry if entry is not None else unit_history(store, host, unit, since, findings,
                                                                       engine_version))
            if baseline_of is not None:
                ref = _baseline_ref(base)
                units[-1]["baseline"] = ref
                if base is not None and ref is not None:
                    used.setdefault(base.name, ref)
        except DriftwatchError as exc:  # one unit's trouble is named, never fatal to the others
            store.problems.append(f"{where[0]}/{where[1]}: skipped: {exc}")
    one = _baseline_ref(baseline) if baseline is not None else (next(iter(used.values())) if len(used) == 1 else None)
    doc: HistoryDoc = {
        "schema": HISTORY_SCHEMA,
        "generated_at": utc_now(),
        "store": str(store.root),
        "since": format_utc(since) if since is not None else None,
        "baseline": one,
        "units": cast("list[UnitHistoryDoc]", units),  # each unit's record: plain dicts (diff/changes.py's)
        "problems": list(store.problems),
    }
    if baseline_of is not None:
        doc["baselines"] = list(used.values())
    return doc


def _baseline_ref(baseline: Baseline | None) -> BaselineRef | None:
    if baseline is None:
        return None
    return {"name": baseline.name, "host": baseline.host, "unit": baseline.unit, "metrics": dict(baseline.metrics)}


def groups_for(store: Store, hosts: Iterable[str] = (), unit: str | None = None,
               inventory_pairs: Iterable[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The (host, unit) pairs a history is asked for: inventory pairs, named hosts (all their units
    in the store, or `unit`), or every unit in the store (filtered by `unit`)."""
    hosts, inventory_pairs = list(hosts), list(inventory_pairs)
    pairs = [(h, u) for h, u in inventory_pairs if unit is None or u == unit]
    for host in hosts:  # only that host's units are looked up: a one-host question reads one host
        units = [unit] if unit is not None else [u for _, u in store.groups(safe_component(host, "local"))]
        pairs += [(host, u) for u in units] or [(host, unit or "unit")]
    if not pairs and not hosts and not inventory_pairs:
        pairs = [(h, u) for h, u in store.groups()
                 if unit is None or safe_component(u, "unit") == safe_component(unit, "unit")]
    return pairs


__all__ = ["HISTORY_SCHEMA", "groups_for", "history_document", "unit_history"]
