"""Several hosts in network namespaces, each with its own /etc/systemd/system (and friends).

The namespaced hosts have no systemd as PID 1, so ``systemctl cat`` fails there exactly as on a
real host without systemd and the on-disk fallback runs for real. The ``systemctl cat`` happy path
uses host 'systemd', whose PATH has a fake ``systemctl`` (and ``journalctl``, ``nvidia-smi``)
replaying the outputs in tests/fixtures/systemctl/, which were written by hand in systemd 252's
exact format (systemd is not PID 1 where they were made; see that directory's README).
"""
from __future__ import annotations

import os
import time

import pytest

import dw_sshlab
from dw_sshlab import FIXTURES, UNIT
from unit_tree import read_unit_tree
from driftwatch.collect.fleet import collect_fleet
from driftwatch.collect.inventory import HostTarget, load_inventory
from driftwatch.snapshots.reader import EngineReader

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def t(server, name=None):
    return HostTarget(name=name or server.name, address=server.address, user="root", port=server.port)


def test_systemctl_cat_happy_path(fleet, known_hosts, options, engine_process):
    host = fleet["systemd"]
    pid, argv = engine_process
    with open(os.path.join(host.root, "mainpid"), "w") as fh:
        fh.write(str(pid))
    raw = collect_fleet([(t(host), UNIT)], options(known_hosts(host)), reader=READER)[0]
    with open(os.path.join(FIXTURES, "sglang-qwen.service.cat")) as fh:
        recorded = fh.read()
    assert raw.status == "ok", raw.error
    assert raw.source == "systemctl cat"
    assert raw.text == recorded
    assert raw.paths == ["/etc/systemd/system/sglang-qwen.service",
                         "/etc/systemd/system/sglang-qwen.service.d/override.conf"]
    assert raw.need_daemon_reload is True
    assert raw.loaded_exec_start.startswith("{ path=/root/ml-env/bin/python3 ; argv[]=")
    assert "--speculative-num-steps 1" in raw.loaded_exec_start
    assert raw.main_pid == pid
    assert raw.active_state == "active"
    assert raw.running_argv == argv
    assert raw.engine_version == "0.5.23"
    assert raw.gpus == [{"index": 0, "name": "NVIDIA RTX A6000", "memory_total": "49140 MiB"},
                        {"index": 1, "name": "NVIDIA RTX A6000", "memory_total": "49140 MiB"}]
    assert raw.interconnect == "pcie"  # `nvidia-smi topo -m`: the two GPUs meet over SYS (PCIe + UPI)
    assert raw.measured == {"accept_length": 1.75, "throughput": 40.12}
    # the start-up lines of this invocation, picked by the engines' markers, none of the decode lines
    assert raw.startup_lines is not None and len(raw.startup_lines) == 4
    assert all("Decode batch" not in line for line in raw.startup_lines)
    assert "max_running_requests=1, context_len=19456" in raw.startup_lines[1]


def test_fallback_dropins_order_and_masking(fleet, known_hosts, options):
    host = fleet["dropins"]
    raw = collect_fleet([(t(host), UNIT)], options(known_hosts(host)), reader=READER)[0]
    assert raw.status == "fallback", raw.error
    assert raw.source == "disk"
    assert raw.paths == [
        "/etc/systemd/system/sglang-qwen.service",  # /etc masks the vendor fragment
        "/usr/lib/systemd/system/sglang-.service.d/05-prefix.conf",  # dash-prefix drop-in dir
        "/run/systemd/system/sglang-qwen.service.d/10-vendor.conf",  # /run masks /usr/lib
        "/etc/systemd/system/sglang-qwen.service.d/20-local.conf",
        "/etc/systemd/system/sglang-qwen.service.d/30-masked.conf",  # -> /dev/null masks /usr/lib
        "/etc/systemd/system/service.d/99-top.conf",  # top-level service.d last by name
    ]
    assert "--vendor" not in raw.text and "Nice=5" not in raw.text and "Nice=19" not in raw.text
    assert raw.text.count("# /") == 6
    assert ("# /etc/systemd/system/sglang-qwen.service.d/20-local.conf\n[Service]\nEnvironment=A=1\n\n"
            "# /etc/systemd/system/sglang-qwen.service.d/30-masked.conf\n\n"
            "# /etc/systemd/system/service.d/99-top.conf\n") in raw.text
    assert raw.environment_files == {"/root/sglang.env": "SGLANG_DISABLE_CUDNN_CHECK=1\n"}


def test_fallback_text_identical_to_the_local_tree_read(fleet, known_hosts, options, tmp_path):
    host = fleet["dropins"]
    root = tmp_path / "root"
    for where, tree in (("etc/systemd", "etc"), ("usr/lib/systemd", "usr-lib"), ("run/systemd", "run")):
        (root / where).mkdir(parents=True)
        os.symlink(host.path(tree), root / where / "system")
    for unit in (UNIT, "worker@2.service", "dw-esc\\x2dtest.service"):
        remote = collect_fleet([(t(host), unit)], options(known_hosts(host)), reader=READER)[0]
        assert remote.status == "fallback", remote.error
        assert (remote.text, remote.paths) == read_unit_tree(str(root), unit), unit


