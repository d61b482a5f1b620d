"""Every collector stamps what it read in the one format (RFC 3339 UTC with 'Z', seconds)."""
from __future__ import annotations

import re

from dw_sshlab import UNIT
from driftwatch.collect.fleet import collect_fleet
from driftwatch.collect.inventory import HostTarget
from driftwatch.collect.interface import Where
from driftwatch.collect.local import UnitFileCollector
from driftwatch.snapshots.reader import EngineReader

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do

RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
UNIT_TEXT = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m\n"


def test_unit_file_collector_stamps(tmp_path):
    path = tmp_path / "sglang.service"
    path.write_text(UNIT_TEXT)
    assert RFC3339_Z.match(UnitFileCollector.open(Where("unit-file", path=str(path))).collect().collected_at)


def test_ssh_collector_stamps(loopback, known_hosts, options):
    target = HostTarget(name=loopback.address, address=loopback.address, user="root", port=loopback.port,
                        units=[UNIT])
    raw = collect_fleet([(target, UNIT)], options(known_hosts(loopback)), reader=READER)[0]
    assert raw.status in ("ok", "fallback"), raw.error
    assert RFC3339_Z.match(raw.collected_at), raw.collected_at
