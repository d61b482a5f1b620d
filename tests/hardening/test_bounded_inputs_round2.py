"""Issue 21, item 3: every input bounded, second round. One bounded JSON loader and one bounded YAML
loader (fileio) for every parse; an engine config file capped before it is read; nothing saved that
cannot be read back; a hostile host name is one line. Times: benchmarks/README.md (fuzz.py, stalls.py)."""
from __future__ import annotations

import json
import os
import sys

import pytest
from cli_helpers import run_in_process

from driftwatch.collect.raw import RawUnit
from driftwatch.errors import InputError
from driftwatch.fileio import (
    MAX_JSON_DEPTH,
    MAX_NUMBER_CHARS,
    JSONLimitError,
    dump_yaml_readable,
    load_yaml_text,
    loads_json,
    read_yaml,
)
from driftwatch.snapshots.snapshot import build_snapshot

DW = os.path.join(os.path.dirname(sys.executable), "driftwatch")
VLLM = "[Service]\nExecStart=/usr/bin/vllm serve /m --config /etc/vllm/c.yaml\n"


def run(*args, env=None):
    proc = run_in_process(*args, env=env)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


def _alias_bomb(width=8, levels=7):
    text = 'a: &a [' + ",".join(['"xxxxxxxx"'] * width) + "]\n"
    for i in range(levels - 1):
        a, b = chr(97 + i), chr(98 + i)
        text += f"{b}: &{b} [" + ",".join([f"*{a}"] * width) + "]\n"
    return text


@pytest.mark.parametrize("text, words", [
    ("[" * 3000 + "]" * 3000, "nested deeper than"),
    ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "nested deeper than"),
    ('{"n": ' + "9" * 320 + "}", "a number of 320 characters"),
    ('{"n": 1.' + "5" * 200 + "}", "a number of"),
])
def test_json_over_a_bound_is_a_value_error(text, words):
    with pytest.raises(JSONLimitError, match=words):
        loads_json(text)


def test_json_within_bounds_is_plain_json():
    assert loads_json('{"a": [1, 2.5, "x", null, true], "b": ' + "9" * MAX_NUMBER_CHARS + "}")["a"] == [
        1, 2.5, "x", None, True]


def test_yaml_numbers_are_bounded_with_their_line():
    with pytest.raises(InputError, match=r"f.yaml:2: .*a number of 320 characters"):
        load_yaml_text("a: 1\nb: " + "9" * 320 + "\n", "f.yaml", "x")


@pytest.mark.parametrize("value", [
    "[" * 3000 + "]" * 3000,  # 6 KB deeply nested JSON flag value
    '{"num_speculative_tokens": ' + "9" * 320 + ', "method": "ngram"}',  # 320 digits in a dict-valued flag
    '{"a": ' * 2000 + "1" + "}" * 2000,
])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_hostile_flag_values_never_crash(tmp_path, value, engine):
    line = ("/usr/bin/vllm serve /m --speculative-config '%s'" if engine == "vllm" else
            "/usr/bin/python3 -m sglang.launch_server --model-path /m --json-model-override-args '%s'") % value
    unit = tmp_path / "s.service"
    unit.write_text(f"[Service]\nExecStart={line}\n")
    for command in (["show", "--unit-file", str(unit)], ["check", "--unit-file", str(unit)],
                    ["compare", "--baseline", str(unit), "--unit-file", str(unit)]):
        proc = run(*command)
        assert proc.returncode in (0, 1), proc.stderr


