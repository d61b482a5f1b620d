"""Issue 32 item 7: collectors are chosen from a small registry by target kind ("unit-file",
"snapshot", "ssh"); collect/fleet.py asks the registry and names no collector. One run reads targets
of every kind, in input order; a kind added to the registry is run without editing fleet.py. The SSH
case runs against the real loopback sshd of tests/collect/dw_sshlab.py."""
from __future__ import annotations

import pytest
from dw_sshlab import UNIT

from driftwatch.collect import interface
from driftwatch.collect.fleet import collect_targets
from driftwatch.collect.interface import (
    SOURCE_FILE,
    SOURCE_SNAPSHOT,
    CollectOptions,
    Collector,
    Where,
    collector_for,
)
from driftwatch.collect.inventory import HostTarget
from driftwatch.collect.local import UnitFileCollector
from driftwatch.collect.raw import RawUnit
from driftwatch.collect.snapshot import SnapshotCollector
from driftwatch.collect.ssh import SSHCollector
from driftwatch.collect.sshoptions import SSHOptions
from driftwatch.errors import InputError
from driftwatch.fileio import dump_yaml
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.reader import EngineReader, snapshot_from_raw
from driftwatch.snapshots.snapshot import snapshot_to_dict

READER = EngineReader()
LOCAL = CollectOptions(ssh=SSHOptions(ssh_config="none", known_hosts="/dev/null"), reader=READER)
UNIT_TEXT = "[Service]\nExecStart=/opt/sg/bin/python3 -m sglang.launch_server --model-path /m --tp-size 2\n"


def test_each_kind_has_its_collector():
    assert collector_for("unit-file") is UnitFileCollector
    assert collector_for("snapshot") is SnapshotCollector
    assert collector_for("ssh") is SSHCollector
    assert [collector_for(k).kind for k in interface.COLLECTORS] == list(interface.COLLECTORS)
    assert [k for k in interface.COLLECTORS if collector_for(k).remote] == ["ssh"]


def test_an_unknown_kind_is_one_clear_error():
    with pytest.raises(InputError, match="no collector reads targets of kind 'container'"):
        collector_for("container")
    with pytest.raises(InputError, match="kind 'container'"):
        collect_targets([(Where("container", host="h"), UNIT)], LOCAL)


def saved_snapshot(tmp_path, unit_file):
    snap = snapshot_from_unit_file(str(unit_file), host="h1")
    path = tmp_path / "saved.yaml"
    path.write_text(dump_yaml(snapshot_to_dict(snap)))
    return snap, path


def test_local_kinds_in_one_run_in_input_order(tmp_path):
    unit_file = tmp_path / "sg.service"
    unit_file.write_text(UNIT_TEXT)
    saved, path = saved_snapshot(tmp_path, unit_file)
    seen = []
    raws = collect_targets([(Where("snapshot", host="h1", path=str(path)), ""),
                            (Where("unit-file", path=str(unit_file)), "")], LOCAL,
                           on_result=lambda i, raw: seen.append((i, raw.source)))
    assert seen == [(0, SOURCE_SNAPSHOT), (1, SOURCE_FILE)]
    stored, read = (snapshot_from_raw(r) for r in raws)
    assert read.unit == "sg.service" and read.engine.engine == "sglang"
    assert read.engine.flags["tp_size"].value == 2
    assert (stored.host, stored.unit, stored.engine.engine) == ("h1", saved.unit, "sglang")
    assert stored.engine.flags["tp_size"].value == 2


def test_the_unit_file_read_builds_what_the_commands_build(tmp_path):
    unit_file = tmp_path / "sg.service"
    unit_file.write_text(UNIT_TEXT)
    [raw] = collect_targets([(Where("unit-file", path=str(unit_file)), "")], LOCAL)
    ours, theirs = snapshot_from_raw(raw), snapshot_from_unit_file(str(unit_file))
    assert (ours.host, ours.unit, ours.paths, ours.engine.engine, ours.launcher.engine_argv, ours.unit_text) == (
        theirs.host, theirs.unit, theirs.paths, theirs.engine.engine, theirs.launcher.engine_argv, theirs.unit_text)
    saved = tmp_path / "saved.txt"  # saved `systemctl cat` output: named and placed by its header
    saved.write_text("# /etc/systemd/system/a-b.service\n" + UNIT_TEXT)
    [raw] = collect_targets([(Where("unit-file", path=str(saved)), "")], LOCAL)
    ours, theirs = snapshot_from_raw(raw), snapshot_from_unit_file(str(saved))
    assert (ours.unit, ours.paths) == (theirs.unit, theirs.paths)
    assert (ours.unit, ours.paths) == ("a-b.service", ["/etc/systemd/system/a-b.service"])


def test_a_unit_file_that_cannot_be_read_is_bad_input(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        collect_targets([(Where("unit-file", path=str(tmp_path / "missing.service")), "")], LOCAL)
    with pytest.raises(InputError):  # a unit name systemd would refuse, before anything is read
        collect_targets([(Where("ssh", host="h", address=HostTarget(name="h")), "../x")], LOCAL)


class EchoCollector(Collector):
    """A kind added by a test: one line in interface.COLLECTORS, nothing in fleet.py."""

    kind = "echo"
    opened: list[str] = []

    def __init__(self, host: str):
        self.host = host

    @classmethod
    def open(cls, target, options, prepared):
        cls.opened.append(target.host)
        return cls(target.host)

    def collect(self, unit: str) -> RawUnit:
        return RawUnit(host=self.host, unit=unit, text=f"# echo {unit}\n", source="echo")


def test_a_kind_added_to_the_registry_runs_without_editing_fleet(monkeypatch):
    monkeypatch.setitem(interface.COLLECTORS, "echo", (__name__, "EchoCollector"))
    EchoCollector.opened.clear()
    raws = collect_targets([(Where("echo", host="a"), "x.service"), (Where("echo", host="b"), "y.service"),
                            (Where("echo", host="a"), "z.service")], LOCAL)
    assert [(r.host, r.unit, r.source) for r in raws] == [("a", "x.service", "echo"), ("b", "y.service", "echo"),
                                                          ("a", "z.service", "echo")]
    assert EchoCollector.opened == ["a", "b"]  # one collector per target, shared by its units


def test_hosts_and_files_in_one_run(loopback, known_hosts, options, tmp_path):
    unit_file = tmp_path / "sg.service"
    unit_file.write_text(UNIT_TEXT)
    host = HostTarget(name="loopback", address=loopback.address, user="root", port=loopback.port)
    run = CollectOptions(ssh=options(known_hosts(loopback)), reader=READER)
    progress = []
    raws = collect_targets([(Where("ssh", host="loopback", address=host), UNIT),
                            (Where("unit-file", path=str(unit_file)), ""),
                            (Where("ssh", host="loopback", address=host), "other.service")], run,
                           progress=lambda done, total, raw: progress.append((done, total)))
    assert [(r.source, r.unit) for r in raws] == [("disk", UNIT), ("file", ""), ("disk", "other.service")]
    assert raws[0].status == "fallback" and raws[2].status == "fallback", (raws[0].error, raws[2].error)
    assert progress == [(1, 3), (2, 3), (3, 3)]
