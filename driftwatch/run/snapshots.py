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
from .prune import prune_store
from .voice import Voice, unheard

if TYPE_CHECKING:
    from ..collect.sshoptions import SSHOptions
    from ..engines.files import EngineFiles


def snapshot_fleet(hosts: tuple[str, ...] | list[str], inventory: str | None, unit: str | None,
                   unit_files: tuple[str, ...] | list[str], host_name: str | None, store: str | None,
                   engine_version: str | None, ssh: SSHOptions, files: EngineFiles, voice: Voice, *,
                   keep: int | None = None, keep_baselines_dir: str | None = None, progress=None,
                   limit: str | None = None, shard: Shard | None = None, results: list | None = None) -> bool:
    """Read `unit_files` (recorded as `host_name`) and the live hosts (`hosts` or the inventory's),
    save one snapshot each and say one line each (`voice.out`: host, unit, status, where it was saved
    or `-`; why a unit failed is said once, through `voice.say`); `results`,
    when given, gets each unit's record ({host, unit, status, snapshot, error}: `snapshot --format json`);
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
        _said(voice, results, {"host": snap.host or "local", "unit": snap.unit, "status": "ok",
                               "snapshot": str(saved), "error": None})
    if hosts or inventory:
        trouble = _snapshot_live(hosts, inventory, unit, store, engine_version, ssh, files, voice, progress, limit,
                                 shard, results)
    if keep:
        prune_store(store, keep, None, keep_baselines_dir, replace(voice, out=unheard, aside=unheard))
    return trouble


def _said(voice: Voice, results: list | None, record: dict) -> None:
    """One unit's outcome: a line `host, unit, status, snapshot` (`-` for none: why is said once, on
    stderr) and its record in `results`."""
    voice.out(f"{record['host']}\t{record['unit']}\t{record['status']}\t{record['snapshot'] or '-'}")
    if results is not None:
        results.append(record)


def _snapshot_live(hosts, inventory, unit, store, engine_version, ssh, files, voice: Voice, progress,
                   limit: str | None = None, shard: Shard | None = None, results: list | None = None) -> bool:
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
    outcomes: dict[int, dict] = {}  # id(raw) -> its record

    def record(raw, status: str, saved=None, error: str | None = None) -> dict:
        return {"host": raw.host, "unit": raw.unit, "status": status, "snapshot": str(saved) if saved else None,
                "error": error}

    def save(raw) -> None:  # as each answer arrives, while the other hosts are still being read (its thread)
        try:
            saved = save_snapshot(raw_to_snapshot(raw, engine_version, files), store, changes=changes_between)
            outcomes[id(raw)] = record(raw, raw.status, saved)
        except DriftwatchError as exc:
            status = raw.status if raw.status not in ("ok", "fallback") else "error"
            outcomes[id(raw)] = record(raw, status, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug on one host's input stays that host's error
            outcomes[id(raw)] = record(raw, "error", error=f"{raw.host}: {raw.unit}: internal error: "
                                                            f"{type(exc).__name__}")

    with AnswerWorker(save) as behind:  # parsed and saved off the collector's loop, in arrival order
        raws = collect_live(targets, ssh, inventory, progress, on_result=behind.put, warn=voice.warn, files=files)
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


def _step_costs(raw) -> str:
    """Where one host's time went, client side (connect, round trip, probe) and on the host (each
    step of the remote script)."""
    steps = getattr(raw, "step_seconds", None) or {}
    parts = [f"{name} {seconds * 1000:.0f} ms" for name, seconds in steps.items()]
    return f"{raw.host} {raw.unit}: " + (", ".join(parts) if parts else "no timings (not read)")
