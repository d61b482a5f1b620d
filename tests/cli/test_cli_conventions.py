"""Issue 9 items 11, 12, 13, 15 and 16: labels and counts, ignore names, metric checks, output
conventions and option names, end to end through the installed `driftwatch`.

Each test failed before its fix: report rows all read `local sglang-qwen.service` and counted
(host, unit) pairs; `--ignore --speculative-num-steps`, `speculative.steps` or `--tp` silenced
nothing, silently; `accept_lenght=2` and `accept_length=0.5` were accepted; the text table was as
wide as its longest explanation; `--unit-file -` was "no such file"; errors under `--format json`
left stdout empty; `baseline list`/`rules list` had no `--format`; snapshot's hosts-at-once option
was spelled `--concurrency`; `baseline save` had no `--snapshot`.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_helpers import BASELINES, DRIFTWATCH, EXAMPLES, UNIT_70, Run, assert_one_line_error, unit_70, write

BASELINE_70 = BASELINES / "70toks.yaml"
UNIT_40 = EXAMPLES / "sglang-qwen-40toks.service"
LIVE = EXAMPLES / "ddtree" / "sglang-qwen-current.service"  # `systemctl cat` output, `# /…/sglang-qwen.service`


def run_stdin(args, text: str, cwd, env=None) -> Run:
    full_env = {k: v for k, v in os.environ.items() if k not in ("DRIFTWATCH_BASELINES", "DRIFTWATCH_DEBUG",
                                                                 "COLUMNS")}
    full_env.update(env or {})
    proc = subprocess.run([str(DRIFTWATCH), *map(str, args)], cwd=str(cwd), env=full_env, input=text,
                          capture_output=True, text=True, timeout=60)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def keys(doc: dict, part: str = "findings") -> set[str]:
    return {f["key"] for f in doc[part]}


# --------------------------------------------------------------------------- 11. labels and host counts

def test_11_report_labels_unit_files_by_the_path_given(dw, tmp_path):
    copy = write(tmp_path, "copy-of-40.service", UNIT_40.read_text(encoding="utf-8"))
    run = dw("report", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--unit-file", LIVE, "--unit-file", copy,
             "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    labels = [h["host"] for h in doc["hosts"]]
    assert labels == [str(UNIT_40), str(LIVE), str(copy)], labels  # not "local" ×3
    assert [h.get("file") for h in doc["hosts"]] == labels
    assert {h["unit"] for h in doc["hosts"]} == {"sglang-qwen.service"}  # the unit each file holds, as read
    text = dw("report", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--unit-file", LIVE)
    assert str(UNIT_40) in text.stdout and str(LIVE) in text.stdout, text


def test_11_host_counts_count_hosts_not_host_unit_pairs():
    from driftwatch.report.data import build_report, host_entry
    from driftwatch.snapshots.baseline import load_baseline
    base = load_baseline(str(BASELINE_70), BASELINES)
    entries = [host_entry("ct129", "a.service", "drift"), host_entry("ct129", "b.service", "clean"),
               host_entry("ct130", "a.service", "clean"), host_entry("ct130", "b.service", "clean"),
               host_entry("ct200", "a.service", "error", error="timeout", failure="timeout")]
    summary = build_report(base, entries)["summary"]
    assert (summary["hosts"], summary["drifted"], summary["clean"], summary["unreadable"]) == (3, 1, 1, 1)
    assert summary["units"] == {"total": 5, "drifted": 1, "clean": 3, "unreadable": 1, "no_baseline": 0}


def test_15_report_json_keeps_the_failure_kind_per_host():
    from driftwatch.collect.raw import RawUnit
    from driftwatch.findings.judging import Judging
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.run.fleet import Judge
    from driftwatch.snapshots.baseline import load_baseline
    base = load_baseline(str(BASELINE_70), BASELINES)
    raws = [RawUnit(host=h, unit="sglang-qwen.service", status=s, error="why") for h, s in (
        ("a", "unreachable"), ("b", "timeout"), ("c", "auth failed"), ("d", "host key refused"),
        ("e", "unit not found"))]
    raws.append(RawUnit(host="f", unit="sglang-qwen.service", status="ok", text="[Service]\nUser=x\n"))
    entries = [Judge(base, Judging(load_rules())).raw(raw) for raw in raws]
    assert [e["status"] for e in entries] == ["error"] * 6
    assert [e["failure"] for e in entries] == ["unreachable", "timeout", "auth failed", "host key refused",
                                               "unit not found", "invalid unit"]
    assert entries[1]["error"] == "b: sglang-qwen.service: timeout: why"


# --------------------------------------------------------------------------- 12. ignore by any name

@pytest.mark.parametrize("name", ["--speculative-num-steps", "speculative.steps", "speculative-steps",
                                  "DW101", "speculative_num_steps", "speculative.*"])
def test_12_ignore_by_flag_concept_rule_name_or_key(dw, name):
    run = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--format", "json", "--ignore", name)
    assert run.code == 1, run
    doc = run.json()
    assert "speculative_num_steps" in keys(doc, "ignored"), (name, doc["ignored"])
    assert "speculative_num_steps" not in keys(doc)
    assert doc["warnings"] == [] and run.stderr == "", run


def test_12_ignore_by_flag_alias_or_prefix(dw, tmp_path):
    cur = write(tmp_path, "tp4.service", unit_70(("--tp-size 2", "--tp-size 4")))
    for name in ("--tp", "--tensor-parallel-size", "parallel.tensor"):
        doc = dw("compare", "--baseline", BASELINE_70, "--unit-file", cur, "--format", "json",
                 "--ignore", name).json()
        assert keys(doc, "ignored") == {"tp_size"}, (name, doc)


def test_12_ignore_file_accepts_concept_and_flag_entries(dw, tmp_path):
    (tmp_path / ".driftwatch.yaml").write_text(
        "ignore:\n"
        "  - concept: speculative.steps\n    reason: trying one step on this host\n"
        "  - flag: --context-length\n    reason: the model's own limit is fine\n"
        "  - rule: max-running-requests\n    reason: computed by SGLang\n", encoding="utf-8")
    run = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--format", "json", cwd=tmp_path)
    assert run.code == 0, run
    assert keys(run.json(), "ignored") == {"speculative_num_steps", "context_length", "max_running_requests"}


def test_12_an_ignore_that_matches_nothing_is_a_warning_naming_it(dw, tmp_path):
    run = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--format", "json",
             "--ignore", "speculative.stpes", "--ignore", "DW101")
    assert run.code == 1, run
    doc = run.json()
    assert len(doc["warnings"]) == 1 and "speculative.stpes" in doc["warnings"][0], doc["warnings"]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("driftwatch: warning:") and "speculative.stpes" in lines[0]
    text = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--ignore", "--no-such-flag")
    assert any(line.startswith("warning: ") and "--no-such-flag" in line for line in text.stdout.splitlines())
    (tmp_path / ".driftwatch.yaml").write_text("ignore:\n  - key: env.NOT_THERE\n    reason: r\n", encoding="utf-8")
    fleet = dw("report", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--format", "json", cwd=tmp_path)
    assert fleet.code == 1, fleet
    assert any("env.NOT_THERE" in w for w in fleet.json()["warnings"]), fleet
    assert "env.NOT_THERE" in fleet.stderr


# --------------------------------------------------------------------------- 13. metric names and values

def test_13_unknown_metric_name_is_refused_with_the_known_names(dw):
    run = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--current-metric", "accept_lenght=2")
    assert_one_line_error(run, "accept_lenght", "accept_length", "throughput", "concurrency", "max_running_requests")
    assert_one_line_error(dw("baseline", "save", "x", "--unit-file", UNIT_70, "--metric", "thruput=70",
                             "--baselines-dir", "b"), "thruput", "throughput")


@pytest.mark.parametrize("pair", ["accept_length=0.5", "throughput=-1", "concurrency=0", "concurrency=1.5",
                                  "max_running_requests=0"])
def test_13_impossible_values_are_refused(dw, pair):
    run = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--current-metric", pair)
    assert_one_line_error(run, pair)


def test_13_accept_length_above_steps_plus_one_is_refused_not_clamped(dw, tmp_path):
    # the 40 tok/s unit runs 1 step: at most 2 tokens per step
    run = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--current-metric", "accept_length=2.5")
    assert_one_line_error(run, "--current-metric", "accept_length=2.5", "--speculative-num-steps 1", "2")
    ok = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--current-metric", "accept_length=1.75")
    assert ok.code == 1, ok
    base = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--baseline-metric", "accept_length=4.5")
    assert_one_line_error(base, "accept_length=4.5", "--speculative-num-steps 3")
    save = dw("baseline", "save", "x", "--unit-file", UNIT_70, "--metric", "accept_length=4.2",
              "--baselines-dir", tmp_path / "b")
    assert_one_line_error(save, "accept_length=4.2")
    assert not (tmp_path / "b" / "x.yaml").exists()


def test_13_a_figure_from_the_journal_is_not_refused(dw, tmp_path):
    """The journal's accept length belongs to the running process (maybe started with more steps):
    only figures the user gives are checked against the unit's steps."""
    import yaml
    saved = dw("snapshot", "--unit-file", UNIT_40, "--store", tmp_path / "store")
    path = saved.stdout.split("\t")[-1].strip()
    assert dw("store", "export", "--store", tmp_path / "store", "-o", tmp_path / "out").code == 0  # a database now
    path = tmp_path / "out" / Path(path).relative_to(tmp_path / "store")
    data = yaml.safe_load(open(path, encoding="utf-8"))
    data["runtime"]["measured"] = {"accept_length": 3.1}
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump(data), encoding="utf-8")
    run = dw("compare", "--baseline", BASELINE_70, "--snapshot", snap, "--format", "json")
    assert run.code == 1, run


