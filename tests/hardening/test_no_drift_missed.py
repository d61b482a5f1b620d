"""Issue 21, item 4: no drift missed. A flag no catalog types is compared by its spelled value; every
Exec hook is a unit key; what systemd itself refuses is said by check and compare (systemd-analyze
verify, when installed, is the oracle: it reads a file and starts no manager)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from cli_helpers import run_in_process

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ddtree")
PY = "/usr/bin/python3 -m sglang.launch_server --model-path /m --tp-size 2"


def run(*args):
    """The real entry point (its error handling included): exit code and stdout + stderr."""
    proc = run_in_process(*args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout + proc.stderr


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_the_shipped_ddtree_budget_change_is_drift(tmp_path):
    shadow = os.path.join(EXAMPLES, "sglang-qwen-ddtree-shadow.service")
    with open(shadow) as f:
        text = f.read()
    assert "--speculative-ddtree-budget 16" in text
    changed = write(tmp_path, "sglang-qwen-ddtree-shadow.service",
                    text.replace("--speculative-ddtree-budget 16", "--speculative-ddtree-budget 916"))
    code, out = run("compare", "--baseline", shadow, "--unit-file", changed, "--format", "json")
    assert code == 1, out
    import json
    findings = json.loads(out)["findings"]
    budget = [f for f in findings if f["flag"] == "--speculative-ddtree-budget"]
    assert len(budget) == 1 and str(budget[0]["baseline"]) == "16" and str(budget[0]["current"]) == "916"
    same, out = run("compare", "--baseline", shadow, "--unit-file", shadow)
    assert same == 0 and "No drift" in out


@pytest.mark.parametrize("baseline,current,kind", [
    ("--patched-flag 3", "", "removed"),
    ("", "--patched-flag=3", "added"),
    ("--patched-flag 3", "--patched-flag 4", "changed"),
    ("--patched-switch", "", "removed"),
])
def test_untyped_flags_added_removed_changed(tmp_path, baseline, current, kind):
    b = write(tmp_path, "b.service", f"[Service]\nExecStart={PY} {baseline}\n")
    c = write(tmp_path, "c.service", f"[Service]\nExecStart={PY} {current}\n")
    code, out = run("compare", "--baseline", b, "--unit-file", c, "--format", "json")
    import json
    findings = [f for f in json.loads(out)["findings"] if f["flag"].startswith("--patched")]
    assert code == 1 and len(findings) == 1, out
    found = findings[0]
    assert kind == ("added" if found["baseline"] is None else "removed" if found["current"] is None else "changed")


def test_untyped_flag_spelled_the_same_is_no_drift(tmp_path):
    b = write(tmp_path, "b.service", f"[Service]\nExecStart={PY} --patched-flag 3\n")
    code, out = run("compare", "--baseline", b, "--unit-file", b)
    assert code == 0 and "No drift" in out


@pytest.mark.parametrize("hook", ["ExecStartPre", "ExecStartPost", "ExecStopPost", "ExecReload", "ExecCondition"])
def test_exec_hooks_added_replaced_and_removed_are_drift(tmp_path, hook):
    plain = write(tmp_path, "a.service", f"[Service]\nExecStart={PY}\n")
    one = write(tmp_path, "b.service", f"[Service]\n{hook}=/usr/bin/nvidia-smi -pm 1\nExecStart={PY}\n")
    other = write(tmp_path, "c.service", f"[Service]\n{hook}=/usr/bin/nvidia-smi -pm 0\nExecStart={PY}\n")
    for b, c in ((plain, one), (one, plain), (one, other)):
        code, out = run("compare", "--baseline", b, "--unit-file", c)
        assert code == 1 and f"{hook}=" in out, out
    code, out = run("compare", "--baseline", one, "--unit-file", one)
    assert code == 0


def test_a_reset_hook_list_is_compared_as_systemd_runs_it(tmp_path):
    b = write(tmp_path, "b.service", f"[Service]\nExecStartPre=/bin/a\nExecStart={PY}\n")
    c = write(tmp_path, "c.service", f"[Service]\nExecStartPre=/bin/x\nExecStartPre=\nExecStartPre=/bin/a\n"
                                     f"ExecStart={PY}\n")
    code, out = run("compare", "--baseline", b, "--unit-file", c)
    assert code == 0, out


REFUSED = [
    ("WorkingDirectory=models\n", "WorkingDirectory= path is not absolute"),
    ("WorkingDirectory=%N/models\n", "WorkingDirectory= path is not absolute"),
    ("WorkingDirectory=%i/models\n", None),  # %i is empty outside a template: /models
    ("WorkingDirectory=/srv/../models\n", "WorkingDirectory= path is not normalized"),
    ("WorkingDirectory=relative\nWorkingDirectory=/srv\n", "WorkingDirectory= path is not absolute"),
    (f"ExecStart={PY}\n", "more than one ExecStart="),
]
ACCEPTED = ["WorkingDirectory=~\n", "WorkingDirectory=-models\n", "WorkingDirectory=/srv/models\n",
            "WorkingDirectory=-~\n", "WorkingDirectory=\n"]


def _verify(path):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        return None
    proc = subprocess.run([tool, "verify", "--man=no", path], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SYSTEMD_UNIT_PATH": os.path.dirname(path) + ":"})
    return "fatal error" not in proc.stderr and "bad unit file setting" not in proc.stderr


@pytest.mark.parametrize("extra,message", REFUSED)
def test_check_and_compare_say_what_systemd_refuses(tmp_path, extra, message):
    unit = write(tmp_path, "s.service", f"[Service]\n{extra}ExecStart={PY}\n")
    if message is None:  # looks wrong, is fine
        assert _verify(unit) in (None, True)
        assert "systemd will not load" not in run("check", "--unit-file", unit)[1]
        return
    assert _verify(unit) in (None, False)  # the oracle agrees: systemd refuses it
    code, out = run("check", "--unit-file", unit)
    assert code == 1 and message in out and "systemd will not load this unit" in out, out
    good = write(tmp_path, "good.service", f"[Service]\nExecStart={PY}\n")
    code, out = run("compare", "--baseline", good, "--unit-file", unit, "--format", "json")  # a finding, not trouble
    assert code == 1 and message in out and '"DW002"' in out, out


@pytest.mark.parametrize("extra", ACCEPTED)
def test_what_systemd_accepts_is_not_refused(tmp_path, extra):
    unit = write(tmp_path, "s.service", f"[Service]\n{extra}ExecStart={PY}\n")
    assert _verify(unit) in (None, True)
    code, out = run("check", "--unit-file", unit)
    assert "systemd would refuse" not in out and "systemd will not load" not in out, out


def test_keys_of_every_section_are_compared(tmp_path):
    b = write(tmp_path, "b.service", f"[Unit]\nAfter=network.target\n[Service]\nExecStart={PY}\n"
                                     "[Install]\nWantedBy=multi-user.target\n")
    c = write(tmp_path, "c.service", f"[Unit]\nAfter=network.target\nRequires=nvidia-persistenced.service\n"
                                     f"[Service]\nExecStart={PY}\n[Install]\nWantedBy=default.target\n")
    code, out = run("compare", "--baseline", b, "--unit-file", c)
    assert code == 1 and "Unit.Requires=" in out and "Install.WantedBy=" in out, out


def test_a_baseline_saved_before_every_key_was_kept_is_not_drift_by_itself(tmp_path):
    """A snapshot file without `all_unit_keys` kept [Service] keys only: keys it never recorded are
    not reported as added."""
    import yaml

    from driftwatch.collect.raw import RawUnit
    from driftwatch.snapshots.snapshot import build_snapshot, snapshot_to_dict
    text = f"[Unit]\nAfter=network.target\n[Service]\nExecStartPre=/bin/true\nUser=llm\nExecStart={PY}\n"
    data = snapshot_to_dict(build_snapshot(RawUnit(host=None, unit="s.service", text=text)))
    assert data["all_unit_keys"] is True and "Unit.After" in data["unit_keys"]
    del data["all_unit_keys"]
    data["unit_keys"] = {k: v for k, v in data["unit_keys"].items()
                         if k.startswith("Service.") and not k.startswith("Service.Exec")}
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(data))
    unit = write(tmp_path, "s.service", text)
    code, out = run("compare", "--baseline", str(old), "--unit-file", unit)
    assert code == 0 and "No drift" in out, out
    changed = write(tmp_path, "t.service", text.replace("User=llm", "User=root"))
    code, out = run("compare", "--baseline", str(old), "--unit-file", changed)
    assert code == 1 and "User=" in out, out


def test_thousands_of_unknown_flags_are_told_but_none_is_dropped(tmp_path):
    """Past MAX_UNTYPED_FINDINGS the rest are one finding whose details carry every one of them, and
    the start-up finding names a few problems and keeps all in its details: the report stays readable
    (it was one finding, and one sentence, per flag) and no changed flag is missing."""
    import json

    from driftwatch.diff.flags import MAX_UNTYPED_FINDINGS
    n = 300
    base = write(tmp_path, "a.service", f"[Service]\nExecStart={PY} " + " ".join(f"--zz-{i} {i}" for i in range(n)) + "\n")
    cur = write(tmp_path, "b.service", f"[Service]\nExecStart={PY} " + " ".join(f"--zz-{i} {i + 1}" for i in range(n)) + "\n")
    code, out = run("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert code == 1, out[-500:]
    findings = json.loads(out)["findings"]
    single = {f["flag"]: f for f in findings if (f["key"] or "").startswith("untyped.--")}
    folded = [f for f in findings if f["key"] == "untyped.*"]
    assert len(single) == MAX_UNTYPED_FINDINGS - 1 and len(folded) == 1
    told = set(single) | set(folded[0]["details"])
    assert told == {f"--zz-{i}" for i in range(n)}  # every changed flag, once
    assert all(str(v["current"]) == str(int(k[5:]) + 1) for k, v in folded[0]["details"].items())


def test_a_saved_snapshot_of_4000_unknown_flags_lists_them_in_few_entries_and_misses_no_drift(tmp_path):
    """The saved snapshot keeps the first ISSUES_IN_FULL issues of untyped flags one entry each
    and the rest one entry naming them all (it held one ~200-byte entry per flag: 1.4 MB of YAML for a
    98 KB unit). Read back, every flag is still compared by its spelled value."""
    from driftwatch.collect.raw import RawUnit
    from driftwatch.diff.flags import untyped_flags
    from driftwatch.engines.config import ISSUES_IN_FULL
    from driftwatch.fileio import dump_yaml_readable, load_yaml_text
    from driftwatch.snapshots.snapshot import build_snapshot, snapshot_from_dict, snapshot_to_dict
    n = 4000

    def snap(offset):
        text = f"[Service]\nExecStart={PY} " + " ".join(f"--zz-{i} {i + offset}" for i in range(n)) + "\n"
        return build_snapshot(RawUnit(host="h", unit="u.service", text=text, source="file", paths=[]), origin="t")

    base, cur = snap(0), snap(1)
    assert sum(i.kind == "unknown-flag" for i in base.issues) == n  # in memory: one issue per flag, as before
    saved = snapshot_to_dict(base)
    untyped = [i for i in saved["issues"] if i["kind"] == "unknown-flag"]
    assert len(saved["issues"]) <= ISSUES_IN_FULL + 5 and len(untyped) == ISSUES_IN_FULL + 1
    assert f"{n - ISSUES_IN_FULL} more" in untyped[-1]["message"]
    named = set(untyped[-1]["message"].split(": ", 1)[1].split()) | {i["flag"] for i in untyped[:-1]}
    assert named == {f"--zz-{i}" for i in range(n)}  # every flag named once
    again = snapshot_from_dict(load_yaml_text(dump_yaml_readable(saved, "t"), "t", "snapshot"), "t")
    before, after = untyped_flags(again.engine), untyped_flags(cur.engine)
    assert len(before) == len(after) == n
    assert all(before[f"--zz-{i}"] == str(i) and after[f"--zz-{i}"] == str(i + 1) for i in range(n))
    from driftwatch.diff.flags import diff_untyped
    diffs = diff_untyped(again.engine, cur.engine)
    told = {d.label for d in diffs if d.key != "untyped.*"} | set(
        next(d for d in diffs if d.key == "untyped.*").details)
    assert told == {f"--zz-{i}" for i in range(n)}


def test_folded_unknown_flags_count_what_each_side_sets(tmp_path):
    """Added, removed and changed untyped flags past MAX_UNTYPED_FINDINGS: the folded finding's two sides
    say how many of them each unit sets, and its details hold each with both values (None where unset)."""
    import json
    base = write(tmp_path, "a.service", f"[Service]\nExecStart={PY} " + " ".join(f"--zz-{i} {i}" for i in range(100)) + "\n")
    cur = write(tmp_path, "b.service", f"[Service]\nExecStart={PY} " + " ".join(
        f"--zz-{i} {i + 1}" for i in range(50, 150)) + "\n")
    code, out = run("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert code == 1, out[-500:]
    findings = json.loads(out)["findings"]
    folded = next(f for f in findings if f["key"] == "untyped.*")
    single = [f for f in findings if (f["key"] or "").startswith("untyped.--")]
    details = folded["details"]
    assert len(details) + len(single) == 150
    assert folded["baseline"] == f"{sum(v['baseline'] is not None for v in details.values())} set"
    assert folded["current"] == f"{sum(v['current'] is not None for v in details.values())} set"
    assert {v["baseline"] is None for v in details.values()} == {True, False}  # added ones and others folded
    assert {v["current"] is None for v in details.values()} == {True, False}  # removed ones too


def test_a_1000_key_json_value_is_named_key_by_key_in_few_entries_everywhere():
    """1 000 keys vLLM refuses in `--speculative-config` are 1 000 start-up problems: `show` (text and
    JSON), the `engine.startup` finding's details and the saved snapshot list the first ISSUES_IN_FULL one
    by one and the rest in one entry that names every key (one entry each made the reports 1.5 MB)."""
    import json as json_

    from driftwatch.collect.raw import RawUnit
    from driftwatch.engines.config import ISSUES_IN_FULL
    from driftwatch.findings.compare import compare
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.report.data import comparison_to_dict
    from driftwatch.report.show import render_show
    from driftwatch.snapshots.baseline import Baseline
    from driftwatch.snapshots.snapshot import build_snapshot, snapshot_to_dict
    n = 1000
    value = json_.dumps({f"k{i}": i for i in range(n)})
    text = f"[Service]\nExecStart=/usr/bin/vllm serve /m --speculative-config '{value}'\n"
    snap = build_snapshot(RawUnit(host="h", unit="v.service", text=text, source="file", paths=[]), origin="t")
    clean = build_snapshot(RawUnit(host="h", unit="v.service", text="[Service]\nExecStart=/usr/bin/vllm serve /m\n",
                                   source="file", paths=[]), origin="t")
    assert sum(i.kind == "startup-crash" for i in snap.issues) == n  # in memory: one issue per key
    keys = {f"speculative_config.k{i}" for i in range(n)}

    def named(entries):
        crashes = [e for e in entries if e["kind"] == "startup-crash"]
        assert len(crashes) <= ISSUES_IN_FULL + 1 and f"{n - ISSUES_IN_FULL} more (startup-crash)" in crashes[-1]["message"]
        return {e["key"] for e in crashes[:-1]} | set(crashes[-1]["message"].split(": ", 1)[1].split())

    doc = comparison_to_dict(compare(Baseline(name="b", snapshot=clean), snap, load_rules(None)))
    details = next(f for f in doc["findings"] if f["key"] == "engine.startup")["details"]["problems"]
    for entries in (json_.loads(render_show(snap, "json", False))["findings"], snapshot_to_dict(snap)["issues"], details):
        assert named(entries) == keys
    shown = render_show(snap, "text", False)
    assert shown.count("[error] startup-crash") == ISSUES_IN_FULL + 1 and "speculative_config.k999" in shown
