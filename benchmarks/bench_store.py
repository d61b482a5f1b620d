"""What the snapshot store costs: bytes on disk per snapshot and per unchanged run, measured on a
real store, then extrapolated to a fleet (1 000 hosts, a run every 5 minutes, one year).

    python benchmarks/bench_store.py [--runs 2000] [--changes-per-year 52]

The unit is the seed-000 SGLang unit (examples/sglang-qwen-70toks.service) read as a live
collector records it: `systemctl cat` text, the ExecStart systemd loaded, the running argv, the
process id, 2 GPUs and the journal's measured figures (which move on every run and are not part of
a snapshot's state). Every run after the first sees the same state: the store writes one file and
then one line per run in runs.log. "On disk" is what `du` counts (allocated blocks, st_blocks ×
512), "apparent" the files' byte sizes; the figures are printed as a Markdown table.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from driftwatch.collect.raw import RawUnit  # noqa: E402
from driftwatch.snapshots.snapshot import build_snapshot  # noqa: E402
from driftwatch.snapshots.store import FileStore as SnapshotStore  # noqa: E402  (today's YAML files)
from driftwatch.snapshots.store_sql import DatabaseStore  # noqa: E402
from driftwatch.timestamps import format_utc, parse_utc  # noqa: E402

UNIT = ROOT / "examples" / "sglang-qwen-70toks.service"
RUNS_PER_YEAR = 365 * 24 * 12  # every 5 minutes
HOSTS = 1000


def live_snapshot(at: str, throughput: float, steps: int = 3):
    text = UNIT.read_text().replace("--speculative-num-steps 3", f"--speculative-num-steps {steps}")
    argv = " ".join(text.split("ExecStart=", 1)[1].replace("\\\n", " ").split())
    raw = RawUnit(host="ct129", unit="sglang-qwen.service", text=text, source="systemctl cat",
                  paths=["/etc/systemd/system/sglang-qwen.service"], collected_at=at,
                  loaded_exec_start=f"{{ path=/root/ml-env/bin/python3 ; argv[]={argv} ; ignore_errors=no ; "
                                    "start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }",
                  need_daemon_reload=False, running_argv=argv.split(), main_pid=41234, active_state="active",
                  gpus=[{"index": 0, "name": "NVIDIA RTX A6000", "memory_mib": 49140},
                        {"index": 1, "name": "NVIDIA RTX A6000", "memory_mib": 49140}],
                  measured={"accept_length": 3.1, "throughput": throughput}, engine_version="0.5.12")
    return build_snapshot(raw, origin="bench")


def usage(folder: Path) -> tuple[int, int]:
    """(apparent bytes, allocated bytes) of the files under `folder`."""
    apparent = allocated = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            st = os.stat(os.path.join(dirpath, name))
            apparent += st.st_size
            allocated += st.st_blocks * 512
    return apparent, allocated


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000, help="runs to measure (every 5 minutes, same state)")
    ap.add_argument("--changes-per-year", type=int, default=52, help="state changes per unit per year")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dw-bench-store-"))
    try:
        store = SnapshotStore(tmp)
        start = parse_utc("2026-01-01T00:00:00Z")
        first = store.save_run(live_snapshot(format_utc(start), 70.0))
        one_file = first.path.stat().st_size
        one_alloc = first.path.stat().st_blocks * 512
        base_apparent, base_alloc = usage(tmp)
        template = live_snapshot(format_utc(start), 70.0)
        t0 = time.perf_counter()
        for i in range(1, args.runs):
            at = format_utc(start + dt.timedelta(seconds=300 * i))
            runtime = dict(template.runtime, measured={"accept_length": 3.1, "throughput": 70.0 - (i % 7) * 0.3})
            result = store.save_run(replace(template, collected_at=at, runtime=runtime))
            assert not result.written
        per_run_s = (time.perf_counter() - t0) / max(1, args.runs - 1)
        runs_apparent, runs_alloc = usage(tmp)
        per_run = (runs_apparent - base_apparent) / max(1, args.runs - 1)
        # a changed state: a new file (and, on the next unchanged run, one marker line)
        changed = store.save_run(live_snapshot(format_utc(start.replace(year=2027)), 40.0, steps=1))
        changed_size = changed.path.stat().st_size
        t0 = time.perf_counter()
        store.seen("ct129", "sglang-qwen.service")
        seen_s = time.perf_counter() - t0
        # extrapolation: per unit-year, one latest.yaml, (changes + 1) snapshot files, runs.log lines
        snap_alloc = max(one_alloc, -(-one_file // 4096) * 4096)
        unit_year = (args.changes_per_year + 1) * snap_alloc + snap_alloc + RUNS_PER_YEAR * per_run \
            + args.changes_per_year * 28  # a marker line per change
        fleet_year = HOSTS * unit_year
        naive = HOSTS * RUNS_PER_YEAR * snap_alloc  # one file per run, as before
        print(f"| measured ({args.runs} runs of one SGLang unit, one state) | value |")
        print("|---|---|")
        print(f"| snapshot file (YAML, live collector fields) | {one_file} B apparent, {one_alloc} B on disk |")
        print(f"| changed-state snapshot file | {changed_size} B apparent |")
        print(f"| latest.yaml (a copy of the newest) | {one_file} B |")
        print(f"| each unchanged run (runs.log line) | {per_run:.1f} B |")
        print(f"| store after {args.runs} runs (one snapshot file, latest.yaml, runs.log) | {runs_apparent} B "
              f"apparent, {runs_alloc} B on disk |")
        print(f"| store time per unchanged run (read newest, state hash, append, fsync) | {per_run_s * 1000:.2f} ms |")
        print(f"| `seen()` over {args.runs} runs | {seen_s * 1000:.1f} ms |")
        print()
        print(f"| extrapolated: {HOSTS} hosts × every 5 min × 1 year ({RUNS_PER_YEAR} runs/host) | bytes |")
        print("|---|---|")
        print(f"| per unit-year, {args.changes_per_year} changes | {unit_year / 1e6:.1f} MB |")
        print(f"| fleet-year, deduplicated | {fleet_year / 1e9:.2f} GB |")
        print(f"| fleet-year, one file per run (no dedupe) | {naive / 1e12:.2f} TB |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    database_costs(args.runs)


def database_costs(runs: int) -> None:
    """The same runs in the SQLite store: bytes and time per unchanged run (a row in `runs`)."""
    tmp = Path(tempfile.mkdtemp(prefix="dw-bench-store-db-"))
    try:
        store = DatabaseStore(tmp)
        start = parse_utc("2026-01-01T00:00:00Z")
        template = live_snapshot(format_utc(start), 70.0)
        store.save_run(template)
        store.close()
        base = usage(tmp)[0]  # apparent bytes after the first snapshot (the WAL checkpointed on close)
        store = DatabaseStore(tmp)
        t0 = time.perf_counter()
        for i in range(1, runs):
            at = format_utc(start + dt.timedelta(seconds=300 * i))
            runtime = dict(template.runtime, measured={"accept_length": 3.1, "throughput": 70.0 - (i % 7) * 0.3})
            assert not store.save_run(replace(template, collected_at=at, runtime=runtime)).written
        per_run_s = (time.perf_counter() - t0) / max(1, runs - 1)
        store.close()
        after = usage(tmp)[0]
        print()
        print(f"| SQLite store ({runs} runs of one unit, one state) | value |")
        print("|---|---|")
        print(f"| database after the first snapshot | {base} B |")
        print(f"| each unchanged run (a `runs` row and its index entry) | {(after - base) / max(1, runs - 1):.1f} B |")
        print(f"| time per unchanged run (one transaction: newest row's state hash, insert) | {per_run_s * 1000:.2f} ms |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