# --------------------------------------------------------------------------- 15. output conventions

@pytest.mark.parametrize("columns", [60, 80, 100, 140])
def test_15_text_fits_the_terminal(dw, columns):
    run = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--current-metric", "accept_length=1.75",
             env={"COLUMNS": str(columns)})
    assert run.code == 1, run
    long = [line for line in run.stdout.splitlines() if len(line) > columns]
    assert not long, (columns, long)
    assert "E(3)=2.93" in run.stdout.replace("\n", " ")  # wrapped, not cut: the explanation is all there
    fleet = dw("report", "--baseline", BASELINE_70, "--unit-file", UNIT_40, "--unit-file", LIVE,
               env={"COLUMNS": str(columns)})
    assert fleet.code == 1, fleet
    assert not [line for line in fleet.stdout.splitlines() if len(line) > max(columns, 64)], fleet


def test_15_without_a_terminal_the_layout_is_unchanged(dw):
    wide = dw("compare", "--baseline", BASELINE_70, "--unit-file", UNIT_40)
    assert max(len(line) for line in wide.stdout.splitlines()) > 140  # pipes and files: the fixed layout


def test_15_unit_file_dash_reads_standard_input(tmp_path):
    text = LIVE.read_text(encoding="utf-8")
    run = run_stdin(["compare", "--baseline", BASELINE_70, "--unit-file", "-", "--format", "json"], text, tmp_path)
    assert run.code == 1, run
    assert run.json()["target"]["unit"] == "sglang-qwen.service"
    show = run_stdin(["show", "--unit-file", "-"], UNIT_70.read_text(encoding="utf-8"), tmp_path)
    assert show.code == 0 and "--speculative-num-steps" in show.stdout, show
    empty = run_stdin(["show", "--unit-file", "-"], "", tmp_path)
    assert_one_line_error(empty, "standard input")


