"""The report documents, built in one place: what every format renders and what scripts read.

- `comparison_to_dict(Comparison)` -> `driftwatch.compare/v1` (design.md; scripts read it, so it only
  ever changes additively);
- `build_report(baseline, entries)` -> `driftwatch.report/v1`: many (host, unit) pairs compared with
  one baseline; a host that could not be read is an entry with its error, never a reason to stop
  the others. `host_entry` makes one entry; run/fleet.py judges the units and calls it.

Everything a format shows is in these dicts: values (secrets already replaced), sources, impact,
the explanation, the summary sentence and the facts of the header lines. Formats compute nothing.
"""
from __future__ import annotations

from typing import Any

from ..snapshots.baseline import Baseline
from ..findings.compare import COMPARE_SCHEMA, Comparison, Finding, unquantified
from ..redact import mask_tree
from ..snapshots.snapshot import now_utc
from . import wording

REPORT_SCHEMA = "driftwatch.report/v1"


# --------------------------------------------------------------------------- driftwatch.compare/v1


def _json_value(diff, side: str) -> Any:
    if side == "current" and diff.current is not None and (diff.details or {}).get("fingerprints") == "unknown":
        return wording.UNKNOWN_REDACTED  # fingerprints of another key or release: not known to have changed
    if diff.secret:
        value = diff.baseline if side == "baseline" else diff.current
        if value is None:
            return None
        return wording.REDACTED if side == "baseline" else wording.CHANGED_REDACTED
    base, cur = mask_tree(diff.baseline), mask_tree(diff.current)  # a redacted part reads "(redacted)"
    if side == "current" and cur is not None and base == cur and diff.baseline != diff.current:
        return wording.CHANGED_REDACTED  # only the redacted part changed
    return base if side == "baseline" else cur



def _interval(iv) -> list[float] | None:
    """[lo, hi] as JSON (None without one)."""
    return None if iv is None else [float(iv[0]), float(iv[1])]


def finding_to_dict(f: Finding) -> dict:
    d = f.difference
    out = {
        "rank": f.rank, "key": d.key, "concept": d.concept, "flag": d.label,
        "baseline": _json_value(d, "baseline"), "current": _json_value(d, "current"),
        "baseline_source": d.baseline_source, "current_source": d.current_source,
    }
    if d.secret:
        out["secret"] = True  # the values above are placeholders: compared by fingerprint only
    out.update({
        "rule": f.rule.id, "severity": f.rule.severity,
        "impact": {"dimension": f.dimension,
                   "throughput_ratio": None if f.throughput_ratio is None else float(f.throughput_ratio),
                   "interval": _interval(f.interval), "direction": f.direction,
                   "confidence": f.confidence},
        "explanation": wording.explain(f),
    })
    if d.origin:
        out["origin"] = dict(d.origin)  # the file (fragment or drop-in) that set each side
    if d.details:
        out["details"] = mask_tree(d.details)
    if f.ignored_because:
        out["ignored_because"] = f.ignored_because
    return out


def summary(c: Comparison) -> str:
    """One paragraph: the prediction and where most of it comes from."""
    top = c.findings[0] if c.findings else None
    top_line = wording.change_line(top.difference.label, *wording.display_pair(top.difference)) if top else None
    return wording.summary_sentence(
        baseline_name=c.baseline.name, findings=len(c.findings), ignored=len(c.ignored), top_line=top_line,
        top_moves=top is not None and top.throughput_ratio not in (None, 1.0), concurrency=c.concurrency,
        predicted=c.predicted_throughput, ratio=c.predicted_throughput_ratio,
        baseline_tps=c.baseline_metrics.get("throughput"), measured_tps=c.current_metrics.get("throughput"),
        unquantified=[f.difference.label for f in unquantified(c.findings)],
        withheld=c.prediction_withheld, measured_ratio=c.measured_throughput_ratio,
        interval=c.predicted_throughput_interval, direction=c.predicted_direction)


