"""Use cases on the snapshot store: a fleet snapshot (`driftwatch snapshot`) and retention (`prune`).

Each host's answer is parsed and saved as it arrives (on a thread of its own, answers.py), while the
others are still being read; its line is said in the order the hosts were named. One host's failure is its own line, never the others'.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import DriftwatchError, InputError
from .answers import AnswerWorker
from .shard import Shard, pick
from .voice import Voice, unheard

if TYPE_CHECKING:
    from ..collect.sshoptions import SSHOptions
    from ..engines.files import EngineFiles


def snapshot_fleet(hosts: tuple[str, ...] | list[str], inventory: str | None, unit: str | None,
                   unit_files: tuple[str, ...] | list[str], host_name: str | None, store: str | None,
                   engine_version: str | None, ssh: SSHOptions, files: EngineFiles, voice: Voice, *,
                   keep: int | None = None, keep_baselines_dir: str | None = None, progress=None,
                   limit: str | None = None, shard: Shard | None = None) -> bool:
    """Read `unit_files` (recorded as `host_name`) and the live hosts (`hosts` or the inventory's),
    save one snapshot each and say one line each (`voice.out`: host, unit, status, where or why);
    with `keep`, then prune the store as `prune --keep` would. True when a host could not be read
    or saved. `voice.aside` hears each host's timings (the CLI's --verbose). `files`: the engine
    configuration files the user gave. `limit`: an Ansible host pattern choosing the inventory's hosts;
    `shard`: only the hosts of that slice (`--shard I/N`)."""
    from .history import changes_between
    from .targets import snapshot_from_unit_file
    from ..snapshots.store import save_snapshot
    if not hosts and not inventory and not unit_files:
        raise InputError("nothing to snapshot: give HOST..., --inventory FILE or --unit-file FILE")
    trouble = False
    for path in unit_files:
        snap = snapshot_from_unit_file(path, host=host_name, engine_version=engine_version, files=files)
        if engine_version:
            snap.engine_version = engine_version  # the operator says which release runs it
        saved = save_snapshot(snap, store, changes=changes_between)  # history reads them, never diffs
        voice.out(f"{snap.host or 'local'}\t{snap.unit}\tok\t{saved}")
    if hosts or inventory:
        trouble = _snapshot_live(hosts, inventory, unit, store, engine_version, ssh, files, voice, progress, limit,
                                 shard)
    if keep:
        prune_store(store, keep, None, keep_baselines_dir, replace(voice, out=unheard, aside=unheard))
    return trouble


def _snapshot_live(hosts, inventory, unit, store, engine_version, ssh, files, voice: Voice, progress,
                   limit: str | None = None, shard: Shard | None = None) -> bool:
    from ..collect.unitname import validate_unit_name
    from .history import changes_between
    from .targets import collect_live, inventory_targets, raw_to_snapshot
    from ..snapshots.store import save_snapshot
    if limit and (hosts or not inventory):
        raise InputError("--limit chooses among an inventory's hosts: give --inventory FILE (and no HOST)")
    if hosts:
        if not unit:
            raise InputError("reading hosts needs --unit UNIT (or an --inventory that lists units)")
        targets = [(h, unit) for h in hosts]
    else:
        targets = inventory_targets(inventory, unit, limit)
    targets = pick(targets, shard)
    for _, u in targets:
        validate_unit_name(u)
    outcomes: dict[int, tuple[str, str | None]] = {}  # id(raw) -> (result line, problem)

    def save(raw) -> None:  # as each answer arrives, while the other hosts are still being read (its thread)
        try:
            saved = save_snapshot(raw_to_snapshot(raw, engine_version, files), store, changes=changes_between)
            outcomes[id(raw)] = (f"{raw.host}\t{raw.unit}\t{raw.status}\t{saved}", None)
        except DriftwatchError as exc:
            status = raw.status if raw.status not in ("ok", "fallback") else "error"
            outcomes[id(raw)] = (f"{raw.host}\t{raw.unit}\t{status}\t{exc}", str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug on one host's input stays that host's error
            problem = f"{raw.host}: {raw.unit}: internal error: {type(exc).__name__}"
            outcomes[id(raw)] = (f"{raw.host}\t{raw.unit}\terror\t{problem}", problem)

    with AnswerWorker(save) as behind:  # parsed and saved off the collector's loop, in arrival order
        raws = collect_live(targets, ssh, inventory, progress, on_result=behind.put, warn=voice.warn, files=files)
    trouble = False
    for raw in raws:  # in the order the hosts were named, whatever order they answered in
        line, problem = outcomes.get(id(raw)) or (f"{raw.host}\t{raw.unit}\t{raw.status}\t{raw.error}",
                                                  f"{raw.host}: {raw.unit}: {raw.error}")
        voice.out(line)
        voice.aside(_step_costs(raw))
        if problem is not None:
            trouble = True
            voice.say(problem)
    return trouble


def _step_costs(raw) -> str:
    """Where one host's time went, client side (connect, round trip, probe) and on the host (each
    step of the remote script)."""
    steps = getattr(raw, "step_seconds", None) or {}
    parts = [f"{name} {seconds * 1000:.0f} ms" for name, seconds in steps.items()]
    return f"{raw.host} {raw.unit}: " + (", ".join(parts) if parts else "no timings (not read)")


def prune_store(store: str | None, keep: int | None, older_than: str | None, baselines_dir: str | None,
                voice: Voice, *, dry_run: bool = False, host: str | None = None, unit: str | None = None) -> list:
    """Retention: delete old snapshots, never the newest of a host/unit nor one a baseline was made
    from; the records deleted (or that would be, with `dry_run`). Each is a `voice.out` line, the
    summary `voice.aside`, a store or baseline problem `voice.warn`."""
    from ..snapshots.baseline import baselines_dir as resolve_dir
    from .history import parse_duration
    from ..snapshots.store import SnapshotStore, baseline_protections
    if keep is None and not older_than:
        raise InputError("prune needs --keep N and/or --older-than D (e.g. --keep 100, --older-than 30d)")
    age = parse_duration(older_than) if older_than else None
    directory = resolve_dir(baselines_dir)
    protected = baseline_protections(directory, voice.warn)
    st = SnapshotStore(store or None, on_problem=voice.warn)
    gone = st.prune(keep=keep, older_than=age, protected=protected, host=host, unit=unit, dry_run=dry_run)
    for record in gone:
        voice.out(f"{'would delete' if dry_run else 'deleted'}\t{record.path}")
    names = len(protected)
    voice.aside(f"{'would prune' if dry_run else 'pruned'} {len(gone)} snapshot{'s' if len(gone) != 1 else ''} in "
               f"{st.root}; kept the newest of each host/unit and every snapshot of the {names} "
               f"baseline{'s' if names != 1 else ''} in {directory}/")
    return gone
