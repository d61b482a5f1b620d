"""--ignore ID_OR_KEY and the .driftwatch.yaml ignore list (each entry needs a reason)."""
from __future__ import annotations

import json

from cli_helpers import EXAMPLES, assert_one_line_error

TEMPLATE = EXAMPLES / "ddtree" / "sglang-qwen.service"
LIVE = EXAMPLES / "ddtree" / "sglang-qwen-current.service"
SEED003_KEYS = {"env.CUDA_HOME", "env.PATH", "env.CUDA_VISIBLE_DEVICES", "mem_fraction_static"}


def keys(run):
    doc = json.loads(run.stdout)
    return {f["key"] for f in doc["findings"]}, {f["key"] for f in doc["ignored"]}


def test_ignore_by_rule_id(invoke):
    run = invoke("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, "--format", "json", "--ignore", "DW506")
    assert run.code == 1
    found, ignored = keys(run)
    assert found == {"env.CUDA_VISIBLE_DEVICES", "mem_fraction_static"}
    assert ignored == {"env.CUDA_HOME", "env.PATH"}


def test_ignore_by_key(invoke):
    run = invoke("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, "--format", "json", "--ignore",
                 "env.CUDA_HOME")
    found, ignored = keys(run)
    assert found == SEED003_KEYS - {"env.CUDA_HOME"} and ignored == {"env.CUDA_HOME"}


def test_ignore_lowercase_rule_id_and_glob(invoke):
    run = invoke("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, "--format", "json",
                 "--ignore", "dw203", "--ignore", "env.*")
    assert run.code == 0, run
    found, ignored = keys(run)
    assert found == set() and ignored == SEED003_KEYS


def test_ignore_everything_exits_0(invoke):
    run = invoke("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, "--ignore", "DW506", "--ignore", "DW504",
                 "--ignore", "DW203")
    assert run.code == 0, run
    assert "No drift" in run.stdout and "ignored" in run.stdout


def test_ignore_seed000_rule(invoke):
    from cli_helpers import BASELINES
    run = invoke("compare", "--baseline", "70toks", "--unit-file", EXAMPLES / "sglang-qwen-40toks.service",
                 "--baselines-dir", BASELINES, "--ignore", "DW201", "--format", "json")
    found, ignored = keys(run)
    assert "max_running_requests" not in found and ignored == {"max_running_requests"}
    assert run.code == 1  # the steps change remains


def test_dotfile_without_reason_exit2(dw, tmp_path):
    (tmp_path / ".driftwatch.yaml").write_text("ignore:\n  - rule: DW506\n")
    run = dw("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, cwd=tmp_path)
    assert_one_line_error(run, ".driftwatch.yaml", "reason")


def test_dotfile_entry_without_rule_or_key_exit2(dw, tmp_path):
    (tmp_path / ".driftwatch.yaml").write_text("ignore:\n  - reason: because\n")
    assert_one_line_error(dw("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, cwd=tmp_path),
                          ".driftwatch.yaml")


def test_dotfile_broken_yaml_exit2(dw, tmp_path):
    (tmp_path / ".driftwatch.yaml").write_text("ignore: [\n")
    assert_one_line_error(dw("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, cwd=tmp_path),
                          ".driftwatch.yaml", "line")


def test_dotfile_with_reasons_ignores(dw, tmp_path):
    (tmp_path / ".driftwatch.yaml").write_text(
        "ignore:\n"
        "  - rule: DW506\n    reason: the template is stale, CUDA comes from the venv\n"
        "  - key: env.CUDA_VISIBLE_DEVICES\n    reason: GPU1 died, pinned to 0,2\n"
        "  - rule: DW203\n    reason: lowered to fit the pinned pair\n")
    run = dw("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, "--format", "json", cwd=tmp_path)
    assert run.code == 0, run
    doc = run.json()
    assert doc["findings"] == [] and doc["drift"] is False
    reasons = {f["key"]: f["ignored_because"] for f in doc["ignored"]}
    assert reasons["env.CUDA_VISIBLE_DEVICES"] == "GPU1 died, pinned to 0,2"


def test_explicit_ignore_file(dw, tmp_path):
    cfg = tmp_path / "accepted.yaml"
    cfg.write_text("ignore:\n  - key: 'env.*'\n    reason: env managed elsewhere\n")
    run = dw("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, "--ignore-file", cfg, "--format", "json")
    assert run.code == 1
    assert {f["key"] for f in run.json()["findings"]} == {"mem_fraction_static"}
    assert_one_line_error(dw("compare", "--baseline", TEMPLATE, "--unit-file", LIVE, "--ignore-file",
                             tmp_path / "missing.yaml"), "missing.yaml")
