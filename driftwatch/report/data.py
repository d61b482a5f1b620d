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

from typing import TYPE_CHECKING, Any, cast

from ..findings.compare import COMPARE_SCHEMA, Comparison, Finding, unquantified
from ..redact import mask_tree
from ..snapshots.baseline import Baseline
from ..snapshots.snapshot import now_utc
from . import wording

if TYPE_CHECKING:
    from .document import (
        BaselineRef,
        ComparisonDoc,
        DriftGroup,
        FindingDoc,
        FleetReportDoc,
        HostEntry,
        MeasuredVsPredictedDoc,
        Status,
    )

REPORT_SCHEMA = "driftwatch.report/v1"
NO_BASELINE = "no_baseline"  # the status of a unit no baseline is named for (read and stored, not judged)


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


def finding_to_dict(f: Finding) -> FindingDoc:
    d = f.difference
    out: dict[str, Any] = {  # built in the schema's key order (`secret` sits mid-way): typed on return
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
                   "confidence": f.confidence,
                   **({"counted_in": f.counted_in_rank} if f.counted_in_rank is not None else {})},
        "explanation": wording.explain(f),
    })
    if d.origin:
        out["origin"] = dict(d.origin)  # the file (fragment or drop-in) that set each side
    if d.details:
        out["details"] = mask_tree(d.details)
    if f.ignored_because:
        out["ignored_because"] = f.ignored_because
    return cast("FindingDoc", out)


def summary(c: Comparison) -> str:
    """One paragraph: the prediction and where most of it comes from."""
    top = c.findings[0] if c.findings else None
    top_line = wording.change_line(top.difference.label, *wording.display_pair(top.difference)) if top else None
    return wording.summary_sentence(wording.SummaryFacts(
        baseline_name=c.baseline.name, findings=len(c.findings), ignored=len(c.ignored), top_line=top_line,
        top_moves=top is not None and top.throughput_ratio not in (None, 1.0), concurrency=c.concurrency,
        predicted=c.predicted_throughput, ratio=c.predicted_throughput_ratio,
        baseline_tps=c.baseline_metrics.get("throughput"), measured_tps=c.current_metrics.get("throughput"),
        unquantified=[f.difference.label for f in unquantified(c.findings)],
        withheld=c.prediction_withheld, measured_ratio=c.measured_throughput_ratio,
        interval=c.predicted_throughput_interval, direction=c.predicted_direction,
        verdict=None if c.measured_vs_predicted is None else c.measured_vs_predicted.to_dict()))


def comparison_to_dict(c: Comparison) -> ComparisonDoc:
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
        # does the drift explain the measured change (issue 35): {measured, interval, verdict, look_at}
        "measured_vs_predicted": None if c.measured_vs_predicted is None
        else cast("MeasuredVsPredictedDoc", c.measured_vs_predicted.to_dict()),
        "warnings": list(c.warnings),
        "summary": summary(c),
        "findings": [finding_to_dict(f) for f in c.findings],
        "ignored": [finding_to_dict(f) for f in c.ignored],
        "notes": list(c.notes),
    }


# --------------------------------------------------------------------------- driftwatch.report/v1


def host_entry(host: str | None, unit: str | None, status: Status, comparison: ComparisonDoc | None = None,
               error: str | None = None, failure: str | None = None, file: str | None = None) -> HostEntry:
    """One (host, unit) of a report. An unreadable one (status "error") says why in `error` and what
    kind of failure it was in `failure` (the collector's status: unreachable, timeout, auth failed,
    host key refused, unit not found, unit masked, error; "invalid unit" for a unit read but refused).
    A local unit file is labelled by the path the user gave (`host` and `file`), never by a
    `# /path` header inside it."""
    entry: HostEntry = {"host": host or "local", "unit": unit, "status": status, "error": error,
                        "comparison": comparison}
    if failure is not None or status == "error":
        entry["failure"] = failure or "error"
    if file is not None:
        entry["file"] = file
    return entry


def _counts(statuses_by_host: dict[str, list[str]]) -> tuple[int, int, int, int]:
    """(drifted, clean, unreadable, no_baseline) hosts: a host drifted when any of its units did,
    unreadable when any could not be read, clean when every unit judged matches (a unit without a
    baseline is not judged), without a baseline when none of its units has one."""
    drifted = sum(1 for s in statuses_by_host.values() if "drift" in s)
    unreadable = sum(1 for s in statuses_by_host.values() if "error" in s)
    clean = sum(1 for s in statuses_by_host.values()
                if "clean" in s and all(x in ("clean", NO_BASELINE) for x in s))
    none = sum(1 for s in statuses_by_host.values() if s and all(x == NO_BASELINE for x in s))
    return drifted, clean, unreadable, none


def _baseline_dict(b: Baseline) -> BaselineRef:
    return {"name": b.name, "host": b.host, "unit": b.unit, "metrics": dict(b.metrics)}


