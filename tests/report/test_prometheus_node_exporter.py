"""One Prometheus textfile per run, read by a real node_exporter's textfile collector (issue 22):
no scrape error for one file, none for several runs' files side by side (the `report` label keeps
their series apart), and the shipped Grafana dashboard asks only for metrics the file has."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from node_exporter_lab import MISSING, NODE_EXPORTER, node_exporter

from driftwatch.findings.judging import Judging
from driftwatch.report.data import build_report
from driftwatch.report.prometheus import render_textfile, report_label
from driftwatch.run.fleet import Judge
from driftwatch.run.reading import snapshot_from_unit_file

REPO = Path(__file__).resolve().parents[2]
UNIT_40 = REPO / "examples/sglang-qwen-40toks.service"
UNIT_70 = REPO / "examples/sglang-qwen-70toks.service"

pytestmark = pytest.mark.skipif(not NODE_EXPORTER, reason=MISSING)
DASHBOARD = REPO / "examples/grafana/driftwatch-dashboard.json"


def shard(baseline, rules, first: int) -> dict:
    judge = Judge(baseline, Judging(rules), pick=lambda h, u: None if h.endswith("nb") else baseline)
    drifted, clean = snapshot_from_unit_file(str(UNIT_40)), snapshot_from_unit_file(str(UNIT_70))
    entries = [judge.snapshot(replace(drifted, host=f"gpu{first + i}")) for i in range(3)]
    entries += [judge.snapshot(replace(clean, host=f"gpu{first + 3}")), judge.snapshot(replace(clean, host=f"gpu{first}nb"))]
    return build_report(baseline, entries)


def write(directory: Path, name: str, doc: dict) -> str:
    text = render_textfile(doc, report_label(str(directory / name)))
    (directory / name).write_text(text)
    return text


def test_node_exporter_reads_several_runs_side_by_side(tmp_path, baseline, rules):
    write(tmp_path, "driftwatch-a.prom", shard(baseline, rules, 0))
    write(tmp_path, "driftwatch-b.prom", shard(baseline, rules, 10))
    with node_exporter(tmp_path) as scrape:
        metrics = scrape()
    assert "node_textfile_scrape_error 0" in metrics
    assert 'driftwatch_hosts{report="driftwatch-a",status="drifted"} 3' in metrics
    assert 'driftwatch_hosts{report="driftwatch-b",status="no_baseline"} 1' in metrics
    assert 'driftwatch_drift{baseline="70toks",host="gpu11",report="driftwatch-b",unit="sglang-qwen.service"} 1' in metrics
    assert 'driftwatch_host_read{baseline="none",host="gpu0nb",report="driftwatch-a",status="ok",unit="sglang-qwen.service"} 1' in metrics


def test_without_the_report_label_two_runs_collide(tmp_path, baseline, rules):
    """The control: the same two files with the label taken out is what node_exporter refuses."""
    for name, first in (("a.prom", 0), ("b.prom", 10)):
        text = render_textfile(shard(baseline, rules, first), "x")
        (tmp_path / name).write_text(re.sub(r'report="x",?', "", text).replace("{}", ""))
    with node_exporter(tmp_path) as scrape:
        assert "node_textfile_scrape_error 1" in scrape()


def test_the_grafana_dashboard_asks_only_for_metrics_the_file_has(baseline, rules):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if v.get("definition")]
    wanted = {m for e in exprs for m in re.findall(r"\bdriftwatch_[a-z_]+", e)}
    text = render_textfile(shard(baseline, rules, 0))
    families = set(re.findall(r"^# TYPE (\S+)", text, re.M))
    families |= {"driftwatch_finding_since_timestamp_seconds", "driftwatch_predicted_throughput_ratio"}  # need a store / a model
    assert wanted and wanted <= families
    labels = {label for e in exprs for label in re.findall(r"(\w+)=~?\"", e)}
    assert labels <= {"report", "baseline", "status", "severity"}
