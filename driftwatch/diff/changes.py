"""The diff of two stored snapshots of one unit, as history's change records: what `history`
shows between consecutive snapshots, and what a database store keeps as each snapshot is saved
(`snapshots.store.save_snapshot(…, changes=changes_between)`), so history never diffs again.

A record (``{"key", "concept", "flag", "kind", "old", "new", "old_source", "new_source",
"secret"?, "origin"?, "note"?}``) holds typed values with every secret already hidden: a stored
record leaves the host. A unit's own state (disk vs loaded vs running) is compared as a state
(appeared / resolved), not as a change of value.
"""
from __future__ import annotations

from typing import Any

from ..redact import CHANGED_FINGERPRINT, UNKNOWN_FINGERPRINT, mask_fingerprints
from ..snapshots.snapshot import Snapshot
from . import diff_snapshots, read_pair
from .difference import Difference

# Differences that describe one side's own state (disk vs loaded vs running), not a change between
# two snapshots: compared as states (appeared / resolved) instead.
STATE_KEYS = ("process.argv", "systemd.loaded")
# How a secret's two sides are kept (the same words as report/wording.py's REDACTED, CHANGED_REDACTED
# and UNKNOWN_REDACTED, which a test holds equal: a kept record is shown as stored).
REDACTED = "(redacted)"
UNKNOWN_REDACTED = "unknown (redacted with another key: re-save the baseline)"


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return mask_fingerprints(value)
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


# id(snapshot) -> (snapshot, engine_version, diffs): each snapshot is read once per pair it is in
_STATE_MEMO: dict[int, tuple] = {}


def _state_diffs(snap: Snapshot, engine_version: str | None) -> dict[str, Any]:
    """One snapshot's own disk-vs-loaded-vs-running findings, by key (remembered for the snapshot
    object: consecutive pairs share one side)."""
    hit = _STATE_MEMO.get(id(snap))
    if hit is not None and hit[0] is snap and hit[1] == engine_version:
        return hit[2]
    pair = read_pair(snap, snap, engine_version)
    out = {d.key: d for d in diff_snapshots(snap, snap, pair) if d.key in STATE_KEYS}
    if len(_STATE_MEMO) >= 8:
        _STATE_MEMO.clear()
    _STATE_MEMO[id(snap)] = (snap, engine_version, out)
    return out


def _change_from_difference(d: Difference) -> dict:
    old, new = d.baseline, d.current
    if d.secret:
        old = None if old is None else REDACTED
        new = None if new is None else CHANGED_FINGERPRINT
    change = {"key": d.key, "concept": d.concept, "flag": d.label, "kind": d.kind,
              "old": _value(old), "new": _value(new),
              "old_source": d.baseline_source, "new_source": d.current_source}
    if d.secret:
        change["secret"] = True
    if (d.details or {}).get("fingerprints") == "unknown" and new is not None:
        # snapshots fingerprinted under different keys (or an older release): not known to have changed
        change["new"] = UNKNOWN_REDACTED
        change["note"] = UNKNOWN_FINGERPRINT
    if d.origin:
        change["origin"] = {"old": d.origin.get("baseline"), "new": d.origin.get("current")}
    return change


def changes_between(old: Snapshot, new: Snapshot, engine_version: str | None = None) -> list[dict]:
    """What changed from `old` to `new` (both of one host/unit), as history change records."""
    pair = read_pair(old, new, engine_version)
    out = [_change_from_difference(d) for d in diff_snapshots(old, new, pair) if d.key not in STATE_KEYS]
    before, after = _state_diffs(old, engine_version), _state_diffs(new, engine_version)
    for key in STATE_KEYS:
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


__all__ = ["STATE_KEYS", "changes_between"]
