"""The history view, read from the snapshot store: what changed and when, and since when each
finding has been there.

- `store_history(…)`: the `driftwatch history` use case, from what the user named to the document.
- `history_document(store, groups, …)` -> ``driftwatch.history/v1``: per host and unit, the changes
  between consecutive snapshots (time, key/concept, old -> new, the file that set each side),
  newest first; with a baseline, for each finding of the newest snapshot the first snapshot in
  which it appeared, the snapshot that began its current unbroken run ("since") and whether it
  ever went away.
- `annotate_since(report, store, baseline, judging)`: the same "since" for every finding of a fleet
  report (``driftwatch.report/v1``), walking back from the newest snapshot only as far as needed.
- `parse_when` / `parse_duration`: ``--since 7d`` / ``2026-11-28T03:00:00Z``, ``--older-than 30d``.

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
and at or before that time. Findings are identified as everywhere (`identity.finding_id`: host,
unit, key). Unreadable files are skipped with a problem naming them (`SnapshotStore.problems`),
never fatal. Nothing here formats text: report/wording.py phrases what this module records.
"""
from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import DriftwatchError, InputError
from ..identity import finding_id
from ..snapshots.store import SnapshotStore, StoredSnapshot, component_name, safe_component, since_window
from ..timestamps import UTC, epoch_stamp, format_utc, parse_utc, utc_now

if TYPE_CHECKING:  # a history read from kept changes types no snapshot: the engines stay unimported
    from ..engines.files import EngineFiles
    from ..findings.judging import Judging
    from ..snapshots.snapshot import Snapshot
    from .fleet import JudgingOptions
    from .targets import TargetRequest
    from .voice import Voice

HISTORY_SCHEMA = "driftwatch.history/v1"
# Differences that describe one side's own state (disk vs loaded vs running), not a change between
# two snapshots: compared as states (appeared / resolved) instead.
_STATE_KEYS = ("process.argv", "systemd.loaded")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^(?:(\d+)\s*([smhdw])\s*)+$", re.I)
_PART = re.compile(r"(\d+)\s*([smhdw])", re.I)


# --------------------------------------------------------------------------- times


def parse_duration(text: str, option: str = "--older-than") -> _dt.timedelta:
    """``90s``, ``30m``, ``12h``, ``7d``, ``2w`` or a sum like ``1d12h``."""
    value = str(text or "").strip()
    if not _DURATION.match(value):
        raise InputError(f"{option} {text!r}: not a duration (say e.g. 30m, 12h, 7d, 2w or 1d12h)")
    seconds = sum(int(n) * _UNITS[u.lower()] for n, u in _PART.findall(value))
    try:
        return _dt.timedelta(seconds=seconds)
    except OverflowError:
        raise InputError(f"{option} {text!r}: too long") from None


def parse_when(text: str, now: _dt.datetime | None = None, option: str = "--since") -> _dt.datetime:
    """An instant: RFC 3339 with a zone (``2026-11-28T03:00:00Z``), or a duration back from now (``7d``)."""
    value = str(text or "").strip()
    if _DURATION.match(value):
        try:
            return (now or _dt.datetime.now(UTC)) - parse_duration(value, option)
        except OverflowError:
            raise InputError(f"{option} {text!r}: too long ago") from None
    try:
        return parse_utc(value)
    except ValueError as exc:
        raise InputError(f"{option} {text!r}: give an RFC 3339 time with its zone (2026-11-28T03:00:00Z) "
                         f"or a duration back from now (7d, 12h) ({exc})") from None


# --------------------------------------------------------------------------- changes between two snapshots


def _value(value: Any) -> Any:
    if isinstance(value, str):
        from ..redact import mask_fingerprints
        return mask_fingerprints(value)
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


_STATE_MEMO: dict[int, tuple] = {}  # id(snapshot) -> (snapshot, engine_version, diffs): each is read once per pair it is in


def _state_diffs(snap: Snapshot, engine_version: str | None) -> dict[str, Any]:
    """One snapshot's own disk-vs-loaded-vs-running findings, by key (remembered for the snapshot
    object: consecutive pairs share one side)."""
    hit = _STATE_MEMO.get(id(snap))
    if hit is not None and hit[0] is snap and hit[1] == engine_version:
        return hit[2]
    from ..diff import diff_snapshots, read_pair
    pair = read_pair(snap, snap, engine_version)
    out = {d.key: d for d in diff_snapshots(snap, snap, pair) if d.key in _STATE_KEYS}
    if len(_STATE_MEMO) >= 8:
        _STATE_MEMO.clear()
    _STATE_MEMO[id(snap)] = (snap, engine_version, out)
    return out


