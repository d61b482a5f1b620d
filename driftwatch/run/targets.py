"""Turn what the user named (a unit file, a live host) into Snapshots.

Local reads never import SSH code; live reads go through the collect stage. Saved snapshots are
read and written by the snapshot store (`store.py`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import DriftwatchError, InputError
from ..fileio import MAX_TEXT_BYTES, read_text_file
from ..collect.raw import RawUnit
from ..snapshots.snapshot import Snapshot, build_snapshot


@dataclass
class SSHSettings:
    known_hosts: str | None = None
    accept_new: bool = False
    identity: str | None = None
    ssh_config: str | None = None
    connect_timeout: float = 10.0
    command_timeout: float = 30.0
    parallel: int = 32
    probe: bool = False


def collect_live(targets: list[tuple[str, str]], ssh: SSHSettings, inventory: str | None = None,
                 progress=None, on_result=None) -> list[RawUnit]:
    """Collect (host spec, unit) pairs over SSH. Host specs may name inventory entries.
    `on_result(raw)` runs as each answer arrives (see collect_fleet), with the host's recorded name."""
    from ..collect.fleet import SSHOptions, collect_fleet
    from ..collect.inventory import parse_target
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
    options = SSHOptions(known_hosts=ssh.known_hosts, accept_new=ssh.accept_new, identity=ssh.identity,
                         ssh_config=ssh.ssh_config, connect_timeout=ssh.connect_timeout,
                         command_timeout=ssh.command_timeout, concurrency=ssh.parallel, probe=ssh.probe)
    def arrived(i: int, raw: RawUnit) -> None:
        raw.host = labels[i]
        if on_result is not None:
            on_result(raw)

    return collect_fleet(pairs, options, progress=progress, on_result=arrived)


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


def inventory_targets(inventory: str, unit: str | None = None) -> list[tuple[str, str]]:
    pairs = []
    for target in _inventory(inventory):
        units = [unit] if unit else list(target.units)
        if not units:
            raise InputError(f"{inventory}: host {target.name} lists no units (add units: or pass --unit)")
        pairs.extend((target.name, u) for u in units)
    return pairs


def raw_to_snapshot(raw: RawUnit, engine_version: str | None = None) -> Snapshot:
    if raw.status not in ("ok", "fallback"):
        raise DriftwatchError(f"{raw.host}: {raw.unit}: {raw.status}" + (f": {raw.error}" if raw.error else ""))
    return build_snapshot(raw, engine_version=engine_version, origin=f"{raw.host}:{raw.unit}")


def collect_one(host: str, unit: str, ssh: SSHSettings, inventory: str | None = None,
                engine_version: str | None = None) -> Snapshot:
    from ..collect.unitname import validate_unit_name
    validate_unit_name(unit)
    [raw] = collect_live([(host, unit)], ssh, inventory)
    return raw_to_snapshot(raw, engine_version)


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


def snapshot_from_unit_file(path: str, host: str | None = None, engine_version: str | None = None) -> Snapshot:
    """Read a unit file on this machine (plain, or saved `systemctl cat` output) into a Snapshot.
    PATH `-` is standard input (`systemctl cat UNIT | driftwatch check --unit-file -`)."""
    text = read_stdin_text() if path == STDIN else read_text_file(path)
    raw = RawUnit(host=host or "", unit="", text=text, source="file", paths=[])
    snap = build_snapshot(raw, engine_version=engine_version, origin="standard input" if path == STDIN else path)
    if not snap.paths and path != STDIN:
        snap.paths = [os.path.abspath(path)]
    if not snap.unit:
        snap.unit = "stdin" if path == STDIN else Path(path).name
    snap.host = host
    return snap
