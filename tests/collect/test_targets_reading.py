"""run/reading.py: resolved targets read through the collect seam. Every kind is read by the
collector the registry gives it (a kind added to `collect.interface.COLLECTORS` is read with
reading.py unchanged) and every answer becomes a Snapshot one way (`snapshot_from_raw`), for unit
files, standard input, stored snapshots and a real sshd host alike."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from dw_sshlab import UNIT, plain_unit

from driftwatch.collect import interface
from driftwatch.collect.interface import SOURCE_SYSTEMCTL, Collector
from driftwatch.collect.inventory import HostTarget
from driftwatch.collect.raw import RawUnit
from driftwatch.collect.sshoptions import SSHOptions
from driftwatch.errors import DriftwatchError, InputError
from driftwatch.fileio import dump_yaml
from driftwatch.run.reading import CollectOptions, read_target, snapshot_from_unit_file
from driftwatch.run.targets import Target
from driftwatch.snapshots.snapshot import snapshot_to_dict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
U70 = EXAMPLES / "sglang-qwen-70toks.service"
HERE = CollectOptions(SSHOptions(ssh_config="none", known_hosts="/dev/null"))


def target(kind: str, path: str | None = None, unit: str | None = None, host: str | None = None,
           address: HostTarget | None = None) -> Target:
    return Target(kind, unit, host, path, address, None, "none")


def test_a_unit_file_target_is_the_file_read_as_every_command_reads_it(tmp_path):
    saved = read_target(target("unit-file", str(U70)), HERE)  # saved `systemctl cat`: named by its header
    assert (saved.unit, saved.host, saved.paths) == ("sglang-qwen.service", None,
                                                     ["/etc/systemd/system/sglang-qwen.service"])
    copy = tmp_path / "copy-of-the-unit"
    copy.write_text(U70.read_text().split("\n", 1)[1])  # no header: named and placed by the file
    plain = read_target(target("unit-file", str(copy)), HERE)
    assert (plain.unit, plain.host, plain.paths) == ("copy-of-the-unit", None, [str(copy)])
    assert plain.engine.flags["speculative_num_steps"].value == 3
    named = read_target(target("unit-file", str(copy), unit="sglang-qwen.service"), HERE)
    assert named.unit == "sglang-qwen.service"  # the unit's name on its host, the file a copy named otherwise
    with pytest.raises(InputError, match="unit name"):
        read_target(target("unit-file", str(copy), unit="../../etc/evil.service"), HERE)
    with pytest.raises(InputError, match="missing"):
        read_target(target("unit-file", str(tmp_path / "missing.service")), HERE)


def test_standard_input_is_read_with_the_checks_of_a_file(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(U70.read_bytes().split(b"\n", 1)[1])))
    snap = snapshot_from_unit_file("-")
    assert (snap.unit, snap.paths) == ("stdin", ["standard input"])  # `systemctl cat UNIT |`: by its header
    assert snap.engine.flags["speculative_num_steps"].value == 3
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    with pytest.raises(InputError, match="standard input"):
        snapshot_from_unit_file("-")


def test_a_stored_snapshot_target_is_the_store_s_record(tmp_path):
    saved = snapshot_from_unit_file(str(U70), host="ct129")
    path = tmp_path / "saved.yaml"
    path.write_text(dump_yaml(snapshot_to_dict(saved)))
    read = read_target(target("snapshot", str(path)), HERE)
    assert (read.host, read.unit, read.engine.flags["speculative_num_steps"].value) == ("ct129", saved.unit, 3)


class CopyCollector(Collector):
    """A local kind added by a test: it hands back a unit's text as `systemctl cat` would."""

    kind = "copy"

    def __init__(self, path: str):
        self.path = path

    @classmethod
    def open(cls, target, options, prepared):
        return cls(target.path)

    def collect(self, unit: str) -> RawUnit:
        return RawUnit(host="copied", unit=unit, text=Path(self.path).read_text(), source=SOURCE_SYSTEMCTL)


def test_a_kind_added_to_the_registry_is_read_without_editing_reading(monkeypatch):
    monkeypatch.setitem(interface.COLLECTORS, "copy", (__name__, "CopyCollector"))
    snap = read_target(target("copy", str(U70), unit="sglang-qwen.service"), HERE)
    assert (snap.host, snap.unit, snap.engine.flags["speculative_num_steps"].value) == (
        "copied", "sglang-qwen.service", 3)


def test_a_host_target_is_read_live_and_a_down_one_is_its_error(lab, loopback, known_hosts, options):
    ssh = options(known_hosts(loopback))
    address = HostTarget(name="lo", address="127.0.0.1", port=loopback.port, user="root")
    snap = read_target(target("ssh", unit=UNIT, host="lo", address=address), CollectOptions(ssh))
    assert (snap.host, snap.unit) == ("lo", UNIT)
    assert snap.unit_text.strip().endswith(plain_unit(30000).strip().splitlines()[-1])
    with pytest.raises(InputError, match="needs --unit"):
        read_target(target("ssh", host="lo", address=address), CollectOptions(ssh))
    with pytest.raises(DriftwatchError, match="unit not found"):
        read_target(target("ssh", unit="absent.service", host="lo", address=address), CollectOptions(ssh))
