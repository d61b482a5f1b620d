"""`--shard I/N`: a stable partition of the fleet by the hash of each host's inventory name."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from cli_helpers import run_in_process

from driftwatch.errors import InputError
from driftwatch.run.shard import Shard, parse_shard, pick, shard_of

DW = Path(sys.executable).with_name("driftwatch")
NAMES = [f"gpu{i:03d}" for i in range(200)]


def test_the_slices_partition_the_fleet_and_are_stable():
    for count in (1, 2, 3, 7):
        slices = [pick([(n, "u.service") for n in NAMES], Shard(i, count)) for i in range(count)]
        assert sorted(h for s in slices for h, _ in s) == sorted(NAMES)  # every host exactly once
        assert all(len(s) > 0 for s in slices)
    # the same name, the same slice: whatever the order or the other hosts (pinned: a release must not move hosts)
    assert [shard_of(n, 4) for n in ("gpu000", "gpu001", "ct129")] == [shard_of(n, 4) for n in ("gpu000", "gpu001", "ct129")]
    assert pick(list(reversed([(n, "u") for n in NAMES])), Shard(1, 4)) == \
        list(reversed(pick([(n, "u") for n in NAMES], Shard(1, 4))))
    assert (shard_of("gpu000", 4), shard_of("ct129", 4)) == (
        int.from_bytes(__import__("hashlib").sha256(b"gpu000").digest()[:8], "big") % 4,
        int.from_bytes(__import__("hashlib").sha256(b"ct129").digest()[:8], "big") % 4)
    assert pick([("a", "u")], None) == [("a", "u")]


@pytest.mark.parametrize("text", ["4/4", "-1/4", "1", "a/b", "1/0", "1/4/2"])
def test_bad_shards_are_refused(text):
    with pytest.raises(InputError, match="--shard"):
        parse_shard(text)
    assert parse_shard("0/1") == Shard(0, 1) and parse_shard(" 3 / 4 ") == Shard(3, 4) and parse_shard(None) is None


def test_snapshot_reads_only_its_slice_of_the_inventory(tmp_path):
    """Hosts on a closed loopback port: each is named on its own line (as an error), so the lines
    say which hosts the run tried."""
    names = NAMES[:12]
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n" + "".join(f"  {n}: {{address: 127.0.0.1, port: 1, units: [sglang-qwen.service]}}\n"
                                        for n in names))
    seen = []
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("DRIFTWATCH_")}
    env["HOME"] = str(tmp_path)
    for i in range(3):
        r = run_in_process("snapshot", "--inventory", inv, "--shard", f"{i}/3", "--store", tmp_path / "store",
                           "--quiet", "--accept-new", env=env)
        assert "Traceback" not in r.stderr
        tried = sorted(line.split("\t")[0] for line in r.stdout.splitlines() if line.strip())
        assert tried == sorted(n for n in names if shard_of(n, 3) == i), r.stdout + r.stderr
        seen += tried
    assert sorted(seen) == sorted(names)
    r = run_in_process("snapshot", "--inventory", inv, "--shard", "3/3", env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--shard" in r.stderr
