"""`driftwatch history`, the use case: from what the user named (hosts, an inventory, a unit, a
baseline, `--since`) to the ``driftwatch.history/v1`` document (run/history_document.py), each unit
judged against its own baseline (run/targets.py) with since when each finding is there
(run/since.py). The diff of two snapshots is diff/'s (`diff.changes.changes_between`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import InputError
from ..snapshots.store import Store, open_store, safe_component
from ..timestamps import parse_when
from .history_document import groups_for, history_document

if TYPE_CHECKING:
    from ..engines.files import EngineFiles
    from ..report.document import HistoryDoc
    from .fleet import JudgingOptions
    from .targets import Target, TargetRequest
    from .voice import Voice


@dataclass(frozen=True)
class HistoryQuery:
    """What `history` is asked: the store, since when, and (with a request's baselines) the rules."""

    store: str | None = None
    since_text: str | None = None
    judging: JudgingOptions | None = None
    engine_version: str | None = None


def store_history(request: TargetRequest, query: HistoryQuery, files: EngineFiles, voice: Voice) -> HistoryDoc:
    """`driftwatch history`: the ``driftwatch.history/v1`` document for the named hosts (or the
    inventory's, or every unit in the store), since `query.since_text`; each unit's current findings
    against its own baseline (run/targets.py: the typed --baseline, else the inventory's for the
    unit, else the config file's) with since when each is there. An unreadable store entry is a
    warning (`voice.warn`) and a problem the document names."""
    from .targets import judged_pair, resolve_targets
    since = parse_when(query.since_text) if query.since_text else None
    st = open_store(query.store or None, on_problem=voice.warn)
    # checks --limit; the inventory's (host, unit) pairs when it is the set; HOST is a name in the store
    targets = resolve_targets(replace(request, recorded_names=True))
    hosts = list(request.hosts)
    pairs = [] if hosts else [(t.host or "", t.unit or "") for t in targets if t.kind == "ssh"]
    # an inventory's containers and workloads (not read with --unit, which names a systemd unit)
    live = [] if hosts or request.unit else stored_live_pairs(st, targets)
    inventory_run = not hosts and any(t.kind in ("ssh", "container", "kubernetes") for t in targets)
    _refuse_unknown(st, hosts, request.unit)
    if hosts:
        groups = groups_for(st, hosts, request.unit)
    elif inventory_run:  # the inventory's pairs only, never the whole store
        groups = groups_for(st, (), request.unit, pairs) if pairs else []
        listed = set(groups)
        groups += [(host, unit) for host, unit, _ in live if (host, unit) not in listed]
    else:
        groups = groups_for(st, (), request.unit)
    by_pair = {(t.host, t.unit): t.baseline for t in targets if t.kind == "ssh"}
    by_pair.update({(host, unit): baseline for host, unit, baseline in live})
    specs: dict[tuple, str | None] = {}
    for host, unit in groups:
        specs[(host, unit)] = by_pair[(host, unit)] if (host, unit) in by_pair else judged_pair(request, host, unit)[0]
    judging, cache = None, {}
    if any(specs.values()):
        from ..snapshots.baseline import baselines_dir as resolve_dir
        from .fleet import JudgingOptions
        from .reading import named_baseline
        options = query.judging or JudgingOptions()
        judging = options.load(query.engine_version)
        directory = resolve_dir(options.baselines_dir)
        for spec in dict.fromkeys(v for v in specs.values() if v):
            cache[spec] = named_baseline(spec, directory, files)
    note = _override_note(request, groups)
    if note:
        voice.aside(note)
    return history_document(st, groups, since, None, judging, engine_version=query.engine_version,
                            baseline_of=(lambda h, u: cache.get(specs.get((h, u)) or "")) if cache else None)


def stored_live_pairs(store: Store, targets: list[Target]) -> list[tuple[str, str, str | None]]:
    """(host, unit, baseline) of what an inventory's `containers:` and `kubernetes:` entries stored:
    their names are known only once read (run/live_containers.py), so they are found in the store by
    the shape of a container's label (`container/NAME/NAME` for a container on a host, any other
    label with a `/` for a workload or Pod); a systemd unit's name never holds a `/`."""
    found: dict[tuple[str, str], str | None] = {}  # in the order found; the first entry naming a unit wins
    stored: dict[str, list[str]] = {}  # each host's units, asked of the store once
    for target in targets:
        if target.kind not in ("container", "kubernetes"):
            continue
        host = target.host or ""
        if host not in stored:
            stored[host] = [unit for _, unit in store.groups(safe_component(host, "local"))]
        for unit in stored[host]:
            if target.kind == "container":
                wanted = unit.startswith(f"container/{target.unit}/") if target.unit else unit.startswith("container/")
            else:
                wanted = "/" in unit and not unit.startswith("container/")
            if wanted:
                found.setdefault((host, unit), target.baseline)
    return [(host, unit, baseline) for (host, unit), baseline in found.items()]


def _override_note(request: TargetRequest, groups: list[tuple[str, str]]) -> str | None:
    from .targets import baseline_override_note, judged_pair
    if not request.baseline:
        return None
    return baseline_override_note([judged_pair(request, h, u)[1] for h, u in groups])


def _refuse_unknown(store: Store, hosts: list[str], unit: str | None) -> None:
    """A host named on the command line of which the store holds no snapshot (of `unit`) is bad
    input, most often a typo: one line naming the hosts the store does hold (exit 2)."""
    wanted = unit is None or safe_component(unit, "unit")  # each named host's own rows: one index range
    missing = [h for h in hosts if not any(wanted is True or safe_component(ku, "unit") == wanted
                                           for _, ku in store.groups(safe_component(h, "local")))]
    if missing:
        held = sorted({h for h, _ in store.groups()})
        shown = ", ".join(held[:20]) + (f" and {len(held) - 20} more" if len(held) > 20 else "")
        what = f" {unit}" if unit else ""
        raise InputError(f"no snapshots of {', '.join(missing)}{what} in the store {store.root} "
                         f"(it holds {shown or 'no snapshots'})")


__all__ = ["HistoryQuery", "store_history"]