def _change_from_difference(d) -> dict:
    from ..report import wording
    old, new = d.baseline, d.current
    if d.secret:
        old = None if old is None else wording.REDACTED
        new = None if new is None else wording.CHANGED_REDACTED
    change = {"key": d.key, "concept": d.concept, "flag": d.label, "kind": d.kind,
              "old": _value(old), "new": _value(new),
              "old_source": d.baseline_source, "new_source": d.current_source}
    if d.secret:
        change["secret"] = True
    if (d.details or {}).get("fingerprints") == "unknown" and new is not None:
        # snapshots fingerprinted under different keys (or an older release): not known to have changed
        change["new"] = wording.UNKNOWN_REDACTED
        from ..redact import UNKNOWN_FINGERPRINT
        change["note"] = UNKNOWN_FINGERPRINT
    if d.origin:
        change["origin"] = {"old": d.origin.get("baseline"), "new": d.origin.get("current")}
    return change


def changes_between(old: Snapshot, new: Snapshot, engine_version: str | None = None) -> list[dict]:
    """What changed from `old` to `new` (both of one host/unit), as history change records."""
    from ..diff import diff_snapshots, read_pair
    pair = read_pair(old, new, engine_version)
    out = [_change_from_difference(d) for d in diff_snapshots(old, new, pair) if d.key not in _STATE_KEYS]
    before, after = _state_diffs(old, engine_version), _state_diffs(new, engine_version)
    for key in _STATE_KEYS:
        if (key in before) == (key in after):
            continue
        d = after.get(key) or before[key]
        out.append({"key": key, "concept": None, "flag": d.label, "kind": "added" if key in after else "removed",
                    "old": "yes" if key in before else "no", "new": "yes" if key in after else "no",
                    "old_source": None, "new_source": None,
                    "note": _value(" ".join(d.notes)) if d.notes else None})
    pid_old, pid_new = old.runtime.get("main_pid"), new.runtime.get("main_pid")
    if pid_old not in (None, 0, "0") and pid_new not in (None, 0, "0") and pid_old != pid_new:
        out.append({"key": "process.main_pid", "concept": None, "flag": "main process (restarted)",
                    "kind": "changed", "old": pid_old, "new": pid_new, "old_source": None, "new_source": None})
    return out


def _ref(stored: StoredSnapshot | None) -> dict | None:
    if stored is None:
        return None
    return {"snapshot": stored.record.name, "collected_at": stored.record.stamp}


# --------------------------------------------------------------------------- findings through time


class _Findings:
    """The baseline judged against each stored snapshot, computed once each: key -> finding dict."""

    def __init__(self, baseline, judging: Judging):
        self.baseline = baseline
        self.judging = judging
        self._cache: dict[str, dict[str, dict]] = {}

    def of(self, stored: StoredSnapshot) -> dict[str, dict]:
        key = str(stored.path)
        if key not in self._cache:
            from ..report.data import finding_to_dict
            result = self.judging.compare(self.baseline, stored.snapshot)
            self._cache[key] = {f.key: finding_to_dict(f) for f in result.findings}
        return self._cache[key]


def _finding_history(key: str, present: list[bool], values: list[Any], loaded: list[StoredSnapshot]) -> dict:
    """first seen, since (start of the run that ends with the newest), episodes, went away."""
    episodes, start = [], None
    for i, here in enumerate(present + [False]):
        if here and start is None:
            start = i
        elif not here and start is not None:
            episodes.append((start, i))  # present in [start, i); gone at i (len: still present)
            start = None
    first, (since, _) = episodes[0][0], episodes[-1]
    value_since = since
    while value_since + 1 < len(loaded) and values[value_since] != values[-1]:
        value_since += 1
    out = {"since": _ref(loaded[since]), "first_seen": _ref(loaded[first]), "went_away": len(episodes) > 1,
           "episodes": [{"from": _ref(loaded[a]), "gone_at": _ref(loaded[b]) if b < len(loaded) else None}
                        for a, b in episodes]}
    if value_since != since:
        out["value_since"] = _ref(loaded[value_since])  # the current value itself, when it came later
    return out


