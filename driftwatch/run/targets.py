"""Turn what the user named (a unit file, a saved snapshot, a live host, a baseline) into Snapshots.

Local reads never import SSH code; live reads go through the collect stage with the command
line's `SSHOptions`. Saved snapshots are read and written by the snapshot store (`store.py`).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DriftwatchError, InputError
from ..fileio import MAX_TEXT_BYTES, read_text_file
from ..collect.raw import RawUnit
from ..engines.files import NO_FILES, EngineFiles
from ..snapshots.snapshot import Snapshot, build_snapshot

if TYPE_CHECKING:
    from ..collect.sshoptions import SSHOptions
    from ..snapshots.baseline import Baseline


def parallel_ceiling() -> int:
    """Above this many hosts at once, SSH handshakes (CPU-bound on the client) starve each other: at
    1 000 on 2 cores 5-23 % of hosts timed out (issue 12's measurements; benchmarks/README.md)."""
    return max(64, 32 * (os.cpu_count() or 1))


def collect_live(targets: list[tuple[str, str]], ssh: SSHOptions, inventory: str | None = None,
                 progress=None, on_result=None, warn: Callable[[str], None] | None = None,
                 files: EngineFiles = NO_FILES) -> list[RawUnit]:
    """Collect (host spec, unit) pairs over SSH. Host specs may name inventory entries.
    `on_result(raw)` runs as each answer arrives (see collect_fleet), with the host's recorded name.
    `warn` hears when --parallel is more than this machine's CPUs can shake hands with. `files`: the
    engine configuration files the user gave (`--engine-config`), for reading command lines."""
    from ..collect.fleet import collect_fleet
    from ..snapshots.reader import EngineReader
    from ..collect.inventory import parse_target
    if warn is not None and ssh.parallel > parallel_ceiling():
        warn(f"--parallel {ssh.parallel} on {os.cpu_count() or 1} CPU core(s): SSH handshakes compete for the CPU "
             f"and slow hosts may time out; at most {parallel_ceiling()} is faster here")
    known = {t.name: t for t in _inventory(inventory)} if inventory else {}
    pairs, labels, seen = [], [], set()
    for spec, unit in targets:
        target = known.get(spec) or parse_target(spec)
        # Hosts typed as ADDR:PORT keep the port in their recorded name: two servers behind one
        # address (port forwards, containers) must not overwrite each other's snapshots.
        label = target.name if spec in known or target.port in (None, 22) else f"{target.name}:{target.port}"
        if (label, unit) in seen:
            continue  # the same host and unit named twice: read it once
        seen.add((label, unit))
        pairs.append((target, unit))
        labels.append(label)

    def arrived(i: int, raw: RawUnit) -> None:
        raw.host = labels[i]
        if on_result is not None:
            on_result(raw)

    return collect_fleet(pairs, ssh, EngineReader(files), progress=progress, on_result=arrived)


_INVENTORIES: dict[tuple, list] = {}


def _inventory(path: str) -> list:
    """The inventory's hosts, parsed once per run however often they are asked for (a 1 000-host
    inventory is read to list the targets and again to resolve them); re-read when the file changes."""
    from ..collect.inventory import load_inventory
    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return load_inventory(path)  # its own clear error
    if key not in _INVENTORIES:
        _INVENTORIES.clear()
        _INVENTORIES[key] = load_inventory(path)
    return list(_INVENTORIES[key])


def inventory_targets(inventory: str, unit: str | None = None, limit: str | None = None) -> list[tuple[str, str]]:
    """The (host, unit) pairs the inventory lists (every unit, or `unit`), only the hosts the Ansible
    host pattern `limit` selects when given."""
    from ..collect.inventory import select_hosts
    pairs = []
    hosts = _inventory(inventory)
    for target in select_hosts(hosts, limit) if limit else hosts:
        units = [unit] if unit else list(target.units)
        if not units:
            raise InputError(f"{inventory}: host {target.name} lists no units (add units: or pass --unit)")
        pairs.extend((target.name, u) for u in units)
    return pairs


def inventory_baselines(inventory: str, unit: str | None = None) -> dict[tuple[str, str], str | None]:
    """(host, unit) -> the baseline NAME the inventory gives that unit (None: none anywhere)."""
    out = {}
    for target in _inventory(inventory):
        for u in ([unit] if unit else target.units):
            out[(target.name, u)] = target.baseline_for(u)
    return out


def raw_to_snapshot(raw: RawUnit, engine_version: str | None = None, files: EngineFiles = NO_FILES) -> Snapshot:
    if raw.status not in ("ok", "fallback"):
        raise DriftwatchError(f"{raw.host}: {raw.unit}: {raw.status}" + (f": {raw.error}" if raw.error else ""))
    return build_snapshot(raw, engine_version=engine_version, origin=f"{raw.host}:{raw.unit}", files=files)


def collect_one(host: str, unit: str, ssh: SSHOptions, inventory: str | None = None,
                engine_version: str | None = None, files: EngineFiles = NO_FILES) -> Snapshot:
    from ..collect.unitname import validate_unit_name
    validate_unit_name(unit)
    [raw] = collect_live([(host, unit)], ssh, inventory, files=files)
    return raw_to_snapshot(raw, engine_version, files)


STDIN = "-"


def read_stdin_text() -> str:
    """Standard input, with the same checks as a unit file (size, binary, UTF-8, empty)."""
    import sys
    import tempfile
    data = sys.stdin.buffer.read(MAX_TEXT_BYTES + 1) if sys.stdin is not None else b""
    with tempfile.NamedTemporaryFile(prefix="driftwatch-stdin-") as tmp:
        tmp.write(data)
        tmp.flush()
        try:
            return read_text_file(tmp.name, "unit on standard input")
        except InputError as exc:
            raise InputError(str(exc).replace(tmp.name, "standard input", 1)) from None


def snapshot_from_unit_file(path: str, host: str | None = None, engine_version: str | None = None,
                            files: EngineFiles = NO_FILES) -> Snapshot:
    """Read a unit file on this machine (plain, or saved `systemctl cat` output) into a Snapshot.
    PATH `-` is standard input (`systemctl cat UNIT | driftwatch check --unit-file -`). `files`: the
    engine configuration files the user gave (`--engine-config`)."""
    text = read_stdin_text() if path == STDIN else read_text_file(path)
    raw = RawUnit(host=host or "", unit="", text=text, source="file", paths=[])
    snap = build_snapshot(raw, engine_version=engine_version, origin="standard input" if path == STDIN else path,
                          files=files)
    if not snap.paths and path != STDIN:
        snap.paths = [os.path.abspath(path)]
    if not snap.unit:
        snap.unit = "stdin" if path == STDIN else Path(path).name
    snap.host = host
    return snap


def one_target(unit_file: str | None, host: str | None, unit: str | None, snapshot_file: str | None,
               engine_version: str | None, inventory: str | None, ssh: SSHOptions,
               required: bool = True, files: EngineFiles = NO_FILES) -> Snapshot | None:
    """The one unit a command names: --unit-file (`-`: standard input), --snapshot, or --host with
    --unit. None when nothing is named and `required` is false (the caller falls back, e.g. to the
    host and unit a baseline records)."""
    chosen = [x for x in (unit_file, snapshot_file, host) if x]
    if len(chosen) > 1:
        raise InputError("give one of --unit-file, --snapshot or --host/--unit")
    if unit_file:
        snap = snapshot_from_unit_file(unit_file, host=None, engine_version=engine_version, files=files)
        if unit:  # the unit's name on its host, when the file is a copy named otherwise
            from ..collect.unitname import validate_unit_name
            snap.unit = validate_unit_name(unit)
        return snap
    if snapshot_file:
        from ..snapshots.store import read_snapshot_file
        return read_snapshot_file(snapshot_file, engine_version)
    if host:
        if not unit:
            raise InputError("--host needs --unit (the systemd unit to read)")
        return collect_one(host, unit, ssh, inventory, engine_version, files)
    if unit:
        raise InputError("--unit needs --host (or use --unit-file for a file on this machine)")
    if required:
        raise InputError("nothing to read: give --unit-file FILE, --snapshot FILE or --host HOST --unit UNIT")
    return None


def named_baseline(spec: str, directory: Path, files: EngineFiles = NO_FILES) -> Baseline:
    """The baseline a command names: NAME in `directory`, a baseline YAML, or a unit file (read with
    the engine configuration files the user gave)."""
    from ..snapshots.baseline import load_baseline
    return load_baseline(spec, directory, unit_reader=lambda p: snapshot_from_unit_file(p, None, None, files))
