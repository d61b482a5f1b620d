"""Use cases on named baselines (`driftwatch baseline save | accept | list | show`).

A baseline is a known-good snapshot with the figures measured on it (snapshots/baseline.py keeps
the file format); these functions decide which snapshot and which figures go in.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DriftwatchError, InputError

if TYPE_CHECKING:
    from ..engines.files import EngineFiles
    from ..snapshots.baseline import Baseline
    from .reading import CollectOptions
    from .targets import TargetRequest


@dataclass(frozen=True)
class SaveDetails:
    """What `baseline save` records beside the unit: the host name (for a unit file), the figures
    measured on it, why it is known-good, whether to replace one, where baselines live."""

    host_name: str | None = None
    metrics: tuple[str, ...] = ()
    note: str | None = None
    force: bool = False
    baselines_dir: str | None = None


def save_named(name: str, request: TargetRequest, collect: CollectOptions, details: SaveDetails) -> Path:
    """Save NAME from the one unit `request` names (a snapshot, a unit file or a live host, looked
    up in the inventory); the file written. `collect.engine_version` is recorded with the unit."""
    from ..findings.metrics import check_accept_length
    from ..snapshots.baseline import baselines_dir as resolve_dir, save_baseline
    from ..snapshots.metrics import parse_metrics
    from .reading import read_target
    from .targets import one_of
    values = parse_metrics(details.metrics)
    snap = read_target(one_of(request), replace(collect, engine_version=None))  # type: ignore[arg-type]
    if details.host_name:
        snap.host = details.host_name
    if collect.engine_version:
        snap.engine_version = collect.engine_version
    check_accept_length(values, snap.engine, "--metric")
    return save_baseline(resolve_dir(details.baselines_dir), name, snap, values, details.note, details.force)


@dataclass(frozen=True)
class AcceptDetails:
    """Why today's drift is accepted, the figures measured on the new unit, whether the old ones
    still hold, and where baselines live."""

    reason: str
    metrics: tuple[str, ...] = ()
    keep_metrics: bool = False
    baselines_dir: str | None = None


def accept_drift(name: str, request: TargetRequest, collect: CollectOptions,
                 details: AcceptDetails) -> tuple[Path, bool]:
    """Replace NAME with the unit now known to be good: the one `request` names (a host looked up in
    the inventory), by default the host and unit NAME records, read live; (the file written, whether
    the old metrics were dropped)."""
    from ..findings.metrics import check_accept_length
    from ..snapshots.baseline import baselines_dir as resolve_dir, load_baseline, save_baseline
    from ..snapshots.metrics import parse_metrics
    from .reading import read_target
    from .targets import one_of, with_unit
    directory = resolve_dir(details.baselines_dir)
    old = load_baseline(name, directory)
    target = one_of(request, required=False)
    if target is None:
        if not old.host or not old.unit:
            raise InputError(f"baseline {name} records no host/unit; give --unit-file, --snapshot or --host/--unit")
        target = one_of(replace(request, hosts=(old.host,), unit=old.unit))
    elif target.kind == "ssh" and not target.unit and old.unit:
        target = with_unit(target, old.unit)
    snap = read_target(target, replace(collect, engine_version=None))  # type: ignore[arg-type]
    if not snap.host:
        snap.host = old.host
    if snap.source == "file" and not request.unit and old.unit:
        snap.unit = old.unit  # a local copy of the unit stands for the unit the baseline names
    values = dict(old.metrics) if details.keep_metrics else {}
    values.update(parse_metrics(details.metrics))
    check_accept_length(values, snap.engine, "--metric")
    note = f"accepted drift on {snap.collected_at}: {details.reason}" + (f" (was: {old.note})" if old.note else "")
    path = save_baseline(directory, name, snap, values, note, force=True)
    return path, bool(old.metrics) and not details.keep_metrics


def list_named(baselines_dir: str | None) -> tuple[Path, list[dict]]:
    """(the directory, one item per baseline in it: name, path, host, unit, metrics, saved_at,
    saved_by, note, error). A file that cannot be read is an item with its error, never a reason to
    hide the others."""
    from ..fileio import read_yaml
    from ..snapshots.baseline import BASELINE_SCHEMA, baselines_dir as resolve_dir, list_baselines
    directory = resolve_dir(baselines_dir)
    items: list[dict[str, Any]] = []
    for name in list_baselines(directory):
        item: dict[str, Any] = {"name": name, "path": str(directory / f"{name}.yaml"), "host": None, "unit": None,
                "metrics": {}, "saved_at": None, "saved_by": None, "note": None, "error": None}
        items.append(item)
        try:
            data = read_yaml(directory / f"{name}.yaml", "baseline")
        except DriftwatchError as exc:
            item["error"] = str(exc)
            continue
        if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA:
            item["error"] = "not a driftwatch baseline"
            continue
        raw_metrics = found if isinstance(found := data.get("metrics"), dict) else {}
        item.update(host=data.get("host"), unit=data.get("unit"), metrics=dict(raw_metrics),
                    saved_at=data.get("saved_at"), saved_by=data.get("saved_by"), note=data.get("note"))
    return directory, items


def show_named(name: str, baselines_dir: str | None, files: EngineFiles) -> Baseline:
    """The baseline NAME (or a baseline YAML, or a unit file, read with `files`)."""
    from ..snapshots.baseline import baselines_dir as resolve_dir
    from .reading import named_baseline
    return named_baseline(name, resolve_dir(baselines_dir), files)