def comparison_to_dict(c: Comparison) -> dict:
    """The driftwatch.compare/v1 document (design.md); scripts read it, so keep it stable."""
    b = c.baseline
    return {
        "schema": COMPARE_SCHEMA,
        "baseline": {"name": b.name, "host": b.host, "unit": b.unit, "metrics": dict(c.baseline_metrics),
                     "engine": c.pair.baseline.engine, "engine_label": c.pair.baseline.label,
                     "engine_version": c.pair.baseline.version},
        "target": {"host": c.current.host, "unit": c.current.unit, "source": c.current.source,
                   "metrics": dict(c.current_metrics), "engine": c.pair.current.engine,
                   "engine_label": c.pair.current.label,
                   "engine_version": c.pair.current.version,
                   "engine_version_reason": c.pair.current.version_reason},
        "concurrency": c.concurrency,
        "drift": c.drift,
        "predicted_throughput_ratio": c.predicted_throughput_ratio,
        "predicted_throughput_interval": _interval(c.predicted_throughput_interval),
        "predicted_direction": c.predicted_direction,
        "predicted_throughput": c.predicted_throughput,
        "prediction_withheld": c.prediction_withheld,  # why there is no prediction at all
        "measured_throughput_ratio": c.measured_throughput_ratio,
        "warnings": list(c.warnings),
        "summary": summary(c),
        "findings": [finding_to_dict(f) for f in c.findings],
        "ignored": [finding_to_dict(f) for f in c.ignored],
        "notes": list(c.notes),
    }


# --------------------------------------------------------------------------- driftwatch.report/v1


def host_entry(host: str | None, unit: str | None, status: str, comparison: dict | None = None,
               error: str | None = None, failure: str | None = None, file: str | None = None) -> dict:
    """One (host, unit) of a report. An unreadable one (status "error") says why in `error` and what
    kind of failure it was in `failure` (the collector's status: unreachable, timeout, auth failed,
    host key refused, unit not found, unit masked, error; "invalid unit" for a unit read but refused).
    A local unit file is labelled by the path the user gave (`host` and `file`), never by a
    `# /path` header inside it."""
    entry = {"host": host or "local", "unit": unit, "status": status, "error": error, "comparison": comparison}
    if failure is not None or status == "error":
        entry["failure"] = failure or "error"
    if file is not None:
        entry["file"] = file
    return entry


def _counts(statuses_by_host: dict[str, list[str]]) -> tuple[int, int, int]:
    """(drifted, clean, unreadable) hosts: a host drifted when any of its units did, unreadable when
    any could not be read, clean when every unit matches."""
    drifted = sum(1 for s in statuses_by_host.values() if "drift" in s)
    unreadable = sum(1 for s in statuses_by_host.values() if "error" in s)
    clean = sum(1 for s in statuses_by_host.values() if s and all(x == "clean" for x in s))
    return drifted, clean, unreadable


def build_report(baseline: Baseline, entries: list[dict]) -> dict:
    """`summary` counts hosts (`hosts`, `drifted`, `clean`, `unreadable`: a host with two units is
    one host) and, under `units`, the (host, unit) pairs with the same four counts."""
    by_host: dict[str, list[str]] = {}
    for e in entries:
        by_host.setdefault(str(e["host"]), []).append(e["status"])
    drifted, clean, unreadable = _counts(by_host)
    u_drifted, u_clean, u_unreadable = _counts({str(i): [e["status"]] for i, e in enumerate(entries)})
    return {
        "schema": REPORT_SCHEMA,
        "generated_at": now_utc(),
        "baseline": {"name": baseline.name, "host": baseline.host, "unit": baseline.unit,
                     "metrics": dict(baseline.metrics)},
        "summary": {"hosts": len(by_host), "drifted": drifted, "clean": clean, "unreadable": unreadable,
                    "units": {"total": len(entries), "drifted": u_drifted, "clean": u_clean,
                              "unreadable": u_unreadable}},
        "hosts": entries,
    }