def test_template_instance_and_escaped_name(fleet, known_hosts, options):
    host = fleet["dropins"]
    kh = known_hosts(host)
    inst, esc = collect_fleet([(t(host), "worker@2.service"), (t(host), "dw-esc\\x2dtest")], options(kh), reader=READER)
    assert inst.paths == ["/usr/lib/systemd/system/worker@.service",
                          "/etc/systemd/system/worker@2.service.d/10-two.conf",
                          "/etc/systemd/system/service.d/99-top.conf"]
    assert esc.unit == "dw-esc\\x2dtest.service"
    assert esc.paths == ["/etc/systemd/system/dw-esc\\x2dtest.service",
                         "/etc/systemd/system/service.d/99-top.conf"]


def test_unrelated_engine_is_not_the_units_server_without_mainpid(fleet, known_hosts, options, engine_process):
    """No systemd to give MainPID: an SGLang serving another model on another port (the default
    30000; the unit's is 31000) is not this unit's server (issue 9 item 3: it used to be taken as
    the running process of every unit, a false "restart pending"). Matches on evidence are in
    test_collect_process_match.py."""
    host = fleet["plain0"]
    pid, argv = engine_process
    raw = collect_fleet([(t(host), UNIT)], options(known_hosts(host)), reader=READER)[0]
    assert raw.main_pid is None
    assert raw.running_argv is None  # running process unknown


def test_hung_gpu_tool_degrades_to_unknown(fleet, known_hosts, options):
    host = fleet["slowgpu"]
    start = time.monotonic()
    raw = collect_fleet([(t(host), UNIT)], options(known_hosts(host), command_timeout=3), reader=READER)[0]
    assert raw.status == "fallback", raw.error
    assert raw.gpus is None and "--port 32000" in raw.text
    assert time.monotonic() - start < 3


def test_parallel_hosts_one_hung_one_closed(fleet, known_hosts, options):
    hung = dw_sshlab.HungServer()
    closed = dw_sshlab.free_port()
    good = [fleet[n] for n in ("plain0", "plain1", "plain2", "plain3", "dropins", "systemd")]
    targets = [(t(h), UNIT) for h in good]
    targets.insert(2, (HostTarget(name="hung", address="127.0.0.1", port=hung.port, user="root"), UNIT))
    targets.append((HostTarget(name="closed", address="127.0.0.1", port=closed, user="root"), UNIT))
    seen: dict[str, float] = {}
    start = time.monotonic()
    try:
        raws = collect_fleet(targets, options(known_hosts(*good), connect_timeout=2),
                             progress=lambda done, total, raw: seen.setdefault(raw.host, time.monotonic() - start), reader=READER)
    finally:
        hung.close()
    wall = time.monotonic() - start
    assert [r.host for r in raws] == [tg.name for tg, _ in targets]  # input order
    status = {r.host: r.status for r in raws}
    assert status == {"plain0": "fallback", "plain1": "fallback", "hung": "timeout",
                      "plain2": "fallback", "plain3": "fallback", "dropins": "fallback",
                      "systemd": "ok", "closed": "unreachable"}
    assert [r.text.split("--port ")[1].split()[0] for r in raws[:2]] == ["31000", "31001"]
    # the hung host costs its own connect timeout and delays nobody else
    assert max(v for k, v in seen.items() if k != "hung") < 1.9, seen
    assert 1.9 <= seen["hung"] < 4 and wall < 4.5


def test_concurrency_limit_still_collects_all(fleet, known_hosts, options):
    good = [fleet[n] for n in ("plain0", "plain1", "plain2", "plain3", "dropins")]
    raws = collect_fleet([(t(h), UNIT) for h in good], options(known_hosts(*good), parallel=2), reader=READER)
    assert [r.status for r in raws] == ["fallback"] * 5


def test_example_inventory_against_fleet(fleet, known_hosts, options, tmp_path):
    """examples/inventory.yaml as shipped (no addresses), resolved through an ssh_config."""
    a, b = fleet["plain2"], fleet["systemd"]
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host ct129\n  HostName {a.address}\n\nHost ct200\n  HostName {b.address}\n")
    hosts = load_inventory(os.path.join(REPO, "examples", "inventory.yaml"))
    pairs = [(h, u) for h in hosts for u in h.units]
    raws = collect_fleet(pairs, options(known_hosts(a, b), ssh_config=str(cfg)), reader=READER)
    assert [(r.host, r.unit, r.status) for r in raws] == [
        ("ct129", "sglang-qwen.service", "fallback"),
        ("ct200", "sglang-qwen.service", "ok"),
        ("ct200", "sglang-qwen-current.service", "unit not found"),
    ]
    assert raws[1].gpus and raws[2].gpus == raws[1].gpus  # GPUs asked once per host


@pytest.mark.parametrize("n", [8])
def test_accept_new_from_many_threads(fleet, options, tmp_path, n, lab):
    """--accept-new on a fleet: every key recorded exactly once, file never torn."""
    hosts = [fleet[k] for k in ("plain0", "plain1", "plain2", "plain3", "dropins", "systemd")]
    kh = tmp_path / "known_hosts"
    kh.write_text("# existing line without final newline")
    raws = collect_fleet([(t(h), UNIT) for h in hosts], options(str(kh), accept_new=True), reader=READER)
    assert all(r.status in ("ok", "fallback") for r in raws), [r.error for r in raws]
    lines = kh.read_text().splitlines()
    assert lines[0] == "# existing line without final newline"
    assert sorted(lines[1:]) == sorted(h.known_hosts_line().strip() for h in hosts)