def test_an_alias_bomb_engine_config_is_one_warning_and_fast(tmp_path):
    """272-byte YAML that expands to millions of values: 164 s and 862 MB before."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb())
    unit = tmp_path / "v.service"
    unit.write_text(VLLM)
    proc = run("--engine-config", str(bomb), "show", "--unit-file", str(unit), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    config = [f for f in findings if f.get("flag") == "--config"]
    assert config and "expands to more than" in config[0]["message"], findings
    assert len(proc.stdout) < 200_000  # the expansion is nowhere in the output


@pytest.mark.parametrize("source", ["/dev/zero", "big"])
def test_engine_config_files_are_capped_before_they_are_read(tmp_path, source):
    path = "/dev/zero" if source == "/dev/zero" else str(tmp_path / "big.yaml")
    if source == "big":
        (tmp_path / "big.yaml").write_text("a: " + "x" * (70 << 10) + "\n")
    unit = tmp_path / "v.service"
    unit.write_text(VLLM)
    proc = run("--engine-config", path, "show", "--unit-file", str(unit))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "too large" in proc.stderr, proc.stderr
    proc = run("show", "--unit-file", str(unit), env={"DRIFTWATCH_ENGINE_CONFIG": path})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "too large" in proc.stderr, proc.stderr


def test_a_snapshot_that_could_not_be_read_back_is_never_saved(tmp_path):
    deep: dict = {}
    node = deep
    for _ in range(80):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(InputError, match="not saved: nested deeper"):
        dump_yaml_readable({"runtime": deep}, "snapshot of h:u")
    with pytest.raises(InputError, match="not saved: a number of"):
        dump_yaml_readable({"n": 10 ** 200}, "snapshot of h:u")
    with pytest.raises(InputError, match="not saved: .* bytes"):
        dump_yaml_readable({"t": "x" * 5000}, "snapshot of h:u", limit=1000)
    text = dump_yaml_readable({"a": [1, 2, {"b": "c"}]}, "snapshot")
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    assert read_yaml(path, "snapshot") == {"a": [1, 2, {"b": "c"}]}


def test_what_is_saved_reads_back(tmp_path):
    """A unit with a value at the bound: saved, and read back by the same loader."""
    value = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    unit = tmp_path / "s.service"
    unit.write_text("[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m "
                    f"--json-model-override-args '{value}'\n")
    store = tmp_path / "store"
    proc = run("snapshot", "--unit-file", str(unit), "--store", str(store))
    assert proc.returncode in (0, 2), proc.stderr
    for root, _, files in os.walk(store):
        for name in files:
            if name.endswith(".yaml"):
                read_yaml(os.path.join(root, name), "snapshot")  # never refused


@pytest.mark.parametrize("host", ["..", ".", "a..b", ".hidden", "a" * 64 + ".example"])
def test_hostile_host_names_are_one_line(tmp_path, host):
    proc = run("snapshot", "--host", host, "--unit", "x.service", "--store", str(tmp_path / "s"))
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "invalid host" in proc.stderr


def test_deep_model_config_is_one_line(tmp_path):
    from driftwatch.facts.model import load_model_config
    path = tmp_path / "config.json"
    path.write_text('{"a": ' * 3000 + "1" + "}" * 3000)
    with pytest.raises(InputError, match="over a limit|not valid JSON"):
        load_model_config(str(path))


def test_a_deep_model_config_from_a_host_is_facts_unknown():
    text = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m\n"
    raw = RawUnit(host="h", unit="s.service", text=text)
    raw.model_configs = {"/m": '{"a": ' * 3000 + "1" + "}" * 3000}
    snap = build_snapshot(raw)
    assert "model_facts" not in snap.runtime


def test_a_deep_state_file_is_one_line(tmp_path):
    from driftwatch.notify.state import load_state
    path = tmp_path / "state.json"
    path.write_text('{"a": ' * 3000 + "1" + "}" * 3000)
    with pytest.raises(InputError, match="state file .* not valid JSON"):
        load_state(str(path))


def test_temp_files_of_killed_saves_are_removed_by_the_next_save(tmp_path):
    """A store writes a new file name each time: the next save removes any killed save's temp file
    (nobody holds its lock), whatever target it was for; one a save is writing now stays."""
    import fcntl
    import time

    from driftwatch.fileio import STALE_TEMP_SECONDS, write_new
    killed = tmp_path / ".20261128T050000Z-00.yaml.k1ll3d_x.tmp"
    killed.write_text("half")
    old = time.time() - STALE_TEMP_SECONDS - 5
    os.utime(killed, (old, old))
    busy = tmp_path / ".20261128T060000Z-00.yaml.busy_123.tmp"
    busy.write_text("being written")
    os.utime(busy, (old, old))
    fd = os.open(busy, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a save in progress (another process would hold it the same way)
    try:
        pid = os.fork()
        if pid == 0:  # the next save, in another process (flock is per open file description)
            try:
                write_new(tmp_path / "20261128T070000Z-00.yaml", "x: 1\n")
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert not killed.exists() and busy.exists()
    assert (tmp_path / "20261128T070000Z-00.yaml").read_text() == "x: 1\n"
