"""`driftwatch snapshot` through the real console script writes into the store (the database in --store DIR)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from cli_helpers import run_in_process

from driftwatch.snapshots.store import SnapshotStore

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).with_name("driftwatch")
U70 = ROOT / "examples" / "sglang-qwen-70toks.service"
U40 = ROOT / "examples" / "sglang-qwen-40toks.service"


def test_snapshot_command_saves_in_time_order(tmp_path):
    store = tmp_path / "store"
    run = run_in_process("snapshot", "--unit-file", U70, "--unit-file", U40, "--host-name", "ct129", "--store", store,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    saved = [Path(line.split("\t")[3]) for line in run.stdout.splitlines()]
    assert len(saved) == 2 and saved[0] != saved[1]
    assert all(re.fullmatch(r"\d{8}T\d{6}Z-\d{2}\.yaml", p.name) for p in saved), saved
    assert [p.name for p in saved] == sorted(p.name for p in saved)
    assert [r.path for r in SnapshotStore(store).records("ct129")] == saved
    stamp = SnapshotStore(store).records("ct129")[1].document()["collected_at"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", stamp)
    assert SnapshotStore(store).latest("ct129", "sglang-qwen.service").path == saved[1]
    assert (store / "store.db").is_file() and not list(store.rglob("*.yaml"))