def _baseline_findings(loaded: list[StoredSnapshot], findings: _Findings) -> list[dict]:
    if not loaded:
        return []
    per = [findings.of(s) for s in loaded]
    out = []
    for f in sorted(per[-1].values(), key=lambda f: f.get("rank") or 0):
        present = [f["key"] in p for p in per]
        values = [p[f["key"]].get("current") if f["key"] in p else None for p in per]
        entry = {k: f.get(k) for k in ("rank", "key", "concept", "flag", "baseline", "current",
                                       "baseline_source", "current_source", "rule", "severity", "impact")}
        if f.get("secret"):
            entry["secret"] = True
        if f.get("origin"):
            entry["origin"] = f["origin"]
        entry.update(_finding_history(f["key"], present, values, loaded))
        out.append(entry)
    return out


# --------------------------------------------------------------------------- the document


def _record_ref(record) -> dict:
    return {"snapshot": record.name, "collected_at": record.stamp}


def _kept_unit_history(store, host: str | None, unit: str | None, since: _dt.datetime | None,
                       engine_version: str | None) -> dict:
    """`unit_history` from a database store's rows and kept changes (schema v2): no snapshot is
    read or typed unless a pair's changes were never kept (then they are computed once and kept)."""
    differ = changes_between if engine_version is None else (
        lambda old, new: changes_between(old, new, engine_version))
    rows, pairs = store.pair_changes(host, unit, since, differ, engine_version)
    stats = store.run_stats(host, unit)  # row id -> (unchanged runs, the last one's time)
    newest = rows[-1] if rows else None
    last_run = None
    if newest is not None:
        last_run = max([newest.at] + [s[1] for s in stats.values()])
    return _kept_entry(host, unit, pairs, stats, len(rows), rows[0] if rows else None, newest,
                       len(rows) + sum(s[0] for s in stats.values()), last_run)


def _kept_entry(host, unit, pairs, stats: dict[int, tuple[int, int]], count: int, first, newest, runs: int,
                last_run: int | None) -> dict:
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


def _kept_batch(store, groups: list, since: _dt.datetime | None) -> dict:
    """Every unit's kept rows in a few statements (a database store of schema v2), or {}."""
    if not hasattr(store, "kept_histories") or not groups:
        return {}
    try:
        return {"units": store.kept_histories(groups, since)}
    except DriftwatchError:
        return {}  # each unit is asked again on its own, and named if it cannot be read


def _batched_entry(batch: dict, where: tuple[str, str]) -> dict | None:
    """A unit's history from the batch, when all the pairs it shows were kept; else None (the unit
    is asked on its own: a pair never kept is computed there and kept)."""
    if not batch:
        return None
    got = batch["units"].get(where)
    if got is None:  # no snapshot of it: listed with zero snapshots
        return _kept_entry(where[0], where[1], [], {}, 0, None, None, 0, None)
    pairs = got.pairs()
    if pairs is None:
        return None
    newest = got.rows[-1]
    last_run = newest.at if got.last_run is None else max(newest.at, got.last_run)
    return _kept_entry(where[0], where[1], pairs, got.stats, got.count, got.first, newest, got.count + got.runs,
                       last_run)


def unit_history(store: SnapshotStore, host: str | None, unit: str | None, since: _dt.datetime | None = None,
                 findings: _Findings | None = None, engine_version: str | None = None) -> dict:
    """One host/unit's history (one element of the document's `units`): from a database store's
    kept changes when it has them (no baseline asked), else by reading and diffing the snapshots."""
    if findings is None and hasattr(store, "pair_changes"):
        try:
            return _kept_unit_history(store, host, unit, since, engine_version)
        except DriftwatchError:
            pass  # a row that cannot be read: the reading path below skips it and names it
    records = store.records(host or "local", unit or "unit")  # names: records() makes them store names
    if since is not None and findings is None:  # read from the snapshot before the cut, not the whole unit
        loaded = store.load(host, unit, since, engine_version=engine_version, previous=True)
        readable = len(records) - (len(since_window(records, since)) - len(loaded))  # the window `load` read
    else:
        loaded = store.load(host, unit, engine_version=engine_version)
        readable = len(loaded)
    seen = store.seen(host, unit)
    per_pair = []
    for old, new in zip(loaded, loaded[1:]):
        if since is not None and new.collected_at < since:
            continue
        previous = _ref(old)
        previous["last_seen"] = format_utc(seen[old.path].last) if old.path in seen else previous["collected_at"]
        per_pair.append([{"at": new.record.stamp, "snapshot": new.record.name, **change, "previous": previous}
                         for change in changes_between(old.snapshot, new.snapshot, engine_version)])
    # newest first; the changes a snapshot brought keep the diff's order (cause first)
    changes = [change for pair in reversed(per_pair) for change in pair]
    first = loaded[0] if loaded else None
    if first is not None and since is not None and findings is None and records:
        first = StoredSnapshot(records[0], first.snapshot)  # named only (_ref): the oldest row
    newest = loaded[-1] if loaded else None
    entry = {
        "host": component_name(safe_component(host, "local")),
        "unit": component_name(safe_component(unit, "unit")),
        "snapshots": len(records), "readable": readable,
        "runs": sum(s.runs for s in seen.values()),
        "first": _ref(first), "latest": _ref(newest),
        "last_run": format_utc(max((s.last for s in seen.values()), default=newest.collected_at))
        if newest is not None else None,
        "changes": changes,
    }
    if findings is not None:
        entry["findings"] = _baseline_findings(loaded, findings)
    return entry


