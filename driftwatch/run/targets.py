"""Turn what the user named (a unit file, a saved snapshot, a live host, a baseline) into Snapshots.

`resolve_targets(TargetRequest)` is the ONE place every command decides what it acts on and which
baseline each unit is judged against (docs/config.md, "What a command acts on"): named targets
(unit files, snapshots, hosts) are the whole set and the inventory (typed, or the config file's)
only supplies their address, user, key and baseline; the inventory is the set only when nothing is
named (the config file's) or when it is typed; `limit` narrows inventory runs only. Each `Target`
carries its baseline, resolved once: typed --baseline > unit > host > groups > defaults > the config
file's `baseline:`; `none` (or null) at any inventory level opts a unit out.

Nothing here reads a unit: run/reading.py reads the resolved targets through the collect seam
(each kind's collector), and nothing there comes back here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:  # a history that reads kept changes resolves its targets without the engines
    from ..collect.inventory import HostTarget


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
    live = live_targets(entry, label, request) if entry is not None and not request.unit else []
    units: list[str | None] = [request.unit] if request.unit else list(entry.units if entry else []) or \
        ([] if live else [None])
    out = []
    for unit in units:
        baseline, level, inventory_named = _judged(request, entry, unit)
        out.append(Target("ssh", unit, label, None, address, baseline, level, inventory_named))
    return out + live


def _inventory_set(inventory: str, known: dict, limit: str | None, request: TargetRequest) -> list[Target]:
    """Every (host, unit) the inventory lists (or --unit on each), only the hosts `limit` selects."""
    from ..collect.inventory import select_hosts
    hosts = list(known.values())
    out = []
    for entry in select_hosts(hosts, limit) if limit else hosts:
        units = [request.unit] if request.unit else list(entry.units)
        live = [] if request.unit else live_targets(entry, entry.name, request)
        if not units and not live:
            raise InputError(f"{inventory}: host {entry.name} lists no units (add units:, containers: or "
                             "kubernetes:, or pass --unit)")
        for unit in units:
            baseline, level, inventory_named = _judged(request, entry, unit)
            out.append(Target("ssh", unit, entry.name, None, entry, baseline, level, inventory_named))
        out += live
    return out


def live_targets(entry: HostTarget, label: str, request: TargetRequest) -> list[Target]:
    """An inventory entry's `containers:` (kind "container": the name, or None for `auto`) and its
    `kubernetes:` source (kind "kubernetes"; its workloads are listed when it is read). A container's
    own baseline (`containers: {NAME: BASELINE}`) wins over the host's, as a unit's does."""
    from ..collect.inventory import AUTO_CONTAINERS, NO_BASELINE
    out = []
    for name in entry.containers:
        baseline, level, inventory_named = _judged(request, entry, None)
        own = entry.container_baselines.get(name)
        if own is not None:
            inventory_named = None if own == NO_BASELINE else own
            if not request.baseline:
                baseline, level = (None, "none") if own == NO_BASELINE else (own, "unit")
        out.append(Target("container", None if name == AUTO_CONTAINERS else name, label, None, entry, baseline,
                          level, inventory_named))
    if entry.kubernetes is not None:
        baseline, level, inventory_named = _judged(request, entry, None)
        out.append(Target("kubernetes", None, label, None, entry, baseline, level, inventory_named))
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


_INVENTORIES: dict[tuple, list] = {}


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
    # one unit: an entry's Kubernetes workloads or `containers: auto` are many (a fleet run reads them)
    many = [t for t in targets if t.kind == "kubernetes" or (t.kind == "container" and t.unit is None)]
    if many and len(many) == len(targets):
        what = "Kubernetes workloads" if many[0].kind == "kubernetes" else "`containers: auto`"
        raise InputError(f"--host {many[0].host}: its inventory entry lists {what}: name one with --container NAME "
                         "(a running container) or --manifest FILE, or read them all with `report`")
    targets = [t for t in targets if t not in many]
    if len(targets) > 1:
        listed = ", ".join(t.unit if t.kind != "container" else f"container {t.unit}" for t in targets if t.unit)
        raise InputError(f"--host {targets[0].host} needs --unit (or --container): the inventory lists {listed}")
    return targets[0]
