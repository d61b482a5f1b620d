"""Since when each finding is there, read from the snapshot store: the baseline judged against the
stored snapshots of a unit, each judged once (`FindingsThroughTime`).

- `baseline_findings`: for each finding of the newest snapshot, the first snapshot in which it
  appeared, the one that began its current unbroken run ("since"), and whether it ever went away
  (the findings of a `driftwatch history` unit).
- `annotate_since(report, store, baseline, judging)`: the same "since" for every finding of a fleet
  report (``driftwatch.report/v1``), walking back from the newest snapshot only as far as needed, or
  judging only the rows where a database store's kept changes say the key changed.

Findings are identified as everywhere (`identity.finding_id`: host, unit, key).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, overload

from ..errors import DriftwatchError
from ..identity import finding_id
from ..snapshots.store import KeptChanges, Store, StoredSnapshot

if TYPE_CHECKING:
    from ..findings.judging import Judging
    from ..report.document import FindingDoc
    from ..snapshots.baseline import Baseline


@overload
def stored_ref(stored: StoredSnapshot) -> dict: ...


@overload
def stored_ref(stored: None) -> None: ...


def stored_ref(stored: StoredSnapshot | None) -> dict | None:
    """Where a stored snapshot is (its name and when it was collected), as documents say it."""
    if stored is None:
        return None
    return {"snapshot": stored.record.name, "collected_at": stored.record.stamp}



# --------------------------------------------------------------------------- findings through time


class FindingsThroughTime:
    """The baseline judged against each stored snapshot, computed once each: key -> finding dict."""

    def __init__(self, baseline: Baseline, judging: Judging):
        self.baseline = baseline
        self.judging = judging
        self._cache: dict[str, dict[str, FindingDoc]] = {}

    def of(self, stored: StoredSnapshot) -> dict[str, FindingDoc]:
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
    out = {"since": stored_ref(loaded[since]), "first_seen": stored_ref(loaded[first]), "went_away": len(episodes) > 1,
           "episodes": [{"from": stored_ref(loaded[a]), "gone_at": stored_ref(loaded[b]) if b < len(loaded) else None}
                        for a, b in episodes]}
    if value_since != since:
        out["value_since"] = stored_ref(loaded[value_since])  # the current value itself, when it came later
    return out


def baseline_findings(loaded: list[StoredSnapshot], findings: FindingsThroughTime) -> list[dict]:
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



# --------------------------------------------------------------------------- "since" in a fleet report


def annotate_since(report: dict, store: Store, baseline: Baseline, judging: Judging) -> dict:
    """Add `since` to every finding of a ``driftwatch.report/v1`` document, from the store: the
    first snapshot of the unbroken run, ending with the newest stored snapshot, whose comparison
    with the baseline has a finding of the same identity (host, unit, key). A finding the newest
    stored snapshot does not have is new since it: ``{"at": null, "after": <newest's time>}``.
    A unit with no snapshots gets nothing. Also sets the report's `history` (store, problems)."""
    engine_version = judging.engine_version
    findings = FindingsThroughTime(baseline, judging)
    for entry in report.get("hosts") or []:
        comparison = entry.get("comparison") if isinstance(entry, dict) else None
        if not isinstance(comparison, dict) or not comparison.get("findings"):
            continue
        host = None if entry.get("file") else entry.get("host")
        wanted = {f.get("key") for f in comparison["findings"] if isinstance(f, dict)}
        kept = since_from_changes(store, host, entry.get("unit"), wanted, findings, engine_version)
        start, newest = kept if kept is not None else since_by_walk(store, host, entry.get("unit"), wanted,
                                                                     findings, engine_version)
        if newest is None:
            continue
        for f in comparison["findings"]:
            if not isinstance(f, dict):
                continue
            key = f.get("key")
            found = start.get(key) if isinstance(key, str) else None
            f["since"] = ({"at": found.record.stamp, "snapshot": found.record.name,
                           "id": str(finding_id(entry.get("host"), entry.get("unit"), f.get("key")))}
                          if found is not None else {"at": None, "snapshot": None, "after": newest.record.stamp})
    report["history"] = {"store": str(store.root), "problems": list(store.problems)}
    return report


def since_by_walk(store: Store, host: str | None, unit: str | None, wanted: set,
                   findings: FindingsThroughTime, engine_version: str | None
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
    text = json.dumps(change.get(side), sort_keys=True, default=str)
    return None if "redacted" in text else text


def since_from_changes(store: Store, host: str | None, unit: str | None, wanted: set, findings: FindingsThroughTime,
                        engine_version: str | None
                        ) -> tuple[dict[str, StoredSnapshot], StoredSnapshot | None] | None:
    """`since_by_walk`'s answer from a database store's kept changes (schema v2): a key's finding is
    the same on every row between two changes of that key, so only the rows where the key changed
    are judged (and a value judged once is not judged again: A -> B -> A judges A once). A row whose
    changes were not kept for its pair (v1, a pruned gap) is judged as the walk would. None when the
    store keeps no changes or a row cannot be read: the caller walks."""
    if engine_version is not None or not isinstance(store, KeptChanges):
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
        kept = [i > 0 and (changed_from := rows[i].changes_from) is not None and int(changed_from) == rows[i - 1].id
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

            def boundary(j: int, walked: bool = walked, own: dict = own, env: bool = env) -> bool:
                """Row j may hold another value of `key` than row j-1 (this key's loop values bound)."""
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


__all__ = ["FindingsThroughTime", "annotate_since", "baseline_findings", "since_by_walk", "since_from_changes",
           "stored_ref"]