def history_document(store: SnapshotStore, groups: Iterable[tuple[str | None, str | None]] | None = None,
                     since: _dt.datetime | None = None, baseline=None, judging: Judging | None = None, *,
                     engine_version: str | None = None,
                     baseline_of: Callable[[str | None, str | None], Any] | None = None) -> dict:
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
    per_baseline: dict[int, _Findings] = {}

    def findings_of(host, unit) -> tuple[_Findings | None, Any]:
        base = baseline_of(host, unit) if baseline_of is not None else baseline
        if base is None:
            return None, None
        if id(base) not in per_baseline:
            per_baseline[id(base)] = _Findings(base, judging)  # type: ignore[arg-type]  # set above
        return per_baseline[id(base)], base

    units, seen, used = [], set(), {}  # type: ignore[var-annotated]
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
            entry = _batched_entry(batch, where)
            units.append(entry if entry is not None else unit_history(store, host, unit, since, findings,
                                                                       engine_version))
            if baseline_of is not None:
                units[-1]["baseline"] = _baseline_ref(base)
                if base is not None:
                    used.setdefault(base.name, _baseline_ref(base))
        except DriftwatchError as exc:  # one unit's trouble is named, never fatal to the others
            store.problems.append(f"{where[0]}/{where[1]}: skipped: {exc}")
    one = _baseline_ref(baseline) if baseline is not None else (next(iter(used.values())) if len(used) == 1 else None)
    doc = {
        "schema": HISTORY_SCHEMA,
        "generated_at": utc_now(),
        "store": str(store.root),
        "since": format_utc(since) if since is not None else None,
        "baseline": one,
        "units": units,
        "problems": list(store.problems),
    }
    if baseline_of is not None:
        doc["baselines"] = list(used.values())
    return doc


def _baseline_ref(baseline) -> dict | None:
    if baseline is None:
        return None
    return {"name": baseline.name, "host": baseline.host, "unit": baseline.unit, "metrics": dict(baseline.metrics)}


