"""Compare many (host, unit) pairs with one baseline and gather them into one report document.

The document (schema driftwatch.report/v1) is what the fleet renderers and the mailer read; a host
that could not be read is a row with its error, never a reason to stop the others.
"""
from __future__ import annotations

from .baseline import Baseline
from .compare import comparison_to_dict, compare
from .errors import DriftwatchError
from .model import RawUnit
from .snapshot import Snapshot, now_utc

REPORT_SCHEMA = "driftwatch.report/v1"


def host_entry(host: str | None, unit: str | None, status: str, comparison: dict | None = None,
               error: str | None = None) -> dict:
    return {"host": host or "local", "unit": unit, "status": status, "error": error, "comparison": comparison}


def compare_entry(baseline: Baseline, snap: Snapshot, rules, ignore, concurrency, engine_version) -> dict:
    result = compare(baseline, snap, rules, ignore, concurrency, engine_version=engine_version)
    return host_entry(snap.host, snap.unit, "drift" if result.drift else "clean", comparison_to_dict(result))


def entries_from_raws(raws: list[RawUnit], baseline: Baseline, rules, ignore, concurrency, engine_version,
                      to_snapshot) -> list[dict]:
    entries = []
    for raw in raws:
        try:
            snap = to_snapshot(raw, engine_version)
            entries.append(compare_entry(baseline, snap, rules, ignore, concurrency, engine_version))
        except DriftwatchError as exc:
            entries.append(host_entry(raw.host, raw.unit, "error", error=str(exc)))
    return entries


def build_report(baseline: Baseline, entries: list[dict]) -> dict:
    drifted = sum(1 for e in entries if e["status"] == "drift")
    unreadable = sum(1 for e in entries if e["status"] == "error")
    return {
        "schema": REPORT_SCHEMA,
        "generated_at": now_utc(),
        "baseline": {"name": baseline.name, "host": baseline.host, "unit": baseline.unit,
                     "metrics": dict(baseline.metrics)},
        "summary": {"hosts": len(entries), "drifted": drifted, "clean": len(entries) - drifted - unreadable,
                    "unreadable": unreadable},
        "hosts": entries,
    }
