"""No input stalls driftwatch: linear parsing, YAML limits, bounded host ranges, regular files only,
integers of sane size. Figures before/after: benchmarks/README.md (benchmarks/stalls.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from driftwatch.collect.raw import RawUnit
from driftwatch.errors import InputError
from driftwatch.fileio import load_yaml_text, read_yaml
from driftwatch.parse.unitfile import parse_unit_text
from driftwatch.snapshots.snapshot import build_snapshot

PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /m"


def cpu(fn):
    start = time.process_time()
    result = fn()
    return result, time.process_time() - start


def test_long_line_continuations_are_linear():
    text = "[Service]\nExecStart=" + PY + " \\\n --x 1" * 110000  # 1 MB: 5.7 s CPU before
    unit, seconds = cpu(lambda: parse_unit_text(text, name="s.service"))
    assert seconds < 1.5 and unit.assignments[0].value.count("--x") == 110000


def test_repeated_flags_are_linear():
    text = "[Service]\nExecStart=" + PY + " --tp 1" * 10000  # 70 KB: 22 s before
    snap, seconds = cpu(lambda: build_snapshot(RawUnit(host="h", unit="s.service", text=text)))
    assert seconds < 4
    assert snap.engine.flags["tp_size"].value == 1 and snap.engine.flags["tp_size"].flag == "--tp"


def test_a_flood_of_unknown_flags_is_one_finding_not_a_stall():
    text = "[Service]\nExecStart=" + PY + " --x 1" * 60000
    snap, seconds = cpu(lambda: build_snapshot(RawUnit(host="h", unit="s.service", text=text)))
    assert seconds < 8
    assert any("option words (the limit is" in i.message for i in snap.issues)


def _bomb(levels: int = 9) -> str:
    text = "a: &a [" + ",".join(["x"] * 9) + "]\n"
    for i in range(levels - 1):
        a, b = chr(97 + i), chr(98 + i)
        text += f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]\n"
    return text


@pytest.mark.parametrize("text, problem", [
    (_bomb(), "expands to more than"),
    ("[" * 5000 + "]" * 5000, "nested deeper than"),
    ("a: &a [*a]\n", "refers to a structure that contains it"),
    ("n: " + "9" * 5000 + "\n", "a number of 5000 characters"),  # (was "unusable value": now the
    # one number-length bound of every loader, with its line)
])
def test_yaml_bombs_and_depth_are_one_clear_error(text, problem):
    _, seconds = cpu(lambda: pytest.raises(InputError, load_yaml_text, text, "b.yaml", "baseline"))
    with pytest.raises(InputError, match=problem) as exc:
        load_yaml_text(text, "b.yaml", "baseline")
    assert str(exc.value).startswith("b.yaml")
    assert seconds < 2


def test_ordinary_anchors_still_work_and_driftwatch_never_writes_aliases():
    from driftwatch.fileio import dump_yaml
    assert load_yaml_text("d: &d {user: root}\nh: {<<: *d, port: 22}\n", "i.yaml", "x") == {
        "d": {"user": "root"}, "h": {"user": "root", "port": 22}}
    shared = ["a"]
    assert "&" not in dump_yaml({"x": shared, "y": shared})


@pytest.mark.parametrize("pattern, problem", [
    ("gpu[1:100000000]", "expands to more than 10000 hosts"),
    ("gpu[1:5:0]", "the step must be at least 1"),
    ("gpu[1:99999999999999]", "more than 9 digits"),
    ("r[1:200]n[1:200]", "expands to more than 10000 hosts"),
])
def test_ansible_host_ranges_are_bounded(tmp_path, pattern, problem):
    from driftwatch.collect.inventory import load_inventory
    path = tmp_path / "hosts.ini"
    path.write_text(f"[gpus]\n{pattern}\n")
    _, seconds = cpu(lambda: pytest.raises(InputError, load_inventory, path))
    with pytest.raises(InputError, match=problem):
        load_inventory(path)
    assert seconds < 1


def test_host_ranges_still_expand(tmp_path):
    from driftwatch.collect.inventory import load_inventory
    path = tmp_path / "hosts.ini"
    path.write_text("[gpus]\ngpu[01:03]\nn[a:b][1:2]\n")
    assert [t.name for t in load_inventory(path)] == ["gpu01", "gpu02", "gpu03", "na1", "na2", "nb1", "nb2"]


def test_a_fifo_in_the_baselines_dir_never_blocks(tmp_path):
    d = tmp_path / "baselines"
    d.mkdir()
    os.mkfifo(d / "stuck.yaml")
    driftwatch = os.path.join(os.path.dirname(sys.executable), "driftwatch")
    run = subprocess.run([driftwatch, "baseline", "list", "--baselines-dir", str(d)],
                         capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert "Traceback" not in run.stderr
    with pytest.raises(InputError, match="not a regular file"):
        read_yaml(d / "stuck.yaml", "baseline")


def test_integers_of_insane_size_are_a_finding():
    snap = build_snapshot(RawUnit(host="h", unit="s.service", text=(
        "[Service]\nExecStart=" + PY + " --max-running-requests " + "9" * 400 + "\n")))
    assert any(i.kind == "bad-value" and "--max-running-requests" in i.message for i in snap.issues)


def test_a_unit_larger_than_the_limit_is_refused_whoever_read_it():
    from driftwatch.fileio import MAX_TEXT_BYTES
    text = "[Service]\nExecStart=" + PY + "\n" + "# pad\n" * (MAX_TEXT_BYTES // 6 + 1)
    with pytest.raises(InputError, match="larger than the limit"):
        build_snapshot(RawUnit(host="h", unit="s.service", text=text, source="systemctl cat"))


def test_temp_files_a_killed_run_left_are_removed_by_the_next_write(tmp_path):
    from driftwatch.fileio import write_atomic
    target = tmp_path / "latest.yaml"
    stale = tmp_path / ".latest.yaml.abc123.tmp"
    fresh = tmp_path / ".latest.yaml.def456.tmp"  # maybe a run writing right now: left alone
    stale.write_text("half")
    fresh.write_text("half")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    write_atomic(target, "x: 1\n")
    assert not stale.exists() and fresh.exists() and target.read_text() == "x: 1\n"
