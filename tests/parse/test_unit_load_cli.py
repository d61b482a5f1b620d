"""Issue 34, item 7 end to end: what `check`, `compare` and a saved snapshot say about a unit systemd
refuses to load, and about an EnvironmentFile= that was not read."""
from __future__ import annotations

import json

from cli_helpers import run_in_process

PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/Qwen3.6-27B --tp-size 2"


def run(*args: str, cwd: str | None = None) -> tuple[int, str, str]:
    proc = run_in_process(*args, cwd=cwd, env={"COLUMNS": "200"})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_user_instance_specifier_outside_a_template_is_refused(tmp_path):
    unit = write(tmp_path, "qwen.service", f"[Service]\nUser=%i\nRootDirectory=srv\nExecStart={PY}\n")
    code, out, _ = run("check", "--unit-file", unit)
    lines = out.splitlines()
    assert code == 1, out
    assert sum("error: systemd will not load this unit:" in line for line in lines) == 2, out  # one per reason
    assert "Invalid user/group name or numeric ID" in out and "RootDirectory= path is not absolute" in out
    assert lines[-1].endswith("systemd will not load this unit (2 problems)"), out
    doc = json.loads(run("check", "--unit-file", unit, "--format", "json")[1])
    assert doc["starts"] is False and {e["kind"] for e in doc["errors"]} == {"systemd-refuses"}

    good = write(tmp_path, "good.service", f"[Service]\nUser=sglang\nExecStart={PY}\n")
    code, out, _ = run("compare", "--baseline", good, "--unit-file", unit, "--format", "json")
    assert code == 1
    findings = json.loads(out)["findings"]
    assert findings[0]["rule"] == "DW002" and findings[0]["severity"] == "high", findings[0]
    assert "systemd will not load this unit" in json.dumps(findings[0])
    assert run("check", "--unit-file", good)[0] == 0


def test_a_saved_snapshot_keeps_the_refusal_and_the_unknown_values():
    from driftwatch.collect.raw import RawUnit
    from driftwatch.fileio import dump_yaml, load_yaml_data
    from driftwatch.report.check import problems
    from driftwatch.snapshots.snapshot import build_snapshot, snapshot_from_dict, snapshot_to_dict

    text = f"[Service]\nUser=%i\nEnvironmentFile=/etc/dw-absent/qwen.env\nExecStart={PY} --dtype ${{DTYPE}}\n"
    snap = build_snapshot(RawUnit(host="gpu01", unit="qwen.service", text=text, source="file"))
    again = snapshot_from_dict(load_yaml_data(dump_yaml(snapshot_to_dict(snap))), "snap.yaml")
    for s in (snap, again):
        errors, warnings = problems(s)
        assert [e.kind for e in errors] == ["systemd-refuses"], errors
        assert [w.message for w in warnings] == [
            "--dtype: value unknown (EnvironmentFile=/etc/dw-absent/qwen.env not readable)"], warnings
    assert again.load_errors == snap.load_errors and again.unknown_variables == ["DTYPE"]


def test_an_unread_environment_file_makes_values_unknown_not_errors(tmp_path):
    text = (f"[Service]\nEnvironment=MEM=0.8\nEnvironmentFile=/etc/dw-absent/qwen.env\n"
            f"ExecStart={PY} --dtype ${{DTYPE}} --mem-fraction-static $MEM\n")
    unit = write(tmp_path, "qwen.service", text)
    code, out, _ = run("check", "--unit-file", unit)
    warnings = [line for line in out.splitlines() if ": warning: " in line]
    assert code == 0, out  # no "SGLang would refuse to start" because of --dtype ''
    assert "error" not in out, out
    # ONE warning naming the file and the flags (MEM too: the file comes after Environment= and may override it)
    assert warnings == [f"{unit}: warning: --dtype, --mem-fraction-static: value unknown "
                        "(EnvironmentFile=/etc/dw-absent/qwen.env not readable)"], out

    base = write(tmp_path, "base.service", f"[Service]\nExecStart={PY} --dtype bfloat16\n")
    code, out, _ = run("compare", "--baseline", base, "--unit-file", unit, "--format", "json")
    rules = [f["rule"] for f in json.loads(out)["findings"]]
    assert "DW001" not in rules, rules  # the engine is not said to refuse to start


def test_an_optional_environment_file_is_ignored_as_systemd_ignores_it(tmp_path):
    unit = write(tmp_path, "qwen.service", "[Service]\nEnvironmentFile=-/etc/dw-absent/qwen.env\n"
                                           f"ExecStart={PY} --dtype ${{DTYPE}}\n")
    code, out, _ = run("check", "--unit-file", unit)
    assert "not readable" not in out, out
    assert code == 1 and "--dtype ''" in out, out  # systemd starts it with DTYPE unset: the engine refuses


def test_no_file_no_variable_no_warning(tmp_path):
    unit = write(tmp_path, "qwen.service", f"[Service]\nExecStart={PY}\n")
    code, out, _ = run("check", "--unit-file", unit)
    assert code == 0 and "warning" not in out, out