def build_report(baseline: Baseline | None, entries: list[HostEntry], baselines: list[Baseline] | None = None,
                 inventory: str | None = None) -> FleetReportDoc:
    """`summary` counts hosts (`hosts`, `drifted`, `clean`, `unreadable`, `no_baseline`: a host with
    two units is one host) and, under `units`, the (host, unit) pairs with the same counts.

    `baselines`: every baseline the entries were judged against (default: `baseline`). `baseline` is
    the one baseline of the report, or null when its units were judged against several (each entry's
    `comparison.baseline.name` says which); `baselines` lists them all. `drift_groups`: identical
    findings across units told once (`drift_groups`). `inventory`: the inventory the hosts came
    from, for the restore command each group names."""
    used = list(baselines) if baselines is not None else ([baseline] if baseline is not None else [])
    one = used[0] if len(used) == 1 else (baseline if not used else None)
    return assemble_report(_baseline_dict(one) if one is not None else None, [_baseline_dict(b) for b in used],
                           entries, inventory)


def assemble_report(baseline: BaselineRef | None, baselines: list[BaselineRef], entries: list[HostEntry],
                    inventory: str | None, generated_at: str | None = None) -> FleetReportDoc:
    """The `driftwatch.report/v1` document from baselines already as dicts: what `build_report` makes
    of one run, and what `report --merge` makes of several shards' entries (counts and drift groups
    computed here, over every entry given)."""
    by_host: dict[str, list[str]] = {}
    for e in entries:
        by_host.setdefault(str(e["host"]), []).append(e["status"])
    drifted, clean, unreadable, none = _counts(by_host)
    u_drifted, u_clean, u_unreadable, u_none = _counts({str(i): [e["status"]] for i, e in enumerate(entries)})
    return {
        "schema": REPORT_SCHEMA,
        "generated_at": generated_at or now_utc(),
        "baseline": baseline,
        "baselines": list(baselines),
        "summary": {"hosts": len(by_host), "drifted": drifted, "clean": clean, "unreadable": unreadable,
                    "no_baseline": none,
                    "units": {"total": len(entries), "drifted": u_drifted, "clean": u_clean,
                              "unreadable": u_unreadable, "no_baseline": u_none}},
        "inventory": inventory,
        "drift_groups": drift_groups(entries),
        "hosts": entries,
    }


def _origin_name(f: FindingDoc) -> str | None:
    """The file name (not the path) that set the current value, e.g. override.conf."""
    origin = origin_ if isinstance(origin_ := f.get("origin"), dict) else {}
    path = origin.get("current")
    return str(path).rstrip("/").rsplit("/", 1)[-1] if path else None


def drift_groups(entries: list[HostEntry]) -> list[DriftGroup]:
    """Identical findings across units, told once: the same rule, key, baseline name, baseline ->
    current value and origin file name make one group, with the (host, unit) pairs that have it.
    Numbered in order: the groups several units share first, each by its findings' best rank, then
    by how many units share it; a finding of a shared group gets its `group` number."""
    import json
    groups: dict[str, DriftGroup] = {}
    members: dict[str, list[FindingDoc]] = {}
    for e in entries:
        comparison = e.get("comparison") if isinstance(e.get("comparison"), dict) else None
        if e.get("status") != "drift" or comparison is None:
            continue
        name = (comparison.get("baseline") or {}).get("name")
        for f in comparison.get("findings") or []:
            ident = json.dumps([f.get("rule"), f.get("key"), name, f.get("baseline"), f.get("current"),
                                _origin_name(f)], sort_keys=True, default=str)
            group = groups.get(ident)
            if group is None:
                group = groups[ident] = {
                    "rule": f.get("rule"), "key": f.get("key"), "concept": f.get("concept"), "flag": f.get("flag"),
                    "severity": f.get("severity"), "baseline_name": name,
                    "baseline": f.get("baseline"), "current": f.get("current"),
                    "baseline_source": f.get("baseline_source"), "current_source": f.get("current_source"),
                    "secret": bool(f.get("secret")), "origin": _origin_name(f), "impact": f.get("impact"),
                    "explanation": f.get("explanation"), "rank": f.get("rank"), "hosts": [],
                    "group": 0}  # numbered below, once every group is known
            elif isinstance(f.get("rank"), int) and (not isinstance(group["rank"], int) or f["rank"] < group["rank"]):
                group["rank"] = f["rank"]
            group["hosts"].append({"host": e.get("host"), "unit": e.get("unit")})
            members.setdefault(ident, []).append(f)
    out = sorted(groups.items(), key=lambda kv: (len(kv[1]["hosts"]) == 1,
                                                 kv[1]["rank"] if isinstance(kv[1]["rank"], int) else 10**6,
                                                 -len(kv[1]["hosts"]), str(kv[1]["key"])))
    for number, (ident, group) in enumerate(out, 1):
        group["group"] = number
        for f in members[ident] if len(group["hosts"]) > 1 else ():
            f["group"] = number  # the shared group it is told in, so a host's section can point to it
    return [g for _, g in out]
