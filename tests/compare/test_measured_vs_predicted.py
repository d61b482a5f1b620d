"""Measured against predicted (issue 35): a measured change the drift explains is said to be explained; a
measured drop it does not explain is said not to be, with the host facts that differ from the baseline's,
in the comparison, its JSON, its summary and a fleet report (unexplained regressions listed first)."""
from __future__ import annotations

import re

import pytest
from cli_helpers import UNIT_70, unit_70  # the shipped 70 tok/s seed unit, edited (tests/cli is on pythonpath)

from driftwatch.findings.compare import compare
from driftwatch.findings.explained import EXPLAINED, NO_PREDICTION, NOT_EXPLAINED, differing_facts, judge
from driftwatch.report.data import build_report, comparison_to_dict, host_entry
from driftwatch.report.markdown import MarkdownFormat
from driftwatch.report.text import TextFormat
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import Baseline

UNIT = """[Service]
ExecStart=/opt/sglang/bin/python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size {tp} \
--port 30000{extra}
"""


def _gpus(n: int, name: str = "NVIDIA H100 80GB HBM3") -> list[dict]:
    return [{"index": i, "name": name, "memory_total": "81559 MiB"} for i in range(n)]


def _compare(tmp_path, rules, current_extra="", *, base_runtime=None, cur_runtime=None, measured_now=45.0):
    b, c = tmp_path / "baseline.service", tmp_path / "current.service"
    b.write_text(UNIT.format(tp=1, extra=""), encoding="utf-8")
    c.write_text(UNIT.format(tp=1, extra=current_extra), encoding="utf-8")
    return _judge(b, c, rules, base_runtime, cur_runtime, {"throughput": 100.0, "concurrency": 8.0}, measured_now)


def _judge(b, c, rules, base_runtime, cur_runtime, base_metrics, measured_now):
    bsnap, csnap = snapshot_from_unit_file(str(b)), snapshot_from_unit_file(str(c))
    bsnap.runtime.update(base_runtime or {})
    csnap.runtime.update(cur_runtime or {})
    base = Baseline(name="pair", snapshot=bsnap, metrics=base_metrics)
    return compare(base, csnap, rules, [], int(base_metrics["concurrency"]), None, {"throughput": measured_now})


def _seed(tmp_path, rules, measured_now):
    """The seed's pair (speculative steps 3 → 1, 70 tok/s at concurrency 1; predicted about ×0.61)."""
    b, c = tmp_path / "seed-baseline.service", tmp_path / "seed-current.service"
    b.write_text(UNIT_70.read_text(), encoding="utf-8")
    c.write_text(unit_70(("--speculative-num-steps 3", "--speculative-num-steps 1")), encoding="utf-8")
    return _judge(b, c, rules, None, None, {"throughput": 70.0, "concurrency": 1.0}, measured_now)


@pytest.fixture()
def rules(shipped_rules):
    return shipped_rules


def test_a_drop_with_no_configuration_drift_is_not_explained_and_names_the_host_facts_that_differ(tmp_path, rules):
    got = _compare(tmp_path, rules, base_runtime={"gpus": _gpus(2), "driver_version": "570.133"},
                   cur_runtime={"gpus": _gpus(1), "driver_version": "575.51"})
    assert [f.key for f in got.findings] == ["host.gpus"]  # a host fact, not a configuration change
    v = got.measured_vs_predicted
    assert v is not None and v.verdict == NOT_EXPLAINED and v.unexplained_regression
    assert v.measured == pytest.approx(0.45)
    assert v.interval[0] > v.measured  # nothing in the configuration moved: the prediction is ×1
    assert "GPUs 2 → 1" in v.look_at and "driver 570.133 → 575.51" in v.look_at
    doc = comparison_to_dict(got)
    assert doc["measured_vs_predicted"]["verdict"] == "not explained"
    assert doc["measured_vs_predicted"]["look_at"] == v.look_at
    assert ("measured ×0.45, the drift explains ×1.00: not explained by the configuration — look at: GPUs 2 → 1, "
            "driver 570.133 → 575.51") in doc["summary"], doc["summary"]


def test_a_drop_the_drift_explains_is_explained_and_one_it_does_not_is_not(tmp_path, rules):
    got = _seed(tmp_path, rules, 40.0)  # the seed measured 70 → 40 tok/s
    v = got.measured_vs_predicted
    assert v.verdict == EXPLAINED and v.interval[0] <= v.measured <= v.interval[1] and v.look_at == []
    worse = _seed(tmp_path, rules, 20.0).measured_vs_predicted  # ×0.29: far below what steps 3 → 1 cost
    assert worse.verdict == NOT_EXPLAINED and worse.unexplained_regression
    assert worse.interval == pytest.approx(v.interval)


def test_the_verdict_follows_the_interval_and_the_noise():
    assert judge(0.57, (0.51, 0.78), {}, {}).verdict == EXPLAINED
    assert judge(0.50, (0.51, 0.78), {}, {}).verdict == EXPLAINED  # within one run's noise of the edge
    far = judge(0.45, (0.95, 1.05), {"GPUs": "2"}, {"GPUs": "1"})
    assert far.verdict == NOT_EXPLAINED and far.look_at == ["GPUs 2 → 1"] and far.unexplained_regression
    faster = judge(1.4, (0.95, 1.05), {}, {})
    assert faster.verdict == NOT_EXPLAINED and not faster.unexplained_regression
    assert judge(0.5, None, {}, {}).verdict == NO_PREDICTION
    assert judge(None, (0.9, 1.1), {}, {}) is None
    assert differing_facts({"GPUs": "2", "driver": "570"}, {"GPUs": "2"}) == []
    assert differing_facts({"GPUs": "2", "driver": "570"}, {"GPUs": "1", "driver": "570"}) == ["GPUs 2 → 1"]


def test_a_fleet_report_lists_unexplained_regressions_first(tmp_path, rules):
    explained_host = _seed(tmp_path, rules, 40.0)
    (tmp_path / "b").mkdir()
    slow_clean = _compare(tmp_path / "b", rules, base_runtime={"gpus": _gpus(2)}, cur_runtime={"gpus": _gpus(1)})
    entries = [host_entry("a-drifted", "sglang.service", "drift", comparison_to_dict(explained_host)),
               host_entry("z-slow", "sglang.service", "clean", comparison_to_dict(slow_clean))]
    doc = build_report(explained_host.baseline, entries)
    text = TextFormat(width=160).render_fleet(doc)
    assert "z-slow" in text and "a-drifted" in text
    assert text.index("z-slow") < text.index("a-drifted"), text
    assert re.search(r"not explained by the configuration — look at: GPUs 2 → 1", " ".join(text.split())), text
    md = MarkdownFormat().render_fleet(doc)
    assert md.index("z-slow") < md.index("a-drifted")