def test_15_errors_under_format_json_are_json_on_stdout(dw):
    run = dw("compare", "--baseline", "no-such-baseline", "--unit-file", UNIT_40, "--format", "json",
             "--baselines-dir", BASELINES)
    assert_one_line_error(run, "no-such-baseline")
    doc = json.loads(run.stdout)
    assert doc["schema"] == "driftwatch.error/v1" and "no-such-baseline" in doc["error"]
    assert run.stderr.strip() == f"driftwatch: {doc['error']}"
    text = dw("compare", "--baseline", "no-such-baseline", "--unit-file", UNIT_40, "--baselines-dir", BASELINES)
    assert text.code == 2 and text.stdout == ""
    usage = dw("show", "--format=json")
    assert usage.code == 2 and json.loads(usage.stdout)["schema"] == "driftwatch.error/v1"


def test_15_baseline_list_and_rules_list_have_json(dw, tmp_path):
    run = dw("baseline", "list", "--format", "json", "--baselines-dir", BASELINES)
    assert run.code == 0, run
    doc = run.json()
    found = {b["name"]: b for b in doc["baselines"]}
    assert found["70toks"]["host"] == "ct129" and found["70toks"]["metrics"]["throughput"] == 70
    (tmp_path / "broken.yaml").write_text("schema: nope\n", encoding="utf-8")
    broken = dw("baseline", "list", "--format", "json", "--baselines-dir", tmp_path).json()
    assert broken["baselines"][0]["error"]
    rules = dw("rules", "list", "--format", "json")
    assert rules.code == 0, rules
    by_id = {r["id"]: r for r in rules.json()["rules"]}
    assert by_id["DW101"]["concepts"] == ["speculative.steps"] and "DW999" in by_id


