"""Use cases on the snapshot store: a fleet snapshot (`driftwatch snapshot`) and retention (`prune`).

Each host's answer is parsed and saved as it arrives (on a thread of its own, answers.py), while the
others are still being read; its line is said in the order the hosts were named. One host's failure
is its own line, never the others'.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import DriftwatchError, InputError
from ..snapshots.names import snapshot_name
from .answers import AnswerWorker
from .prune import prune_store
from .shard import Shard
from .voice import Voice, unheard

if TYPE_CHECKING:
    from pathlib import Path

    from ..collect.raw import RawUnit
    from .reading import CollectOptions
    from .targets import Target


@dataclass(frozen=True)
class SnapshotRun:
    """One `snapshot` run: the targets (resolved once, run/targets.py), how they are read, the store
    they go to (`host_name` recorded for unit files), and what is done after (`keep`: prune as
    `prune --keep` would, sparing `keep_baselines_dir`'s baselines). `shard`: only that slice's
    hosts; `results`, when given, gets each unit's record ({host, unit, status, snapshot, error}:
    `snapshot --format json`); `progress(done, total, raw)` hears each host read."""

    targets: tuple[Target, ...]
    collect: CollectOptions
    store: str | None = None
    host_name: str | None = None
    keep: int | None = None
    keep_baselines_dir: str | None = None
    shard: Shard | None = None
    progress: Callable | None = None
    results: list | None = None


def snapshot_fleet(run: SnapshotRun, voice: Voice) -> bool:
    """Read the run's unit files and live hosts, save one snapshot each and say one line each
    (`voice.out`: host, unit, status, where it was saved or `-`; why a unit failed is said once,
    through `voice.say`). True when a host could not be read or saved. `voice.aside` hears each
    host's timings (the CLI's --verbose)."""
    from ..diff.changes import changes_between
    from ..snapshots.store import save_snapshot
    from .reading import snapshot_from_unit_file
    if not run.targets:
        raise InputError("nothing to snapshot: give HOST..., --inventory FILE or --unit-file FILE")
    trouble = False
    engine_version, files = run.collect.engine_version, run.collect.files
    for target in run.targets:
        if target.kind != "unit-file":
            continue
        snap = snapshot_from_unit_file(target.path or "", host=run.host_name, engine_version=engine_version,
                                       files=files)
        if engine_version:
            snap.engine_version = engine_version  # the operator says which release runs it
        saved = save_snapshot(snap, run.store, changes=changes_between)  # history reads them, never diffs
        _said(voice, run.results, {"host": snap.host or "local", "unit": snap.unit, "status": "ok",
                                   "snapshot": snapshot_name(run.store, saved), "error": None})
    live = [t for t in run.targets if t.kind == "ssh" and (run.shard is None or run.shard.holds(t.host or ""))]
    if live:
        trouble = _snapshot_live(live, run, voice)
    containers = [t for t in run.targets if t.kind in ("container", "kubernetes")
                  and (run.shard is None or run.shard.holds(t.host or ""))]
    if containers:
        trouble = _snapshot_containers(containers, run, voice) or trouble
    if run.keep:
        prune_store(run.store, run.keep, None, run.keep_baselines_dir, replace(voice, out=unheard, aside=unheard))
    return trouble


def _said(voice: Voice, results: list | None, record: dict) -> None:
    """One unit's outcome: a line `host, unit, status, snapshot` (`-` for none: why is said once, on
    stderr) and its record in `results`."""
    voice.out(f"{record['host']}\t{record['unit']}\t{record['status']}\t{record['snapshot'] or '-'}")
    if results is not None:
        results.append(record)


def _snapshot_live(targets: list[Target], run: SnapshotRun, voice: Voice) -> bool:
    from ..diff.changes import changes_between
    from ..snapshots.reader import snapshot_from_raw
    from ..snapshots.store import save_snapshot
    from .reading import collect_targets
    for t in targets:
        if not t.unit:
            raise InputError("reading hosts needs --unit UNIT (or an inventory that lists the host's units)")
    engine_version, files, store, results = run.collect.engine_version, run.collect.files, run.store, run.results
    outcomes: dict[int, dict] = {}  # id(raw) -> its record

    def record(raw: RawUnit, status: str, saved: Path | None = None, error: str | None = None) -> dict:
        return {"host": raw.host, "unit": raw.unit, "status": status,
                "snapshot": snapshot_name(store, saved) if saved else None,
                "error": error}

    def save(raw: RawUnit) -> None:  # as each answer arrives, while the other hosts are still being read (its thread)
        try:
            saved = save_snapshot(snapshot_from_raw(raw, engine_version, files), store, changes=changes_between)
            outcomes[id(raw)] = record(raw, raw.status, saved)
        except DriftwatchError as exc:
            status = raw.status if raw.status not in ("ok", "fallback") else "error"
            outcomes[id(raw)] = record(raw, status, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug on one host's input stays that host's error
            outcomes[id(raw)] = record(raw, "error", error=f"{raw.host}: {raw.unit}: internal error: "
                                                            f"{type(exc).__name__}")

    with AnswerWorker(save) as behind:  # parsed and saved off the collector's loop, in arrival order
        raws = collect_targets(targets, dataclasses.replace(run.collect, warn=voice.warn), run.progress,
                               on_result=behind.put)
    failed = False
    for raw in raws:  # in the order the hosts were named, whatever order they answered in
        done = outcomes.get(id(raw)) or record(raw, raw.status, error=f"{raw.host}: {raw.unit}: {raw.error}")
        _said(voice, results, done)
        voice.aside(_step_costs(raw))
        if getattr(raw, "incomplete", None) and done["error"] is None:  # saved, but partial: said, never silent
            voice.warn(f"{raw.host}: {raw.unit}: {raw.incomplete}")
        if done["error"] is not None:
            failed = True
            voice.say(done["error"])  # why, once: on stderr (the unit's line says only its status)
    return failed


def _snapshot_containers(targets: list[Target], run: SnapshotRun, voice: Voice) -> bool:
    """The inventory's containers and Kubernetes workloads and Pods (run/live_containers.py), one
    snapshot and one line each, as a unit's; True when one could not be read or saved (said once)."""
    from ..diff.changes import changes_between
    from ..snapshots.store import save_snapshot
    from .live_containers import read_live
    failed = False
    for read in read_live(targets, run.collect):
        record = {"host": read.host, "unit": read.unit, "status": "ok", "snapshot": None, "error": read.error}
        if read.snapshot is not None:
            try:
                record["snapshot"] = str(save_snapshot(read.snapshot, run.store, changes=changes_between))
            except DriftwatchError as exc:
                record["error"] = f"{read.host}: {read.unit}: not stored: {exc}"
        if record["error"] is not None:
            record["status"] = read.failure or "error"
        _said(voice, run.results, record)
        if record["error"] is not None:
            failed = True
            voice.say(record["error"])
    return failed


def _step_costs(raw: RawUnit) -> str:
    """Where one host's time went, client side (connect, round trip, probe) and on the host (each
    step of the remote script)."""
    steps = getattr(raw, "step_seconds", None) or {}
    parts = [f"{name} {seconds * 1000:.0f} ms" for name, seconds in steps.items()]
    return f"{raw.host} {raw.unit}: " + (", ".join(parts) if parts else "no timings (not read)")
