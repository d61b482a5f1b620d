"""vLLM `--config FILE` fetched from the host like an EnvironmentFile= (issue 10, item 1): over a
real sshd on 127.0.0.1 (tests/collect/dw_sshlab.py), bounded, regular files only, a
missing file a warning; its values typed with the command line winning, and a drift inside the file
found by `compare`."""
from __future__ import annotations

import os
import textwrap

import pytest

from driftwatch.collect.commands import MAX_ENV_FILE_BYTES
from driftwatch.collect.fleet import collect_fleet
from driftwatch.collect.inventory import HostTarget
from driftwatch.collect.local import render_unit_text
from driftwatch.collect.raw import RawUnit
from driftwatch.findings.compare import compare
from driftwatch.snapshots.baseline import Baseline
from driftwatch.engines.files import NO_FILES
from driftwatch.engines.vllm import config_file
from driftwatch.engines.config import EXPLICIT
from driftwatch.findings.rulebook import load_rules
from driftwatch.snapshots.snapshot import build_snapshot
from driftwatch.snapshots.reader import EngineReader

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do

UNIT = "vllm-cfg.service"
CFG = "/root/vllm/qwen.yaml"


def vllm_unit(config_word: str = f"--config {CFG}") -> str:
    return textwrap.dedent(f"""\
        [Unit]
        Description=vLLM with a config file

        [Service]
        ExecStart=/root/vllm/bin/vllm serve Qwen/Qwen3-8B \\
            {config_word} \\
            --tensor-parallel-size 2
        """)


def yaml_text(seqs: int, tp: int = 4) -> str:
    return f"max-num-seqs: {seqs}\ntensor-parallel-size: {tp}\ngpu-memory-utilization: 0.85\n"


# ---------------------------------------------------------------- a fetched file, read by the snapshot

def fetched(cfg_text: str | None = None, problem: str | None = None) -> RawUnit:
    """The unit as a collector brings it back with its `--config` file fetched (or why not)."""
    path = f"/etc/systemd/system/{UNIT}"
    return RawUnit(host="h", unit=UNIT, text=render_unit_text([(path, vllm_unit())]), source="disk",
                   paths=[path], engine_files={CFG: cfg_text} if cfg_text is not None else {},
                   engine_file_problems={CFG: problem} if problem else {})


def test_a_fetched_config_file_is_read_cli_wins():
    snap = build_snapshot(fetched(yaml_text(64)))
    flags = snap.engine.flags
    assert flags["max_num_seqs"].value == 64 and flags["max_num_seqs"].source == EXPLICIT
    assert flags["max_num_seqs"].note == f"from --config {CFG}"
    assert flags["tensor_parallel_size"].value == 2  # the command line wins over the file
    assert not [i for i in snap.issues if i.kind == "engine-config"]
    # the snapshot carries the file's settings: re-read from its own argv, no file needed
    assert any(w.startswith(config_file.PAYLOAD_PREFIX) for w in snap.launcher.engine_argv)


def test_fetched_files_are_per_unit_only():
    build_snapshot(fetched(yaml_text(64)), files=NO_FILES)
    assert NO_FILES.text(CFG) is None  # nothing leaks to the next unit or host


# ---------------------------------------------------------------- over a real sshd

def target(server, units):
    return HostTarget(name="vllm-host", address=server.address, user="root", port=server.port, units=list(units))


def collect(server, opts, unit=UNIT):
    raw = collect_fleet([(target(server, [unit]), unit)], opts, reader=READER)[0]
    assert raw.status == "fallback", raw.error
    return raw


def test_config_file_drift_found_over_ssh(loopback, known_hosts, options):
    loopback.write(f"/etc/systemd/system/{UNIT}", vllm_unit())
    loopback.write(CFG, yaml_text(64))
    opts = options(known_hosts(loopback))
    before = collect(loopback, opts)
    assert before.engine_files == {CFG: yaml_text(64)}, (before.engine_files, before.engine_file_problems)
    base = build_snapshot(before)
    assert base.engine.flags["max_num_seqs"].value == 64
    assert base.engine.flags["tensor_parallel_size"].value == 2  # CLI wins

    loopback.write(CFG, yaml_text(256))  # the unit is unchanged: only the file drifted
    now = build_snapshot(collect(loopback, opts))
    assert now.unit_text == base.unit_text
    result = compare(Baseline(name="before", snapshot=base), now, load_rules())
    keys = {f.key for f in result.findings}
    assert any("max_num_seqs" in k for k in keys), keys
    assert not any("tensor_parallel_size" in k for k in keys), keys  # the file changes it, the CLI holds it


@pytest.mark.parametrize("make, why", [
    ("fifo", "not a regular file"),
    ("dir", "not a regular file"),
])
def test_config_file_not_read_over_ssh_is_a_warning(loopback, known_hosts, options, make, why):
    unit = f"vllm-{make}.service"
    loopback.write(f"/etc/systemd/system/{unit}", vllm_unit(f"--config /root/vllm/{make}.yaml"))
    local = loopback.local_path(f"/root/vllm/{make}.yaml")
    os.makedirs(os.path.dirname(local), exist_ok=True)
    if make == "fifo":
        os.mkfifo(local)
    else:
        os.mkdir(local)
    raw = collect(loopback, options(known_hosts(loopback)), unit)
    assert raw.engine_files == {} and why in raw.engine_file_problems[f"/root/vllm/{make}.yaml"]
    snap = build_snapshot(raw)  # no crash
    assert any(f"{make}.yaml" in w and why in w for w in snap.warnings), snap.warnings
    assert "engine-config" in [i.kind for i in snap.issues]
    assert "max_num_seqs" not in snap.engine.explicit()


def test_missing_and_equals_spelling_over_ssh(loopback, known_hosts, options):
    opts = options(known_hosts(loopback))
    loopback.write("/etc/systemd/system/vllm-miss.service", vllm_unit("--config /root/vllm/absent.yaml"))
    raw = collect(loopback, opts, "vllm-miss.service")
    assert raw.engine_files == {}
    assert raw.engine_file_problems == {"/root/vllm/absent.yaml": "no such file on the host"}
    snap = build_snapshot(raw)
    assert any("absent.yaml" in w for w in snap.warnings)
    # `--config=FILE` is fetched and recorded too (vLLM itself ignores that spelling: the engine says so)
    loopback.write("/root/vllm/eq.yaml", yaml_text(8))
    loopback.write("/etc/systemd/system/vllm-eq.service", vllm_unit("--config=/root/vllm/eq.yaml"))
    raw = collect(loopback, opts, "vllm-eq.service")
    assert raw.engine_files == {"/root/vllm/eq.yaml": yaml_text(8)}
    # a file too big is never sent, however it is spelt
    loopback.write("/root/vllm/big.yaml", "max-num-seqs: 1\n" + "#" * MAX_ENV_FILE_BYTES)
    loopback.write("/etc/systemd/system/vllm-big.service", vllm_unit("--config /root/vllm/big.yaml"))
    raw = collect(loopback, opts, "vllm-big.service")
    assert raw.engine_files == {} and "larger than" in raw.engine_file_problems["/root/vllm/big.yaml"]