def groups_for(store: SnapshotStore, hosts: Iterable[str] = (), unit: str | None = None,
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


# --------------------------------------------------------------------------- "since" in a fleet report


def annotate_since(report: dict, store: SnapshotStore, baseline, judging: Judging) -> dict:
    """Add `since` to every finding of a ``driftwatch.report/v1`` document, from the store: the
    first snapshot of the unbroken run, ending with the newest stored snapshot, whose comparison
    with the baseline has a finding of the same identity (host, unit, key). A finding the newest
    stored snapshot does not have is new since it: ``{"at": null, "after": <newest's time>}``.
    A unit with no snapshots gets nothing. Also sets the report's `history` (store, problems)."""
    engine_version = judging.engine_version
    findings = _Findings(baseline, judging)
    for entry in report.get("hosts") or []:
        comparison = entry.get("comparison") if isinstance(entry, dict) else None
        if not isinstance(comparison, dict) or not comparison.get("findings"):
            continue
        host = None if entry.get("file") else entry.get("host")
        wanted = {f.get("key") for f in comparison["findings"] if isinstance(f, dict)}
        kept = _since_from_changes(store, host, entry.get("unit"), wanted, findings, engine_version)
        start, newest = kept if kept is not None else _since_by_walk(store, host, entry.get("unit"), wanted,
                                                                     findings, engine_version)
        if newest is None:
            continue
        for f in comparison["findings"]:
            if not isinstance(f, dict):
                continue
            found = start.get(f.get("key"))
            f["since"] = ({"at": found.record.stamp, "snapshot": found.record.name,
                           "id": str(finding_id(entry.get("host"), entry.get("unit"), f.get("key")))}
                          if found is not None else {"at": None, "snapshot": None, "after": newest.record.stamp})
    report["history"] = {"store": str(store.root), "problems": list(store.problems)}
    return report


def _since_by_walk(store: SnapshotStore, host: str | None, unit: str | None, wanted: set,
                   findings: _Findings, engine_version: str | None
                   ) -> tuple[dict[str, StoredSnapshot], StoredSnapshot | None]:
    """Each wanted key's run start, judging every snapshot newest first until each run ends."""
    start: dict[str, StoredSnapshot] = {}
    open_keys, newest = set(wanted), None
    for stored in store.newest_first(host, unit, engine_version):
        newest = newest or stored
        try:
            keys = findings.of(stored)
        except DriftwatchError as exc:
            store.problems.append(f"{stored.path}: skipped: {exc}")
            continue
        for key in list(open_keys):
            if key in keys:
                start[key] = stored
            else:
                open_keys.discard(key)
        if not open_keys:
            break
    return start, newest


# A finding's presence follows its key's value only when nothing else decides it: these are judged
# snapshot by snapshot (start-up problems, measured figures, a unit's own pending state).
_WALKED = ("engine.startup", "measured.", "process.", "systemd.")
# A change of these can change how every key is typed or which engine reads it: a boundary for all.
_RETYPING = ("engine.version", "launcher.engine")
_ENV_FILES = "unit.Service.EnvironmentFile"  # env.* findings fold into it (findings/compare.py)


def _value_id(change: dict | None, side: str) -> str | None:
    """A change's value on one side as an identity for "judged already", or None where the record
    hides the value (a secret, a fingerprint, a note)."""
    if change is None or change.get("secret") or change.get("note"):
        return None
    import json
    text = json.dumps(change.get(side), sort_keys=True, default=str)
    return None if "redacted" in text else text


def _since_from_changes(store, host: str | None, unit: str | None, wanted: set, findings: _Findings,
                        engine_version: str | None
                        ) -> tuple[dict[str, StoredSnapshot], StoredSnapshot | None] | None:
    """`_since_by_walk`'s answer from a database store's kept changes (schema v2): a key's finding is
    the same on every row between two changes of that key, so only the rows where the key changed
    are judged (and a value judged once is not judged again: A -> B -> A judges A once). A row whose
    changes were not kept for its pair (v1, a pruned gap) is judged as the walk would. None when the
    store keeps no changes or a row cannot be read: the caller walks."""
    if engine_version is not None or not hasattr(store, "key_changes"):
        return None
    try:
        rows, changed = store.key_changes(host, unit, list(wanted) + list(_RETYPING) + [_ENV_FILES])
        if not rows:
            return {}, None
        judged: dict[int, StoredSnapshot] = {}

        def stored(i: int) -> StoredSnapshot:
            if i not in judged:
                judged[i] = store.stored_row(rows[i], host, unit, engine_version)
            return judged[i]

        last = len(rows) - 1
        newest_keys = findings.of(stored(last))
        kept = [i > 0 and rows[i].changes_from is not None and int(rows[i].changes_from) == rows[i - 1].id
                for i in range(len(rows))]
        retyped = {sid for k in _RETYPING for sid in changed.get(k, {})}
        files = bool(findings.baseline.snapshot.environment_files or stored(last).snapshot.environment_files)
        start: dict[str, StoredSnapshot] = {}
        for key in wanted:
            if key not in newest_keys:
                continue
            own = changed.get(key, {})
            env = str(key).startswith("env.")
            walked = str(key).startswith(_WALKED) or (env and files)

            def boundary(j: int) -> bool:
                rid = rows[j].id
                return (walked or not kept[j] or rid in own or rid in retyped
                        or (env and rid in changed.get(_ENV_FILES, {})))

            present: dict[str, bool] = {}  # a value (as the kept change records it) -> judged finding
            i = last
            while True:
                j = i
                while j > 0 and not boundary(j):
                    j -= 1  # rows j..i hold the same value of `key`: the same finding as row i
                if j == 0:
                    break
                change = own.get(rows[j].id) if kept[j] and not walked else None
                if rows[j].id in retyped:  # typed anew from here back: what was judged says nothing
                    present.clear()
                    change = None
                if (now := _value_id(change, "new")) is not None:
                    present[now] = True
                before = _value_id(change, "old")
                here = present.get(before) if before is not None else None
                if here is None:
                    here = key in findings.of(stored(j - 1))
                    if before is not None:
                        present[before] = here
                if not here:
                    break
                i = j - 1
            start[key] = stored(j)  # read like the walk reads it: an unreadable start row walks instead
        return start, stored(last)
    except DriftwatchError:
        return None


# --------------------------------------------------------------------------- the use case


@dataclass(frozen=True)
class HistoryQuery:
    """What `history` is asked: the store, since when, and (with a request's baselines) the rules."""

    store: str | None = None
    since_text: str | None = None
    judging: JudgingOptions | None = None
    engine_version: str | None = None


def store_history(request: TargetRequest, query: HistoryQuery, files: EngineFiles, voice: Voice) -> dict:
    """`driftwatch history`: the ``driftwatch.history/v1`` document for the named hosts (or the
    inventory's, or every unit in the store), since `query.since_text`; each unit's current findings
    against its own baseline (run/targets.py: the typed --baseline, else the inventory's for the
    unit, else the config file's) with since when each is there. An unreadable store entry is a
    warning (`voice.warn`) and a problem the document names."""
    from .targets import judged_pair, resolve_targets
    since = parse_when(query.since_text) if query.since_text else None
    st = SnapshotStore(query.store or None, on_problem=voice.warn)
    # checks --limit; the inventory's (host, unit) pairs when it is the set; HOST is a name in the store
    targets = resolve_targets(replace(request, recorded_names=True))
    hosts = list(request.hosts)
    pairs = [] if hosts else [(t.host or "", t.unit or "") for t in targets if t.kind == "ssh"]
    inventory_run = bool(pairs)
    _refuse_unknown(st, hosts, request.unit)
    groups = groups_for(st, hosts, request.unit, pairs) if hosts or inventory_run else groups_for(st, (), request.unit)
    by_pair = {(t.host, t.unit): t.baseline for t in targets if t.kind == "ssh"}
    specs: dict[tuple, str | None] = {}
    for host, unit in groups:
        specs[(host, unit)] = by_pair[(host, unit)] if (host, unit) in by_pair else judged_pair(request, host, unit)[0]
    judging, cache = None, {}
    if any(specs.values()):
        from ..snapshots.baseline import baselines_dir as resolve_dir
        from .fleet import JudgingOptions
        from .targets import named_baseline
        options = query.judging or JudgingOptions()
        judging = options.load(query.engine_version)
        directory = resolve_dir(options.baselines_dir)
        for spec in dict.fromkeys(v for v in specs.values() if v):
            cache[spec] = named_baseline(spec, directory, files)
    note = _override_note(request, groups, specs)
    if note:
        voice.aside(note)
    return history_document(st, groups, since, None, judging, engine_version=query.engine_version,
                            baseline_of=(lambda h, u: cache.get(specs.get((h, u)) or "")) if cache else None)


def _override_note(request: TargetRequest, groups, specs) -> str | None:
    from .targets import baseline_override_note, judged_pair
    if not request.baseline:
        return None
    return baseline_override_note([judged_pair(request, h, u)[1] for h, u in groups])


def _refuse_unknown(store: SnapshotStore, hosts: list[str], unit: str | None) -> None:
    """A host named on the command line of which the store holds no snapshot (of `unit`) is bad
    input, most often a typo: one line naming the hosts the store does hold (exit 2)."""
    wanted = unit is None or safe_component(unit, "unit")  # each named host's own rows: one index range
    missing = [h for h in hosts if not any(wanted is True or safe_component(ku, "unit") == wanted
                                           for _, ku in store.groups(safe_component(h, "local")))]
    if missing:
        held = sorted({h for h, _ in store.groups()})
        shown = ", ".join(held[:20]) + (f" and {len(held) - 20} more" if len(held) > 20 else "")
        what = f" {unit}" if unit else ""
        raise InputError(f"no snapshots of {', '.join(missing)}{what} in the store {store.root} "
                         f"(it holds {shown or 'no snapshots'})")


__all__ = ["HISTORY_SCHEMA", "HistoryQuery", "annotate_since", "changes_between", "groups_for", "history_document",
           "parse_duration", "parse_when", "store_history", "unit_history"]
