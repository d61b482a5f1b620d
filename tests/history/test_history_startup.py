"""Seed 000 replayed with what the server printed at start-up: the history says since when the
context window and the running-request cap the engine computed have been what they are."""
from __future__ import annotations

from history_helpers import ROOT, U40, U70, UNIT, run

from driftwatch.collect.raw import RawUnit
from driftwatch.snapshots.snapshot import build_snapshot
from driftwatch.snapshots.store import SnapshotStore


def _startup(tokens: int, requests: int, context: int) -> list[str]:
    # SGLang 0.5.x managers/scheduler.py (format; real lines in tests/engines/sglang)
    return [f"[2026-11-28 09:12:41 TP0] max_total_num_tokens={tokens}, chunked_prefill_size=8192, "
            f"max_prefill_tokens=16384, max_running_requests={requests}, context_len={context}, "
            f"available_gpu_mem=2.14 GB"]


def _save(store, text, lines, at):
    raw = RawUnit(host="ct129", unit=UNIT, text=text, source="systemctl cat", engine_version="0.5.12",
                  startup_lines=lines, collected_at=at)
    return SnapshotStore(store).save(build_snapshot(raw))


def test_history_says_since_when_the_server_computed_a_smaller_window(tmp_path):
    store = tmp_path / "store"
    _save(store, U70.read_text(), _startup(455000, 16, 131072), "2026-11-27T03:00:00Z")
    # relaunched without --context-length / --max-running-requests: SGLang computed them
    relaunched = _save(store, U40.read_text(), _startup(19456, 1, 19456), "2026-11-28T09:13:00Z")
    r = run("history", "ct129", "--store", store, "--baseline", ROOT / "baselines" / "70toks.yaml", "--concurrency", "4", "--format", "text",
            cwd=tmp_path)
    flat = " ".join(r.stdout.split())
    assert "--context-length 131072 → 19456 (computed at start-up): since 2026-11-28T09:13:00Z, first seen in " \
           f"snapshot {relaunched.name}; never went away" in flat, r.stdout
    assert "--max-running-requests 16 → 1 (computed at start-up)" in flat, r.stdout
