"""The Prometheus textfile, checked by a real parser (prometheus_client's text parser, the one
Prometheus' own Python client ships), and written atomically by `report --prometheus FILE`."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from driftwatch.report import get_format
from driftwatch.report.prometheus import escape_label

parser = pytest.importorskip("prometheus_client.parser")  # in the [test] extra

REPO = Path(__file__).resolve().parents[2]
DRIFTWATCH = Path(sys.executable).with_name("driftwatch")


def parse(text: str) -> dict:
    """family name -> (type, help, [(labels, value)]), through the real parser."""
    families = {}
    for family in parser.text_string_to_metric_families(text):
        families[family.name] = (family.type, family.documentation,
                                 [(dict(s.labels), s.value) for s in family.samples])
    return families


def test_fleet_metrics_parse(fleet_doc):
    text = get_format("prometheus").render_fleet(fleet_doc)
    assert text.endswith("\n")
    families = parse(text)
    assert set(families) >= {"driftwatch_last_run_timestamp_seconds", "driftwatch_host_read", "driftwatch_drift",
                             "driftwatch_findings", "driftwatch_predicted_throughput_ratio",
                             "driftwatch_predicted_throughput_tokens_per_second", "driftwatch_hosts"}
    assert all(kind == "gauge" and help_text for kind, help_text, _ in families.values())
    # every family has its HELP and TYPE line, once, before its samples
    for name in families:
        assert text.count(f"# HELP {name} ") == 1 and text.count(f"# TYPE {name} gauge\n") == 1
    read = {(s["host"], s["status"]): v for s, v in families["driftwatch_host_read"][2]}
    assert read[("ct129", "ok")] == 1 and read[("ct130", "ok")] == 1
    assert [status for (host, status) in read if host == "ct200"] == ["error"]  # the entry names no failure kind
    findings = {(s["host"], s["severity"]): v for s, v in families["driftwatch_findings"][2]}
    assert findings[("ct129", "high")] == 1 and findings[("ct130", "high")] == 0
    assert {sev for (host, sev) in findings if host == "ct129"} >= {"high", "medium", "low", "info"}
    ratio = {s["host"]: v for s, v in families["driftwatch_predicted_throughput_ratio"][2]}
    assert ratio["ct129"] == pytest.approx(0.608, abs=0.01) and "ct200" not in ratio
    # the 80 % interval beside the point, as two series of one family (bound="lo" / "hi")
    bounds = {(s["host"], s["bound"]): v for s, v in families["driftwatch_predicted_throughput_ratio_bound"][2]}
    assert set(bounds) == {(host, b) for host in ratio for b in ("lo", "hi")}
    assert bounds[("ct129", "lo")] < ratio["ct129"] < bounds[("ct129", "hi")]
    drift = {s["host"]: v for s, v in families["driftwatch_drift"][2]}
    assert drift == {"ct129": 1, "ct130": 0}
    [(_, when)] = families["driftwatch_last_run_timestamp_seconds"][2]
    assert when > 1.7e9
    hosts = {s["status"]: v for s, v in families["driftwatch_hosts"][2]}
    assert hosts == {"drifted": 1, "clean": 1, "unreadable": 1, "no_baseline": 0}


def test_label_values_are_escaped(fleet_doc):
    doc = copy.deepcopy(fleet_doc)
    hostile = 'ct"129\\x\nnext'
    doc["hosts"][0]["host"] = hostile
    doc["hosts"][0]["unit"] = "a{b}=c,d"
    text = get_format("prometheus").render_fleet(doc)
    assert escape_label(hostile) == 'ct\\"129\\\\x\\nnext'
    hosts = {s["host"] for s, _ in parse(text)["driftwatch_host_read"][2]}
    assert hostile in hosts  # the parser reads back exactly what the report said
    assert all(line.count("\n") == 0 for line in text.splitlines())


def test_since_becomes_a_timestamp(fleet_doc):
    doc = copy.deepcopy(fleet_doc)
    drifted = next(h for h in doc["hosts"] if h["status"] == "drift")
    drifted["comparison"]["findings"][0]["since"] = {"at": "2026-11-28T03:00:00Z", "snapshot": "x.yaml"}
    [(labels, value)] = parse(get_format("prometheus").render_fleet(doc))[
        "driftwatch_finding_since_timestamp_seconds"][2]
    assert labels["host"] == drifted["host"] and value == 1795834800


def test_only_fleet_reports(seed_doc):
    fmt = get_format("prometheus")
    assert fmt.supports("fleet") and not fmt.supports("comparison") and not fmt.supports("history")
    with pytest.raises(Exception, match="fleet reports only"):
        fmt.render_comparison(seed_doc)


def test_report_writes_the_textfile_atomically(tmp_path):
    target = tmp_path / "textfile" / "driftwatch.prom"
    target.parent.mkdir()
    run = subprocess.run([str(DRIFTWATCH), "report", "--baseline", "70toks", "--unit-file",
                          "examples/sglang-qwen-40toks.service", "--unit-file", "examples/sglang-qwen-70toks.service",
                          "--unit-file", str(tmp_path / "missing.service"), "--format", "json",
                          "--store", str(tmp_path / "store"), "--prometheus", str(target)],
                         capture_output=True, text=True, cwd=REPO, timeout=120,
                         env={**os.environ, "HOME": str(tmp_path)})
    assert run.returncode == 2, run.stderr  # one unit file is unreadable
    assert os.listdir(target.parent) == ["driftwatch.prom"]  # no temp file left for the collector to read
    families = parse(target.read_text())
    report = json.loads(run.stdout)
    read = families["driftwatch_host_read"][2]
    assert len(read) == len(report["hosts"]) == 3
    assert {s["status"] for s, _ in read} == {"ok", "invalid_unit"}
    assert "driftwatch_predicted_throughput_ratio" in families
    bad = subprocess.run([str(DRIFTWATCH), "report", "--baseline", "70toks", "--unit-file",
                          "examples/sglang-qwen-40toks.service", "--prometheus", "/proc/nope/x.prom", "-q"],
                         capture_output=True, text=True, cwd=REPO, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert bad.returncode == 2 and "x.prom" in bad.stderr and "Traceback" not in bad.stderr


def test_what_the_running_server_measured_is_a_gauge(tmp_path):
    """`report` on the shipped live snapshot: the journal's throughput and accept length, as measured."""
    out = tmp_path / "dw.prom"
    r = subprocess.run([str(DRIFTWATCH), "report", "--unit-file", str(REPO / "examples/sglang-qwen-70toks.service"),
                        "--baseline", "70toks", "--prometheus", str(out), "--quiet"],
                       capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    assert "driftwatch_measured_throughput_tokens_per_second" not in out.read_text()  # a file: nothing measured
    from driftwatch.fileio import read_yaml
    from driftwatch.findings.judging import Judging
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.report.data import build_report
    from driftwatch.run.fleet import Judge
    from driftwatch.snapshots.baseline import load_baseline
    from driftwatch.snapshots.snapshot import snapshot_from_dict
    snap = snapshot_from_dict(read_yaml(REPO / "examples/snapshots/ct129-relaunched.yaml", "snapshot"), "example")
    base = load_baseline("70toks", REPO / "baselines")
    doc = build_report(base, [Judge(base, Judging(load_rules())).snapshot(snap)])
    families = parse(get_format("prometheus").render_fleet(doc))
    [(labels, tps)] = families["driftwatch_measured_throughput_tokens_per_second"][2]
    assert labels == {"report": "driftwatch", "host": "ct129", "unit": "sglang-qwen.service",
                      "baseline": "70toks"} and tps == 40.12
    assert families["driftwatch_measured_accept_length"][2][0][1] == 1.75
