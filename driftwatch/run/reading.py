"""Targets read into Snapshots, through the collect seam: each target's kind chooses its collector
from the registry (`collect.interface.collector_for`: a unit file, a stored snapshot, a host over
SSH), and what any collector brings back becomes a Snapshot one way
(`snapshots.reader.snapshot_from_raw`). Deciding WHAT a command reads is run/targets.py's, done once
before anything here runs; nothing here goes back to it.

Local reads never import SSH code: the registry imports a collector's module only when its kind is
read; the parser and the engines (snapshots/reader.py) are imported when a unit is read, so a
history or prune that reads kept changes, and imports this module through run/fleet.py, never loads
them.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..collect.interface import CollectOptions as HowToCollect, CollectTarget, Where, collector_for
from ..engines.files import NO_FILES, EngineFiles
from ..errors import InputError
from .collect_options import CollectOptions

if TYPE_CHECKING:
    from ..collect.raw import RawUnit
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot
    from .targets import Target


def read_target(target: Target, collect: CollectOptions) -> Snapshot:
    """The Snapshot of one target, read by its kind's collector: its unit file, its stored
    snapshot, or its unit read live."""
    from ..snapshots.reader import snapshot_from_raw
    if target.kind == "manifest":  # the files together hold one engine container (run/manifest.py)
        from .manifest import ManifestRequest, snapshot_from_manifests
        return snapshot_from_manifests(ManifestRequest(target.manifests or (target.path or "",), target.unit),
                                       collect.engine_version, collect.files)
    if target.kind == "container":  # a running container, inspected over SSH
        from .manifest import live_container
        return live_container(target, collect)
    if collector_for(target.kind).remote:
        if not target.unit:
            raise InputError("--host needs --unit (the systemd unit to read)")
        [raw] = collect_targets([target], collect)
    else:
        raw = _read_here(target, target.unit or "", collect.files)
    return snapshot_from_raw(raw, collect.engine_version, collect.files)


def snapshot_from_unit_file(path: str, host: str | None = None, engine_version: str | None = None,
                            files: EngineFiles = NO_FILES) -> Snapshot:
    """Read a unit file on this machine (plain, or saved `systemctl cat` output) into a Snapshot.
    PATH `-` is standard input (`systemctl cat UNIT | driftwatch check --unit-file -`). `files`: the
    engine configuration files the user gave (`--engine-config`)."""
    from ..snapshots.reader import snapshot_from_raw
    raw = _read_here(Where("unit-file", host=host, path=path), "", files)
    return snapshot_from_raw(raw, engine_version, files)


def _read_here(target: CollectTarget, unit: str, files: EngineFiles) -> RawUnit:
    """A target of a local kind (a file, a stored snapshot), read by its registered collector; a
    file that cannot be read is one InputError."""
    from ..collect.sshoptions import SSHOptions
    from ..snapshots.reader import EngineReader
    collector = collector_for(target.kind)
    how = HowToCollect(SSHOptions(), EngineReader(files))
    return collector.open(target, how, collector.prepare(how)).collect(unit)


def collect_targets(targets: list[Target], options: CollectOptions,
                    progress: Callable[[int, int, RawUnit], None] | None = None,
                    on_result: Callable[[RawUnit, Target], None] | None = None) -> list[RawUnit]:
    """Read the targets of a remote kind live (an ssh host as its inventory entry or typed spec
    says), in the order given, through the collect seam (collect/fleet.py `collect_targets`: the
    collector of each target's kind); `on_result(raw, target)` runs as each answer arrives, with the
    host's recorded name. Targets of a local kind are `read_target`'s."""
    from ..collect.fleet import collect_targets as collect_pairs
    from ..collect.unitname import validate_unit_name
    from ..snapshots.reader import EngineReader
    live = [t for t in targets if collector_for(t.kind).remote]
    if options.warn is not None and options.ssh.parallel > parallel_ceiling() and live:
        options.warn(f"--parallel {options.ssh.parallel} on {os.cpu_count() or 1} CPU core(s): SSH handshakes "
                     f"compete for the CPU and slow hosts may time out; at most {parallel_ceiling()} is faster here")
    for t in live:
        if not t.unit:
            raise InputError(f"--host {t.host} needs --unit (the systemd unit to read)")
        validate_unit_name(t.unit)

    def arrived(i: int, raw: RawUnit) -> None:
        raw.host = live[i].host or ""
        if on_result is not None:
            on_result(raw, live[i])

    pairs = [(t, t.unit or "") for t in live]
    return collect_pairs(pairs, HowToCollect(options.ssh, EngineReader(options.files)), progress, arrived)


def parallel_ceiling() -> int:
    """Above this many hosts at once, SSH handshakes (CPU-bound on the client) starve each other: at
    1 000 on 2 cores 5-23 % of hosts timed out (issue 12's measurements; benchmarks/README.md)."""
    return max(64, 32 * (os.cpu_count() or 1))


def named_baseline(spec: str, directory: Path, files: EngineFiles = NO_FILES) -> Baseline:
    """The baseline a command names: NAME in `directory`, a baseline YAML, or a unit file (read with
    the engine configuration files the user gave)."""
    from ..snapshots.baseline import load_baseline
    return load_baseline(spec, directory, unit_reader=lambda p: snapshot_from_unit_file(p, None, None, files))


__all__ = ["CollectOptions", "collect_targets", "named_baseline", "parallel_ceiling", "read_target",
           "snapshot_from_unit_file"]
