"""Rules tested by data (sqlfluff-style): tests/compare/fixtures/<RULE_ID>.yaml.

Each fixture file names its rule and holds cases:

    rule: DW101
    cases:
      - name: steps_3_to_1
        baseline_unit: |            # unit text (or baseline_file: path relative to the repo)
          [Service]
          ExecStart=...
        current_unit: |             # (or current_file:)
        baseline_metrics: {throughput: 70}      # optional
        current_metrics: {accept_length: 1.75}  # optional
        concurrency: 16                         # optional
        current_runtime: {need_daemon_reload: true}  # optional facts a live collector would add
        expect:                     # a finding that must be present (or a list of them)
          rule: DW101
          key: speculative_num_steps
          severity: high
          dimension: single-stream  # optional
          ratio: [0.45, 0.75]       # optional; `ratio: null` = no quantitative estimate
          rank: 1                   # optional; omitted = present anywhere
          current_display: ...      # optional; how the current side reads to a person
          explanation_contains: ... # optional
        findings: 1                 # optional: exact number of findings
        predicted_throughput: [30, 50]  # optional: range for the combined prediction
      - name: pass_alias
        pass: true                  # spelling only: no finding, no drift
        baseline_unit: ...
        current_unit: ...
        xfail: "BUG: ..."           # optional: a known bug, strict xfail

A new rule in rules/*.yaml must arrive with its fixture file (test_every_rule_has_a_fixture).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from driftwatch.findings.rulebook import UNKNOWN_RULE, load_rules
from driftwatch.report.wording import display_pair, explain

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
_CASE_KEYS = {"name", "baseline_unit", "current_unit", "baseline_file", "current_file", "baseline_metrics",
              "current_metrics", "concurrency", "current_runtime", "expect", "findings", "predicted_throughput",
              "pass", "xfail"}
_EXPECT_KEYS = {"rule", "key", "severity", "dimension", "ratio", "rank", "current_display",
                "baseline_display", "explanation_contains"}


def _load_fixture_files():
    files = sorted(FIXTURES.glob("*.yaml"))
    assert files, f"no fixture files in {FIXTURES}"
    return files


def _cases():
    params = []
    for path in _load_fixture_files():
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in data["cases"]:
            marks = []
            if case.get("xfail"):
                marks.append(pytest.mark.xfail(strict=True, reason=case["xfail"]))
            params.append(pytest.param(path.stem, case, id=f"{path.stem}-{case['name']}", marks=marks))
    return params


def _unit_text(case: dict, side: str) -> str:
    if f"{side}_file" in case:
        return (REPO / case[f"{side}_file"]).read_text(encoding="utf-8")
    return case[f"{side}_unit"]


def _describe(result) -> str:
    return "\n".join(f"  #{f.rank} {f.key} {f.rule.id} {f.rule.severity} ratio={f.throughput_ratio} "
                     f"dim={f.dimension}" for f in result.findings) or "  (no findings)"


def _check_expect(result, expect: dict) -> None:
    matches = [f for f in result.findings if f.key == expect["key"]]
    assert matches, f"no finding for {expect['key']}; got:\n{_describe(result)}"
    f = matches[0]
    got = _describe(result)
    assert f.rule.id == expect["rule"], got
    if "severity" in expect:
        assert f.rule.severity == expect["severity"], got
    if "dimension" in expect:
        assert f.dimension == expect["dimension"], got
    if "ratio" in expect:
        if expect["ratio"] is None:
            assert f.throughput_ratio is None, got
        else:
            lo, hi = expect["ratio"]
            assert f.throughput_ratio is not None and lo - 1e-9 <= f.throughput_ratio <= hi + 1e-9, got
    if expect.get("rank") not in (None, "present"):
        assert f.rank == expect["rank"], got
    base_display, cur_display = display_pair(f.difference)
    if "current_display" in expect:
        assert cur_display == expect["current_display"], (base_display, cur_display)
    if "baseline_display" in expect:
        assert base_display == expect["baseline_display"], (base_display, cur_display)
    if "explanation_contains" in expect:
        assert expect["explanation_contains"] in explain(f), explain(f)


@pytest.mark.parametrize("rule_id,case", _cases())
def test_rule_fixture(rule_id, case, compare_units):
    unknown = set(case) - _CASE_KEYS
    assert not unknown, f"unknown case keys {unknown}"
    result = compare_units(_unit_text(case, "baseline"), _unit_text(case, "current"),
                           baseline_metrics=case.get("baseline_metrics"),
                           current_metrics=case.get("current_metrics"), concurrency=case.get("concurrency"),
                           current_runtime=case.get("current_runtime"))
    if case.get("pass"):
        assert not result.findings, f"spelling-only difference reported as drift:\n{_describe(result)}"
        assert result.drift is False
        assert result.predicted_throughput_ratio == 1.0
        return
    expects = case["expect"] if isinstance(case["expect"], list) else [case["expect"]]
    for expect in expects:
        assert not set(expect) - _EXPECT_KEYS, f"unknown expect keys {set(expect) - _EXPECT_KEYS}"
    assert any(e["rule"] == rule_id for e in expects), "a fixture case must exercise its own rule"
    assert result.drift is True
    for expect in expects:
        _check_expect(result, expect)
    if "findings" in case:
        assert len(result.findings) == case["findings"], _describe(result)
    if "predicted_throughput" in case:
        lo, hi = case["predicted_throughput"]
        assert result.predicted_throughput is not None and lo <= result.predicted_throughput <= hi, \
            (result.predicted_throughput, _describe(result))
    ranks = [f.rank for f in result.findings]
    assert ranks == list(range(1, len(ranks) + 1))


def test_every_rule_has_a_fixture():
    """A new rule must come with tests/compare/fixtures/<ID>.yaml (sqlfluff habit)."""
    ids = {r.id for r in load_rules()} | {UNKNOWN_RULE.id}
    have = {p.stem for p in _load_fixture_files()}
    assert not ids - have, f"rules without a fixture file: {sorted(ids - have)}"
    assert not have - ids, f"fixture files for no rule: {sorted(have - ids)}"


@pytest.mark.parametrize("path", _load_fixture_files(), ids=lambda p: p.stem)
def test_fixture_file_shape(path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["rule"] == path.stem
    cases = data["cases"]
    assert any(not c.get("pass") for c in cases), f"{path.name} has no failing case for its rule"
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names must be unique within a file"