# --------------------------------------------------------------------------- 16. option names

def test_16_snapshot_hosts_at_once_is_parallel(dw, tmp_path):
    store = tmp_path / "store"
    run = dw("snapshot", "--unit-file", UNIT_70, "--store", store, "--parallel", "4")
    assert run.code == 0 and run.stderr == "", run
    old = dw("snapshot", "--unit-file", UNIT_70, "--store", store, "--concurrency", "4")
    assert old.code == 0, old
    assert "deprecated" in old.stderr and "--parallel" in old.stderr
    assert "--concurrency" not in dw("snapshot", "--help").stdout
    both = dw("snapshot", "--unit-file", UNIT_70, "--store", store, "--concurrency", "4", "--parallel", "8")
    assert_one_line_error(both, "--parallel")


def test_16_baseline_save_reads_a_snapshot_with_snapshot(dw, tmp_path):
    store = tmp_path / "store"
    saved = dw("snapshot", "--unit-file", UNIT_70, "--host-name", "ct129", "--store", store)
    assert saved.code == 0, saved
    path = saved.stdout.split("\t")[-1].strip()
    for option in ("--snapshot", "--from"):
        run = dw("baseline", "save", f"b{option[2:]}", option, path, "--baselines-dir", tmp_path / "b")
        assert run.code == 0, run
    assert (tmp_path / "b" / "bsnapshot.yaml").exists() and (tmp_path / "b" / "bfrom.yaml").exists()


def test_python_dash_m_runs_the_same_command_as_the_console_script():
    """`python -m driftwatch.cli` (benchmarks time it; hosts without the script on PATH use it) is
    the console script: same output, same exit status."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    args = ["compare", "--baseline", "70toks", "--unit-file", "examples/sglang-qwen-40toks.service", "--format", "json"]
    via_m = subprocess.run([sys.executable, "-m", "driftwatch.cli", *args], cwd=repo, capture_output=True, text=True,
                           timeout=120)
    script = Path(sys.executable).parent / "driftwatch"
    via_script = subprocess.run([str(script), *args], cwd=repo, capture_output=True, text=True, timeout=120)
    assert via_m.returncode == via_script.returncode == 1, (via_m.stderr, via_script.stderr)
    strip = lambda text: [line for line in text.splitlines() if '"generated_at"' not in line]  # noqa: E731
    assert strip(via_m.stdout) == strip(via_script.stdout) and '"schema"' in via_m.stdout
