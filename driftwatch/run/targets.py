"""Turn what the user named (a unit file, a saved snapshot, a live host, a baseline) into Snapshots.

`resolve_targets(TargetRequest)` is the ONE place every command decides what it acts on and which
baseline each unit is judged against (docs/config.md, "What a command acts on"): named targets
(unit files, snapshots, hosts) are the whole set and the inventory (typed, or the config file's)
only supplies their address, user, key and baseline; the inventory is the set only when nothing is
named (the config file's) or when it is typed; `limit` narrows inventory runs only. Each `Target`
carries its baseline, resolved once: typed --baseline > unit > host > groups > defaults > the config
file's `baseline:`; `none` (or null) at any inventory level opts a unit out.

Local reads never import SSH code; live reads go through the collect stage with the command
line's `SSHOptions`. Saved snapshots are read and written by the snapshot store (`store.py`).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..engines.files import NO_FILES, EngineFiles
from ..errors import DriftwatchError, InputError
from ..fileio import MAX_TEXT_BYTES, read_text_file

if TYPE_CHECKING:  # a history that reads kept changes resolves its targets without the engines
    from ..collect.inventory import HostTarget
    from ..collect.raw import RawUnit
    from ..collect.sshoptions import SSHOptions
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot


# --------------------------------------------------------------------------- what a command acts on


@dataclass(frozen=True)
class TargetRequest:
    """What was typed on the command line, plus the config file's inventory/limit/baseline (never
    merged: which one was typed decides whether a run may widen to the inventory)."""

    unit_files: tuple[str, ...] = ()
    snapshots: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()            # --host / positional HOST
    unit: str | None = None                # --unit
    inventory: str | None = None           # typed --inventory
    limit: str | None = None               # typed --limit
    config_inventory: str | None = None    # the config file's inventory:
    config_limit: str | None = None        # the config file's limit:
    baseline: str | None = None            # typed --baseline (NAME or PATH)
    changes_hosts: bool = False            # restore --apply: never the config's inventory alone
    config_baseline: str | None = None     # the config file's baseline: (below every inventory level)
    one: bool = False                      # a one-unit command (show, check, compare, baseline save): the
                                           # inventory only describes the unit named, never lists the set
    manifests: tuple[str, ...] = ()        # --manifest FILE|DIR|- (all of them: one container's input)
    container: str | None = None           # --container NAME (which engine container of the manifests)
    recorded_names: bool = False           # hosts are names in the store (history), not addresses to reach

    @property
    def named(self) -> bool:
        """Targets were named (unit files, snapshots, hosts): they are the whole set."""
        return bool(self.unit_files or self.snapshots or self.hosts or self.manifests)


@dataclass(frozen=True)
class Target:
    """One unit a command acts on, with the baseline it is judged against (resolved once)."""

    kind: str                    # "unit-file" | "snapshot" | "ssh" | "manifest" | "container" (unit: its name)
    unit: str | None
    host: str | None             # the host's recorded name (inventory name, or HOST[:PORT] as typed)
    path: str | None             # unit file or snapshot path (kind unit-file/snapshot)
    address: HostTarget | None   # collect.inventory.HostTarget (kind ssh)
    baseline: str | None         # the baseline NAME/PATH this target is judged against; None: none
    baseline_from: str           # "typed" | "unit" | "host" | "group" | "defaults" | "config" | "none"
    inventory_baseline: str | None = None  # what the inventory names (a differing typed --baseline is said once)
    manifests: tuple[str, ...] = ()  # kind manifest: every --manifest (an InferenceService's runtime may be in another)

    @property
    def label(self) -> str:
        """How the target is named in messages: the path, or host and unit."""
        return self.path if self.path is not None else f"{self.host} {self.unit or ''}".strip()


@dataclass(frozen=True)
class CollectOptions:
    """How live units are read and parsed: SSH settings, the engine configuration files the user
    gave (--engine-config) and the engine release to read them with."""

    ssh: SSHOptions
    files: EngineFiles = NO_FILES
    engine_version: str | None = None
    warn: Callable[[str], None] | None = field(default=None, compare=False)


def resolve_targets(request: TargetRequest) -> list[Target]:
    """The targets of one run, in the order named: unit files, snapshots, then hosts (typed, or the
    inventory's). Bad combinations are one InputError each."""
    inventory = request.inventory or request.config_inventory
    whole = _inventory_is_the_set(request)
    # read only when it lists or describes a host: a run on unit files never depends on the inventory
    known = _by_name(inventory) if inventory and (whole or request.hosts) else {}
    if request.limit and not whole:
        raise InputError("--limit chooses among an inventory's hosts: give --inventory FILE (and no --host, "
                         "HOST, --unit-file or --snapshot)" if inventory or request.named else
                         "--limit chooses among an inventory's hosts: give --inventory FILE")
    out = [_local("unit-file", p, request) for p in request.unit_files]
    out += [_local("snapshot", p, request) for p in request.snapshots]
    if request.container and not request.manifests and not request.hosts:
        raise InputError("--container names a manifest's container (with --manifest FILE) or a running "
                         "container (with --host HOST)")
    if request.manifests:  # the files together hold one container (run/manifest.py)
        if request.unit:
            raise InputError("--unit names a systemd unit; a manifest's container is chosen with --container NAME")
        baseline, level = _fallback(request)
        out.append(Target("manifest", request.container, None, request.manifests[0], None, baseline, level,
                          manifests=tuple(request.manifests)))
    if request.hosts and request.container and not request.manifests:  # a running container, read live
        if request.unit:
            raise InputError("give --unit (a systemd unit) or --container (a running container), not both")
        out += [replace(t, kind="container", unit=request.container) for spec in request.hosts
                for t in _host_targets(spec, known, replace(request, unit=request.container))[:1]]
    elif request.hosts:
        for spec in request.hosts:
            out += _host_targets(spec, known, request)
    elif whole:
        limit = request.limit or request.config_limit
        out += _inventory_set(inventory, known, limit, request)  # type: ignore[arg-type]
    return _once(out)


def _inventory_is_the_set(request: TargetRequest) -> bool:
    """The inventory lists the hosts (rather than only describing named ones): a typed --inventory
    with no host named; the config file's only when nothing at all is named (and, for a run that
    changes hosts, only with a typed --limit)."""
    if request.hosts or request.one:
        return False
    if request.inventory:
        return True
    if not request.config_inventory or request.named:
        return False
    return not request.changes_hosts or bool(request.limit)


def _local(kind: str, path: str, request: TargetRequest) -> Target:
    baseline, level = _fallback(request)
    return Target(kind, request.unit, None, path, None, baseline, level)


def _fallback(request: TargetRequest) -> tuple[str | None, str]:
    """A unit the inventory says nothing about: the typed --baseline, else the config file's."""
    if request.baseline:
        return request.baseline, "typed"
    if request.config_baseline:
        return request.config_baseline, "config"
    return None, "none"


def _judged(request: TargetRequest, host: HostTarget | None, unit: str | None) -> tuple[str | None, str, str | None]:
    """(baseline, where it came from, what the inventory names) for a host's unit."""
    named, level = host.baseline_choice(unit) if host is not None else (None, "")
    if request.baseline:
        return request.baseline, "typed", named
    if level:
        return named, level, named
    baseline, level = _fallback(request)
    return baseline, level, None


def _host_targets(spec: str, known: dict, request: TargetRequest) -> list[Target]:
    """A host typed on the command line: its inventory entry when it has one (address, user, key,
    baseline; every unit it lists when --unit is not given), else the spec as typed."""
    from ..collect.inventory import parse_target
    entry = known.get(spec)
    if entry is None and request.recorded_names:  # a store's name (`gpu/01`): never parsed as an address
        baseline, level, _ = _judged(request, None, request.unit)
        return [Target("ssh", request.unit, spec, None, None, baseline, level)]
    address = entry or parse_target(spec)
    # Hosts typed as ADDR:PORT keep the port in their recorded name: two servers behind one
    # address (port forwards, containers) must not overwrite each other's snapshots.
    label = address.name if entry is not None or address.port in (None, 22) else f"{address.name}:{address.port}"
    units: list[str | None] = [request.unit] if request.unit else list(entry.units if entry else []) or [None]
    out = []
    for unit in units:
        baseline, level, inventory_named = _judged(request, entry, unit)
        out.append(Target("ssh", unit, label, None, address, baseline, level, inventory_named))
    return out


def _inventory_set(inventory: str, known: dict, limit: str | None, request: TargetRequest) -> list[Target]:
    """Every (host, unit) the inventory lists (or --unit on each), only the hosts `limit` selects."""
    from ..collect.inventory import select_hosts
    hosts = list(known.values())
    out = []
    for entry in select_hosts(hosts, limit) if limit else hosts:
        units = [request.unit] if request.unit else list(entry.units)
        if not units:
            raise InputError(f"{inventory}: host {entry.name} lists no units (add units: or pass --unit)")
        for unit in units:
            baseline, level, inventory_named = _judged(request, entry, unit)
            out.append(Target("ssh", unit, entry.name, None, entry, baseline, level, inventory_named))
    return out


def _once(targets: list[Target]) -> list[Target]:
    """The same unit named twice is one target (read once)."""
    seen, out = set(), []
    for t in targets:
        key = (t.kind, t.path, t.host, t.unit)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def judged_pair(request: TargetRequest, host: str, unit: str | None) -> tuple[str | None, Target]:
    """(the baseline, the Target) of a (host, unit) pair found elsewhere than in the inventory's
    list (e.g. a named host's units in the snapshot store): the host's inventory entry (typed, or
    the config file's) still decides its baseline, as for every other command."""
    inventory = request.inventory or request.config_inventory
    entry = _by_name(inventory).get(host) if inventory else None
    baseline, level, inventory_named = _judged(request, entry, unit)
    target = Target("ssh", unit, host, None, entry, baseline, level, inventory_named)
    return baseline, target


def baseline_override_note(targets: list[Target]) -> str | None:
    """ONE line when a typed --baseline replaces what the inventory names for some units (None when
    it replaces nothing): the operator sees the override, never silently."""
    differing = [t for t in targets if t.baseline_from == "typed" and t.inventory_baseline
                 and t.inventory_baseline != t.baseline]
    if not differing:
        return None
    shown = ", ".join(f"{t.label} ({t.inventory_baseline})" for t in differing[:5])
    more = f" and {len(differing) - 5} more" if len(differing) > 5 else ""
    return (f"note: --baseline {differing[0].baseline} replaces the inventory's baseline of {len(differing)} "
            f"unit(s): {shown}{more}")


def with_unit(target: Target, unit: str) -> Target:
    """The target with its unit filled in (e.g. from the baseline's recorded unit)."""
    return replace(target, unit=unit)


def collect_targets(targets: list[Target], options: CollectOptions, progress=None,
                    on_result=None) -> list[RawUnit]:
    """Read the ssh targets live (each as its inventory entry or typed spec says), in the order
    given, through the collect seam (collect/fleet.py `collect_targets`: the collector of each
    target's kind); `on_result(raw, target)` runs as each answer arrives, with the host's recorded name."""
    from ..collect.fleet import collect_targets as collect_pairs
    from ..collect.interface import CollectOptions as HowToCollect
    from ..collect.unitname import validate_unit_name
    from ..snapshots.reader import EngineReader
    live = [t for t in targets if t.kind == "ssh"]
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


def collect_live(targets: list[tuple[str, str]], ssh: SSHOptions, inventory: str | None = None,
                 progress=None, on_result=None, warn: Callable[[str], None] | None = None,
                 files: EngineFiles = NO_FILES) -> list[RawUnit]:
    """Collect (host spec, unit) pairs over SSH. Host specs may name inventory entries.
    `on_result(raw)` runs as each answer arrives (see collect_fleet), with the host's recorded name.
    `warn` hears when --parallel is more than this machine's CPUs can shake hands with. `files`: the
    engine configuration files the user gave (`--engine-config`), for reading command lines."""
    from ..collect.fleet import collect_fleet
    from ..collect.inventory import parse_target
    from ..snapshots.reader import EngineReader
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
    return list(_parsed(path)[1])


def _parsed(path: str) -> tuple[tuple | None, list]:
    """(the file's identity, its hosts: the cached list itself, not to be changed)."""
    from ..collect.inventory import load_inventory
    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return None, load_inventory(path)  # its own clear error
    if key not in _INVENTORIES:
        _INVENTORIES.clear()
        _INVENTORIES[key] = load_inventory(path)
    return key, _INVENTORIES[key]


_BY_NAME: dict[tuple, dict] = {}


def _by_name(path: str) -> dict:
    """The inventory's hosts by name, built once per parsed inventory (a history of 10^5 units asks
    for each unit's host)."""
    key, hosts = _parsed(path)
    if key is None:
        return {t.name: t for t in hosts}
    if key not in _BY_NAME:
        _BY_NAME.clear()
        _BY_NAME[key] = {t.name: t for t in hosts}
    return _BY_NAME[key]


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
    from ..snapshots.snapshot import build_snapshot
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
    from ..collect.raw import RawUnit
    from ..snapshots.snapshot import build_snapshot
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
    --unit (the host looked up in `inventory`). None when nothing is named and `required` is false
    (the caller falls back, e.g. to the host and unit a baseline records)."""
    request = TargetRequest(unit_files=(unit_file,) if unit_file else (), snapshots=(snapshot_file,) if snapshot_file
                            else (), hosts=(host,) if host else (), unit=unit, config_inventory=inventory, one=True)
    target = one_of(request, required)
    if target is None:
        return None
    return read_target(target, CollectOptions(ssh, files, engine_version))


def one_of(request: TargetRequest, required: bool = True) -> Target | None:
    """The one target a one-unit command names (request.one): --unit-file, --snapshot, or --host
    with --unit (or the one unit the inventory lists for the host). None when nothing is named and
    `required` is false."""
    if request.container and not request.manifests and not request.hosts:
        raise InputError("--container names a manifest's container (with --manifest FILE) or a running "
                         "container (with --host HOST)")
    chosen = [x for x in (request.unit_files, request.snapshots, request.hosts, request.manifests) if x]
    if len(chosen) > 1 or any(len(x) > 1 for x in chosen if x is not request.manifests):
        raise InputError("give one of --unit-file, --snapshot, --manifest or --host/--unit")
    if request.limit:
        raise InputError("--limit chooses among an inventory's hosts: this command reads one unit "
                         "(--unit-file, --snapshot or --host/--unit)")
    if not chosen:
        if request.unit:
            raise InputError("--unit needs --host (or use --unit-file for a file on this machine)")
        if required:
            raise InputError("nothing to read: give --unit-file FILE, --snapshot FILE or --host HOST --unit UNIT")
        return None
    targets = resolve_targets(replace(request, one=True))
    if len(targets) > 1:
        listed = ", ".join(t.unit or "" for t in targets)
        raise InputError(f"--host {targets[0].host} needs --unit: the inventory lists {listed}")
    return targets[0]


def read_target(target: Target, collect: CollectOptions) -> Snapshot:
    """The Snapshot of one target: its unit file, its stored snapshot, its manifests' engine container,
    or its unit read live."""
    if target.kind == "manifest":
        from .manifest import ManifestRequest, snapshot_from_manifests
        return snapshot_from_manifests(ManifestRequest(target.manifests or (target.path or "",), target.unit),
                                       collect.engine_version, collect.files)
    if target.kind == "container":
        from .manifest import live_container
        return live_container(target, collect)
    if target.kind == "unit-file":
        snap = snapshot_from_unit_file(target.path or "", host=None, engine_version=collect.engine_version,
                                       files=collect.files)
        if target.unit:  # the unit's name on its host, when the file is a copy named otherwise
            from ..collect.unitname import validate_unit_name
            snap.unit = validate_unit_name(target.unit)
        return snap
    if target.kind == "snapshot":
        from ..snapshots.store import read_snapshot_file
        return read_snapshot_file(target.path or "", collect.engine_version)
    if not target.unit:
        raise InputError("--host needs --unit (the systemd unit to read)")
    [raw] = collect_targets([target], collect)
    return raw_to_snapshot(raw, collect.engine_version, collect.files)


def named_baseline(spec: str, directory: Path, files: EngineFiles = NO_FILES) -> Baseline:
    """The baseline a command names: NAME in `directory`, a baseline YAML, or a unit file (read with
    the engine configuration files the user gave)."""
    from ..snapshots.baseline import load_baseline
    return load_baseline(spec, directory, unit_reader=lambda p: snapshot_from_unit_file(p, None, None, files))
