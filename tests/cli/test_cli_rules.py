"""`rules list|show` and a user --rules directory merged over the shipped rules."""
from __future__ import annotations

import json

from cli_helpers import BASELINES, EXAMPLES, assert_one_line_error

from driftwatch.findings.rulebook import load_rules

U40 = EXAMPLES / "sglang-qwen-40toks.service"

OVERRIDE_DW101 = """\
rules:
  - id: DW101
    name: speculative-steps
    keys: [speculative_num_steps]
    severity: low
    dimension: single-stream
    model: speculative_steps
    explanation: "site rule: {label} {baseline} -> {current}"
"""


def test_rules_list_lists_every_id(invoke):
    run = invoke("rules", "list")
    assert run.code == 0
    ids = [r.id for r in load_rules()]
    assert len(ids) >= 30
    for rule_id in ids + ["DW999"]:
        assert rule_id in run.stdout


def test_rules_show(invoke):
    run = invoke("rules", "show", "DW101")
    assert run.code == 0
    assert "DW101" in run.stdout and "speculative_num_steps" in run.stdout and "high" in run.stdout
    by_name = invoke("rules", "show", "speculative-steps")
    assert by_name.code == 0 and "DW101" in by_name.stdout


def test_rules_list_prints_concepts_and_keys(invoke):
    run = invoke("rules", "list")
    header = run.stdout.splitlines()[0].split()
    assert header[-2:] == ["concepts", "keys"]
    line = next(ln for ln in run.stdout.splitlines() if ln.startswith("DW301"))
    assert "parallel.tensor" in line
    line = next(ln for ln in run.stdout.splitlines() if ln.startswith("DW403"))
    assert "kv.prefix_cache" in line and "radix_eviction_policy" in line


def test_rules_show_prints_each_concept_with_its_meaning(invoke):
    run = invoke("rules", "show", "DW301")
    assert run.code == 0
    assert "concepts:  parallel.tensor: tensor-parallel GPUs per replica" in run.stdout
    assert "parallel.pipeline: pipeline-parallel stages" in run.stdout
    assert "keys:      -" in run.stdout
    # a glob concept is expanded to the concepts it covers
    shown = invoke("rules", "show", "DW901").stdout
    assert "server.port (via server.*)" in shown and "model.served_name" in shown
    assert "unit.Service.User" in shown
    # the new rules
    assert "keys:      launcher.engine" in invoke("rules", "show", "engine-change").stdout
    assert "keys:      exec.argv" in invoke("rules", "show", "DW510").stdout


def test_rules_show_unknown_exit2(dw):
    assert_one_line_error(dw("rules", "show", "DW000"), "DW000")


def test_user_rule_overrides_severity(invoke, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "site.yaml").write_text(OVERRIDE_DW101)
    shown = invoke("rules", "show", "DW101", "--rules", tmp_path / "site")
    assert "severity:  low" in shown.stdout and "site.yaml" in shown.stdout
    run = invoke("compare", "--baseline", "70toks", "--unit-file", U40, "--baselines-dir", BASELINES,
                 "--rules", tmp_path / "site", "--format", "json")
    assert run.code == 1
    top = json.loads(run.stdout)["findings"][0]
    assert top["rule"] == "DW101" and top["severity"] == "low"
    assert top["explanation"].startswith("site rule: --speculative-num-steps 3 -> 1")


def test_user_rule_adds_new_id(invoke, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "extra.yml").write_text(
        "rules:\n  - id: ACME001\n    name: acme-context\n    keys: [context_length]\n    severity: high\n"
        "    dimension: capacity\n    model: kv_capacity\n    explanation: 'acme: {label}'\n")
    assert "ACME001" in invoke("rules", "list", "--rules", tmp_path / "site").stdout
    run = invoke("compare", "--baseline", "70toks", "--unit-file", U40, "--baselines-dir", BASELINES,
                 "--rules", tmp_path / "site", "--format", "json")
    rules = {f["key"]: f["rule"] for f in json.loads(run.stdout)["findings"]}
    assert rules["context_length"] == "ACME001"


def test_broken_user_rule_file_exit2_names_file(dw, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "broken.yaml").write_text("rules:\n  - id: DW101\n    name: x\n")
    args = ("compare", "--baseline", "70toks", "--unit-file", U40, "--baselines-dir", BASELINES, "--rules", site)
    assert_one_line_error(dw(*args), "broken.yaml")
    assert_one_line_error(dw("rules", "list", "--rules", site), "broken.yaml")
    (site / "broken.yaml").write_text("rules: [\n")
    assert_one_line_error(dw(*args), "broken.yaml", "line")
    (site / "broken.yaml").write_text("rules:\n  - id: DW101\n    name: x\n    keys: [a]\n    severity: huge\n"
                                      "    dimension: none\n    model: no_impact\n    explanation: x\n")
    assert_one_line_error(dw(*args), "broken.yaml", "severity")
    (site / "broken.yaml").write_text("rules:\n  - id: DW101\n    name: x\n    keys: [a]\n    severity: low\n"
                                      "    dimension: none\n    model: no_such_model\n    explanation: x\n")
    assert_one_line_error(dw(*args), "broken.yaml", "no_such_model")


def test_user_rule_by_concept_is_listed_and_shown(invoke, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "tp.yaml").write_text(
        "rules:\n  - id: ACME002\n    name: acme-parallel\n    concepts: [parallel.tensor, 'speculative.*']\n"
        "    severity: high\n    dimension: single-stream\n    model: parallelism\n    explanation: 'acme: {label}'\n")
    listed = invoke("rules", "list", "--rules", tmp_path / "site")
    assert listed.code == 0 and "ACME002" in listed.stdout
    shown = invoke("rules", "show", "ACME002", "--rules", tmp_path / "site")
    assert shown.code == 0 and "parallel.tensor" in shown.stdout
    assert "speculative.topk (via speculative.*)" in shown.stdout


def test_user_rule_without_keys_or_concepts_exit2_names_file(dw, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "empty.yaml").write_text("rules:\n  - id: ACME003\n    name: x\n    severity: low\n"
                                     "    dimension: none\n    model: no_impact\n    explanation: x\n")
    assert_one_line_error(dw("rules", "list", "--rules", site), "empty.yaml", "ACME003", "concepts", "keys")
    (site / "empty.yaml").write_text("rules:\n  - id: ACME003\n    name: x\n    concepts: [parallel.tensr]\n"
                                     "    severity: low\n    dimension: none\n    model: no_impact\n"
                                     "    explanation: x\n")
    assert_one_line_error(dw("rules", "show", "ACME003", "--rules", site), "empty.yaml", "parallel.tensr")


def test_missing_rules_dir_exit2(dw, tmp_path):
    assert_one_line_error(dw("rules", "list", "--rules", tmp_path / "nope"), "nope")
