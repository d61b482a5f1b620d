"""The Grafana dashboard's host counts when several report files share node_exporter's textfile
directory (issue 34 item 8): its stat panels summed `driftwatch_hosts` over every file, so a host in
two reports (an hourly full run and a 5-minute run of some hosts, say) counted twice. They now count
distinct `host` labels of the per-host series. The files are written as `report --prometheus` writes
them, read by a real node_exporter (node_exporter_lab), and each panel's expression is evaluated by
Prometheus's own engine (`promtool test rules`, Debian's `prometheus` package) against what the
scrape returned; the expected counts are the report's own summary of the hosts of all files."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from node_exporter_lab import MISSING, NODE_EXPORTER, node_exporter

from driftwatch.findings.judging import Judging
from driftwatch.report.data import build_report, host_entry
from driftwatch.report.prometheus import render_textfile, report_label
from driftwatch.run.fleet import Judge
from driftwatch.run.reading import snapshot_from_unit_file

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "examples/grafana/driftwatch-dashboard.json"
UNIT_40 = REPO / "examples/sglang-qwen-40toks.service"
UNIT_70 = REPO / "examples/sglang-qwen-70toks.service"
PROMTOOL = os.environ.get("DW_PROMTOOL") or shutil.which("promtool")
STATS = {"Drifted hosts": "drifted", "Unreadable hosts": "unreadable", "Hosts without a baseline": "no_baseline",
         "Clean hosts": "clean"}

pytestmark = [pytest.mark.skipif(not NODE_EXPORTER, reason=MISSING),
              pytest.mark.skipif(not PROMTOOL, reason="needs promtool (apt-get install prometheus, or DW_PROMTOOL)")]


def _entries(baseline, rules, hosts: list[str], down: tuple[str, ...] = ()) -> list[dict]:
    """Units judged as `report` would: gpuN drifted for odd N, clean for even N, a `...nb` host with
    no baseline, and the `down` ones unreachable."""
    judge = Judge(baseline, Judging(rules), pick=lambda h, u: None if h.endswith("nb") else baseline)
    drifted, clean = snapshot_from_unit_file(str(UNIT_40)), snapshot_from_unit_file(str(UNIT_70))
    out = [judge.snapshot(replace(drifted if int(re.sub(r"\D", "", h)) % 2 else clean, host=h)) for h in hosts]
    out += [host_entry(h, "sglang-qwen.service", "error", error=f"{h}: unreachable", failure="unreachable")
            for h in down]
    return out


def _series(metrics: str) -> list[dict]:
    """promtool's input series: every driftwatch_ sample node_exporter served."""
    out = []
    for line in metrics.splitlines():
        m = re.fullmatch(r"(driftwatch_\w+(?:\{.*\})?) (\S+)", line)
        if m and m.group(2) not in ("NaN", "+Inf", "-Inf"):
            out.append({"series": m.group(1), "values": m.group(2)})
    return out


def _evaluate(tmp_path: Path, series: list[dict], checks: list[tuple[str, float]]) -> subprocess.CompletedProcess:
    """`promtool test rules`: each (expression, value) evaluated at the scrape's instant."""
    tests = {"rule_files": [], "evaluation_interval": "1m",
             "tests": [{"interval": "1m", "input_series": series,
                        "promql_expr_test": [{"expr": expr, "eval_time": "0m",
                                              "exp_samples": [{"labels": "{}", "value": value}]}
                                             for expr, value in checks]}]}
    path = tmp_path / "panels_test.yaml"
    path.write_text(yaml.safe_dump(tests))
    return subprocess.run([str(PROMTOOL), "test", "rules", str(path)], capture_output=True, text=True, timeout=120)


def _panels() -> dict[str, str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return {p["title"]: p["targets"][0]["expr"] for p in dashboard["panels"] if p["title"] in STATS}


@pytest.fixture
def textfiles(tmp_path, baseline, rules):
    """Three files in one textfile directory: an hourly run of gpu0-gpu5 and gpu0nb, a 5-minute run
    of gpu0-gpu2 (overlapping it) with gpu9 down, and a shard of other hosts (gpu10-gpu13)."""
    directory = tmp_path / "textfile"
    directory.mkdir()
    runs = {"hourly.prom": _entries(baseline, rules, ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu0nb"]),
            "quick.prom": _entries(baseline, rules, ["gpu0", "gpu1", "gpu2"], down=("gpu9",)),
            "shard-2.prom": _entries(baseline, rules, ["gpu10", "gpu11", "gpu12", "gpu13"])}
    docs = {}
    for name, entries in runs.items():
        docs[name] = build_report(baseline, entries)
        (directory / name).write_text(render_textfile(docs[name], report_label(str(directory / name))))
    distinct = {(e["host"], e["unit"]): e for entries in runs.values() for e in entries}
    union = build_report(baseline, list(distinct.values()))["summary"]
    with node_exporter(directory) as scrape:
        metrics = scrape()
    assert "node_textfile_scrape_error 0" in metrics
    return _series(metrics), docs, union


def test_stat_panels_count_each_host_once(tmp_path, textfiles):
    series, docs, union = textfiles
    assert union == {**union, "drifted": 5, "clean": 5, "unreadable": 1, "no_baseline": 1}, union
    checks = [(expr.replace("$report", ".*"), union[STATS[title]]) for title, expr in _panels().items()]
    assert len(checks) == 4
    r = _evaluate(tmp_path, series, checks)
    assert r.returncode == 0, r.stdout + r.stderr


def test_one_selected_report_counts_as_its_own_summary(tmp_path, textfiles):
    series, docs, _ = textfiles
    checks = []
    for name, doc in docs.items():
        for title, expr in _panels().items():
            checks.append((expr.replace("$report", name[:-5]), doc["summary"][STATS[title]]))
    r = _evaluate(tmp_path, series, checks)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_old_sum_counted_shared_hosts_twice(tmp_path, textfiles):
    """The control: what the panels used to ask adds the files up (gpu1 is in two of them)."""
    series, docs, union = textfiles
    summed = sum(doc["summary"]["drifted"] for doc in docs.values())
    assert summed > union["drifted"]
    r = _evaluate(tmp_path, series, [('sum(driftwatch_hosts{report=~".*",status="drifted"})', summed)])
    assert r.returncode == 0, r.stdout + r.stderr
    wrong = _evaluate(tmp_path, series, [(_panels()["Drifted hosts"].replace("$report", ".*"), summed)])
    assert wrong.returncode != 0  # the panel's answer is not the sum


def test_every_panel_parses_in_promql(tmp_path, textfiles):
    """Every target of the dashboard evaluates (promtool fails on a syntax error)."""
    series, _, _ = textfiles
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"].replace("$report", ".*").replace("$baseline", ".*")
             for p in dashboard["panels"] for t in p["targets"]]
    tests = {"rule_files": [], "evaluation_interval": "1m",
             "tests": [{"interval": "1m", "input_series": series,
                        "promql_expr_test": [{"expr": e, "eval_time": "0m", "exp_samples": []} for e in exprs]}]}
    path = tmp_path / "parse_test.yaml"
    path.write_text(yaml.safe_dump(tests))
    r = subprocess.run([str(PROMTOOL), "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert "parse error" not in r.stdout + r.stderr and "syntax" not in (r.stdout + r.stderr).lower(), r.stdout
