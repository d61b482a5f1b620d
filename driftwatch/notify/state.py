"""When to mail a report, and the state file behind ``--only-changes``.

Rules (`should_send`):
- ``always`` -> send, whatever the report says;
- a host is unreadable -> send (a host we cannot read might have drifted, and silence is the failure
  driftwatch exists to avoid), except under ``only_changes`` when the set of problems is the one of the
  state file: a host that stays down through a maintenance is mailed when it goes down, not every run;
- no host drifted, ``only_changes``, and the state file remembers drift or unreadable hosts (so a
  drift mail went out) -> send once, a "resolved" mail (`is_resolved`); the clean state saved after
  it keeps the next clean runs quiet;
- no host drifted -> do not send;
- drift and ``only_changes`` -> send only when the fingerprint of the set of problems (findings and
  unreadable host/unit pairs) differs from the one in the state file (the last report that was
  settled: sent, or not needing a mail);
- drift otherwise -> send.

The state file (JSON, schema ``driftwatch.state/v1``) records the fingerprint of the last run that
was settled, and the identities (`identity.finding_id`: host/unit/key) of its findings, so the next
mail can say of each finding whether it is "new since last run" or "still present" (`mark_changes`;
a state file written before the identities were kept marks nothing). Save it
(`save_state(path, state_for(report))`) after a mail was delivered or when no mail was needed; do
NOT save it when delivery failed, so the next run tries again. Because clean runs are saved too, drift
that is fixed and later comes back is mailed again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from driftwatch.errors import InputError
from driftwatch.fileio import loads_json, write_atomic
from driftwatch.identity import finding_id

if TYPE_CHECKING:
    from driftwatch.report.document import FleetReportDoc

STATE_SCHEMA = "driftwatch.state/v1"


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _items(report: FleetReportDoc) -> list[str]:
    items = set()
    for h in report.get("hosts") or []:
        if not isinstance(h, dict):
            continue
        where = finding_id(h.get("host"), h.get("unit"), None)
        if h.get("status") == "error":
            items.add(_canon(["unreadable", where.host, where.unit]))
        comp: Mapping[str, Any] = comparison_ if isinstance(comparison_ := h.get("comparison"), dict) else {}
        for f in comp.get("findings") or []:
            if isinstance(f, dict):
                items.add(_canon(["finding", *finding_id(where.host, where.unit, f.get("key")),
                                  f.get("baseline"), f.get("current"), f.get("rule")]))
    return sorted(items)


def fingerprint(report: FleetReportDoc) -> str:
    """sha256 over the set of findings — identity (host, unit, key) as `identity.finding_id`, with
    baseline, current and rule — and the unreadable (host, unit) pairs. Independent of timestamps,
    ranks, wording, error text and order."""
    h = hashlib.sha256(STATE_SCHEMA.encode())
    for item in _items(report):
        h.update(b"\n" + item.encode("utf-8"))
    return "sha256:" + h.hexdigest()


def _findings(report: FleetReportDoc):
    """(identity, finding) for every finding of `report` that is a mapping."""
    for h in report.get("hosts") or []:
        if not isinstance(h, dict):
            continue
        comp: Mapping[str, Any] = comparison_ if isinstance(comparison_ := h.get("comparison"), dict) else {}
        for f in comp.get("findings") or []:
            if isinstance(f, dict):
                yield str(finding_id(h.get("host"), h.get("unit"), f.get("key"))), f


def finding_ids(report: FleetReportDoc) -> list[str]:
    """``host/unit/key`` of every finding of `report`, sorted (what the state file remembers)."""
    return sorted({fid for fid, _ in _findings(report)})


def mark_changes(report: FleetReportDoc, previous: dict | None) -> dict:
    """Mark each finding of `report` ``last_run: "new"`` or ``"still present"`` against the
    findings the `previous` state remembers; counts {"new": n, "still present": m}. Without a
    previous state that lists its findings, nothing is marked (every finding would be "new")."""
    counts = {"new": 0, "still present": 0}
    known = previous.get("findings") if isinstance(previous, dict) else None
    if not isinstance(known, list):
        return counts
    known = {str(k) for k in known}
    for fid, f in _findings(report):
        mark = "still present" if fid in known else "new"
        f["last_run"] = mark
        counts[mark] += 1
    return counts


def _counts(report: FleetReportDoc) -> dict:
    hosts = [h for h in report.get("hosts") or [] if isinstance(h, dict)]
    return {"hosts": len(hosts),
            "drifted": sum(1 for h in hosts if h.get("status") == "drift"),
            "unreadable": sum(1 for h in hosts if h.get("status") == "error")}


def state_for(report: FleetReportDoc, *, sent: bool | None = None) -> dict:
    """The state to save after a settled run of `report`."""
    data: dict[str, Any] = {"schema": STATE_SCHEMA, "fingerprint": fingerprint(report),
            "generated_at": report.get("generated_at"), "summary": _counts(report),
            "findings": finding_ids(report)}
    if sent is not None:
        data["sent"] = bool(sent)
    return data


def load_state(path: str) -> dict | None:
    """The saved state, or None when the file does not exist yet. A corrupt file is an InputError
    (delete it to start over)."""
    path = os.path.expanduser(str(path))
    try:
        with open(path, "rb") as fh:
            raw = fh.read(1024 * 1024 + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(f"state file {path}: cannot read: {e.strerror or e}") from None
    try:
        data = loads_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise InputError(f"state file {path} is not valid JSON ({e}); delete it to start over") from None
    if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA or not isinstance(data.get("fingerprint"), str):
        raise InputError(f"state file {path} is not a driftwatch state file ({STATE_SCHEMA}); delete it to start over")
    return data


def save_state(path: str, data: dict) -> None:
    """Write `data` as JSON atomically (`fileio.write_atomic`: temp file in the same directory,
    fsync, os.replace, fsync the directory). Creates the directory when missing."""
    path = os.path.expanduser(str(path))
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    try:
        write_atomic(path, text)
    except InputError as e:
        raise InputError(f"state file {e}") from None


def _had_trouble(state: dict | None) -> bool:
    if not isinstance(state, dict):
        return False
    summary = summary_ if isinstance(summary_ := state.get("summary"), dict) else {}
    if "drifted" in summary or "unreadable" in summary:
        return bool(summary.get("drifted") or summary.get("unreadable"))
    return bool(state.get("findings"))  # an older state without a summary


def is_resolved(report: FleetReportDoc, state: dict | None, only_changes: bool) -> bool:
    """True when `report` is clean (no drift, every host read) while the last settled run under
    --only-changes had drift or unreadable hosts: the "resolved" mail is due."""
    c = _counts(report)
    return bool(only_changes) and not c["drifted"] and not c["unreadable"] and _had_trouble(state)


def should_send(report: FleetReportDoc, state: dict | None, only_changes: bool, always: bool) -> tuple[bool, str]:
    """(send?, reason) — the reason is one line for logs / --verbose."""
    c = _counts(report)
    if always:
        return True, "--always"
    same = bool(only_changes and state and state.get("fingerprint") == fingerprint(report))
    since = f" reported at {state['generated_at']}" if state and state.get("generated_at") else " last reported"
    if c["unreadable"]:
        what = f"{c['unreadable']} host(s) unreadable"
        if same:  # a host that stays down is the same problem: one mail when it goes down, one when back
            return False, f"{what}, same problems as{since} (--only-changes)"
        return True, what + (", problems changed since the last report (--only-changes)" if only_changes
                             else " (always reported)")
    if state is not None and is_resolved(report, state, only_changes):  # resolved: a state was kept
        return True, f"resolved: all {c['hosts']} host(s) match the baseline again (problems{since}) (--only-changes)"
    if not c["drifted"]:
        return False, f"no drift: all {c['hosts']} host(s) match the baseline"
    what = f"{c['drifted']} of {c['hosts']} host(s) drifted"
    if same:
        return False, f"{what}, same findings as{since} (--only-changes)"
    if only_changes:
        return True, f"{what}, findings changed since the last report (--only-changes)"
    return True, what


__all__ = ["STATE_SCHEMA", "fingerprint", "is_resolved", "finding_ids", "mark_changes", "state_for", "load_state",
           "save_state", "should_send"]
