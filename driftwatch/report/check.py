"""`driftwatch check`: would this unit's server start? A lint for `ExecStartPre=` or CI.

The answer comes from the snapshot's issues of severity "error": settings that make systemd refuse
to load the unit (snapshots/unitload.py), flags the engine release does not know (unknown, removed,
ambiguous prefixes, values its type converters reject) and the engine's known start-up crashes.
Warnings (deprecated flags, ignored arguments) are printed but do not fail.
"""
from __future__ import annotations

import json

from ..snapshots.snapshot import Snapshot

CHECK_SCHEMA = "driftwatch.check/v1"


def where(snap: Snapshot, given: str | None = None) -> str:
    unit = snap.unit or "unit"
    if given:
        return given
    return f"{snap.host}:{unit}" if snap.host else unit


def problems(snap: Snapshot) -> tuple[list, list]:
    """(errors, warnings) among the snapshot's issues."""
    errors = [i for i in snap.issues if i.severity == "error"]
    warnings = [i for i in snap.issues if i.severity == "warning"]
    return errors, warnings


def check_doc(snap: Snapshot, given: str | None = None) -> dict:
    errors, warnings = problems(snap)
    e = snap.engine
    return {"schema": CHECK_SCHEMA, "unit": snap.unit, "host": snap.host, "file": given,
            "engine": e.engine if e.label else None, "engine_label": e.label or None,
            "engine_version": e.version or None, "engine_version_reason": e.version_reason or None,
            "starts": not errors, "errors": [i.to_dict() for i in errors],
            "warnings": [i.to_dict() for i in warnings],
            **({"not_read": snap.runtime["not_read"]} if snap.runtime.get("not_read") else {})}


def render_check(snap: Snapshot, fmt: str = "text", given: str | None = None) -> str:
    """One line per problem (`UNIT: error: MESSAGE`), then a verdict line."""
    if fmt == "json":
        return json.dumps(check_doc(snap, given), indent=2) + "\n"
    errors, warnings = problems(snap)
    name = where(snap, given)
    lines = [f"{name}: error: {i.message}" for i in errors]
    lines += [f"{name}: warning: {i.message}" for i in warnings]
    if snap.runtime.get("not_read"):  # a partial read: the verdict is about the unit text only
        lines.append(f"{name}: warning: {snap.runtime['not_read']}")
    e = snap.engine
    refused = [i for i in errors if i.kind == "systemd-refuses"]  # systemd refuses before any engine runs
    if refused:
        n = len(refused)
        lines.append(f"{name}: systemd will not load this unit ({n} problem{'s' if n != 1 else ''})")
    elif not e.label:
        lines.append(f"{name}: ok: no known engine in ExecStart (nothing to check)")
    elif errors:
        n = len(errors)
        lines.append(f"{name}: {e.title} would refuse to start ({n} problem{'s' if n != 1 else ''}; "
                     f"{e.version_reason})")
    else:
        lines.append(f"{name}: ok: {e.title} accepts every flag ({e.version_reason})")
    return "\n".join(lines) + "\n"


def refused_doc(given: str, message: str) -> dict:
    """A unit systemd itself would refuse: it cannot start either."""
    return {"schema": CHECK_SCHEMA, "unit": None, "host": None, "file": given, "engine": None,
            "engine_label": None, "engine_version": None, "engine_version_reason": None, "starts": False,
            "errors": [{"kind": "systemd-refuses", "message": message, "severity": "error"}], "warnings": []}
