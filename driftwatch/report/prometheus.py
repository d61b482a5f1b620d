"""Prometheus text exposition format (version 0.0.4), for node_exporter's textfile collector.

`driftwatch report --prometheus /var/lib/node_exporter/textfile/driftwatch.prom` writes this
beside the usual report, atomically (temp file in the same directory, then a rename: the collector
never reads half a file; its temp name does not end in ``.prom``). Only fleet reports have a
layout (a comparison is one `report --unit-file` away).

One file per run holds the whole fleet. Every series carries ``report`` (the textfile's name without
``.prom``, so several runs or shards writing their own files into one textfile directory never
collide: node_exporter refuses a series two files both carry); every per-unit series also carries
``baseline`` (the baseline the unit was judged against; ``none`` for a unit without one). A shard's
report (`report --shard I/N`) adds ``shard="I/N"`` to the run-level series (the last run's time and
the host counts), so N shards' files in one textfile directory sum to the fleet with
``sum without (report, shard)``, and each shard's freshness is its own series.

Metrics (gauges; one series per (host, unit) read, label values escaped as the format requires;
``report`` on each, ``baseline`` on each with ``host``):

    driftwatch_last_run_timestamp_seconds{shard}                   when the report was made
    driftwatch_host_read{host,unit,status}                         1; status ok, or the failure
                                                                   (unreachable, timeout, auth_failed,
                                                                   host_key_refused, unit_not_found,
                                                                   unit_masked, invalid_unit, error)
    driftwatch_drift{host,unit}                                    1 drifted, 0 clean (read units only)
    driftwatch_findings{host,unit,severity}                        findings per severity (high, medium,
                                                                   low, info: every one, 0 included)
    driftwatch_predicted_throughput_ratio{host,unit}               predicted ÷ baseline, where a model applies
    driftwatch_predicted_throughput_ratio_bound{host,unit,bound}   its 80 % interval: bound="lo" / "hi"
    driftwatch_predicted_throughput_tokens_per_second{host,unit}   where the baseline records its throughput
    driftwatch_measured_throughput_tokens_per_second{host,unit}    measured on the running server now
    driftwatch_measured_accept_length{host,unit}                   (its journal, or --probe), where read
    driftwatch_finding_since_timestamp_seconds{host,unit}          oldest "since" of the unit's findings
                                                                   (with a snapshot store)
    driftwatch_hosts{status,shard}                                 hosts drifted / clean / unreadable /
                                                                   no_baseline

A container's or Kubernetes workload's series (an inventory's `containers:` / `kubernetes:`,
`report --manifest`) also carry ``container``, and where known ``namespace`` and ``workload``
(``KIND/NAME``; a Pod's is its template's); a systemd unit's series carry none of the three.

Like every format it computes nothing: each value is read from the ``driftwatch.report/v1``
document (report/data.py), through report/view.py.
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from ..timestamps import parse_utc
from . import view
from .interface import FLEET, Format, UnsupportedDocument

if TYPE_CHECKING:
    from .document import ComparisonDoc, FleetReportDoc

SEVERITIES = ("high", "medium", "low", "info")


def escape_label(value) -> str:
    """A label value: backslash, double quote and line feed escaped (the format's only escapes)."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("\n", "\\n")


def _status_label(text) -> str:
    """'auth failed' -> 'auth_failed' (label values stay one token, as PromQL matchers expect)."""
    return re.sub(r"[^a-z0-9]+", "_", str(text or "error").lower()).strip("_") or "error"


def _number(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Family:
    def __init__(self, name: str, help_text: str, kind: str = "gauge"):
        self.name, self.help, self.kind = name, help_text, kind
        self.samples: list[tuple[dict, Any]] = []

    def add(self, labels: dict, value) -> None:
        self.samples.append((labels, value))

    def lines(self) -> list[str]:
        if not self.samples:
            return []
        out = [f"# HELP {self.name} {escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]
        seen = set()
        for labels, value in self.samples:
            text = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items())
            series = f"{self.name}{{{text}}}" if text else self.name
            if series in seen:
                continue  # one value per series (a host/unit named twice in one report)
            seen.add(series)
            out.append(f"{series} {_number(value)}")
        return out


class PrometheusFormat(Format):
    name = "prometheus"
    media_type = "text/plain; version=0.0.4"
    suffix = ".prom"

    def supports(self, kind: str) -> bool:
        return kind == FLEET

    def render_comparison(self, doc: ComparisonDoc) -> str:
        raise UnsupportedDocument("the prometheus format renders fleet reports only (use `report --unit-file`)")

    def render_fleet(self, doc: FleetReportDoc, brief: bool = False) -> str:
        return render_textfile(doc)  # one layout: the metrics


def report_label(path: str | None) -> str:
    """The `report` label of a textfile: its file name without ``.prom`` ('driftwatch' without one)."""
    import os
    name = os.path.basename(path or "") or "driftwatch.prom"
    return name[:-5] if name.endswith(".prom") else name


CONTAINER_LABELS = ("namespace", "workload", "container")


def render_textfile(doc: FleetReportDoc, report: str = "driftwatch") -> str:
    """The fleet report as one textfile; every series labelled `report` (see the module's doc)."""
    last = _Family("driftwatch_last_run_timestamp_seconds",
                   "When driftwatch last made this report (Unix time).")
    read = _Family("driftwatch_host_read",
                   "1 for each host/unit driftwatch tried to read; status is ok or why it could not be read.")
    drift = _Family("driftwatch_drift", "1 when the unit drifted from the baseline, 0 when it matches.")
    findings = _Family("driftwatch_findings", "Findings against the baseline, by severity.")
    ratio = _Family("driftwatch_predicted_throughput_ratio",
                    "Predicted throughput divided by the baseline's (absent where no model applies).")
    bound = _Family("driftwatch_predicted_throughput_ratio_bound",
                    "The 80 % interval of the predicted throughput ratio: bound lo and hi.")
    tps = _Family("driftwatch_predicted_throughput_tokens_per_second",
                  "Predicted throughput in tokens per second (where the baseline records its throughput).")
    measured = _Family("driftwatch_measured_throughput_tokens_per_second",
                       "Throughput measured on the running server now (its journal or --probe).")
    accept = _Family("driftwatch_measured_accept_length",
                     "Speculative accept length measured on the running server now (journal or --probe).")
    since = _Family("driftwatch_finding_since_timestamp_seconds",
                    "Since when (Unix time) the unit's oldest current finding has been present without a "
                    "break, from the snapshot store.")
    hosts = _Family("driftwatch_hosts", "Hosts in the report by status.")
    run = {"report": report}  # the run-level series: a shard's also carry its slice (`shard="I/N"`)
    if doc.get("shard"):
        run["shard"] = str(doc["shard"])
    generated = doc.get("generated_at")
    try:
        last.add(dict(run), parse_utc(generated).timestamp() if generated else None)
    except ValueError:
        pass
    last.samples = [(labels, int(v)) for labels, v in last.samples if _is_number(v)]
    for h in view.hosts(doc):
        status = view.status(h)
        name = (view.comparison(h).get("baseline") or {}).get("name") \
            if isinstance(view.comparison(h).get("baseline"), dict) else None
        name = name or (h.get("baseline") if isinstance(h.get("baseline"), str) else None)  # a down unit's too
        where = {"report": report, "host": h.get("host") or "?", "unit": h.get("unit") or "?",
                 "baseline": name or "none"}
        for key in CONTAINER_LABELS:  # only on a container's or workload's series (a unit has none)
            if isinstance(h.get(key), str) and h.get(key):
                where[key] = h[key]
        if status == "no_baseline":
            read.add({**where, "status": "ok"}, 1)  # read and stored, not judged
            continue
        if status == "error":
            read.add({**where, "status": _status_label(h.get("failure"))}, 1)
            continue
        read.add({**where, "status": "ok"}, 1)
        drift.add(where, 1 if status == "drift" else 0)
        fs = view.findings(h)
        for severity in SEVERITIES:
            findings.add({**where, "severity": severity}, sum(1 for f in fs if f.get("severity") == severity))
        for severity in sorted({str(f.get("severity")) for f in fs} - set(SEVERITIES) - {"None"}):
            findings.add({**where, "severity": severity}, sum(1 for f in fs if f.get("severity") == severity))
        c = view.comparison(h)
        if _is_number(c.get("predicted_throughput_ratio")):
            ratio.add(where, c["predicted_throughput_ratio"])
            iv = c.get("predicted_throughput_interval")
            if isinstance(iv, (list, tuple)) and len(iv) == 2 and all(_is_number(v) for v in iv):
                bound.add({**where, "bound": "lo"}, iv[0])
                bound.add({**where, "bound": "hi"}, iv[1])
        if _is_number(c.get("predicted_throughput")):
            tps.add(where, c["predicted_throughput"])
        now = (c.get("target") or {}).get("metrics") if isinstance(c.get("target"), dict) else None
        if isinstance(now, dict):
            if _is_number(now.get("throughput")):
                measured.add(where, now["throughput"])
            if _is_number(now.get("accept_length")):
                accept.add(where, now["accept_length"])
        starts = []
        for f in fs:
            s = since_ if isinstance(since_ := f.get("since"), dict) else {}
            try:
                if s.get("at"):
                    starts.append(parse_utc(s["at"]).timestamp())
            except ValueError:
                pass
        if starts:
            since.add(where, int(min(starts)))
    counts = view.counts(doc)
    for key in ("drifted", "clean", "unreadable", "no_baseline"):
        if _is_number(counts.get(key)):
            hosts.add({**run, "status": key}, counts[key])
    lines = []
    for family in (last, read, drift, findings, ratio, bound, tps, measured, accept, since, hosts):
        lines += family.lines()
    return "\n".join(lines) + "\n"


__all__ = ["PrometheusFormat", "escape_label", "render_textfile", "report_label", "SEVERITIES"]
