"""Named known-good snapshots (baselines/NAME.yaml) with what was measured on them.

A baseline is meant to be reviewed in git: host by name (never an address), the unit as read, the
typed flags, and metrics such as `throughput: 70`. It is never overwritten without --force.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BaselineError, InputError
from ..fileio import dump_yaml_readable, read_yaml, write_new

if TYPE_CHECKING:  # typing a snapshot imports the engines: only where one is read (prune needs none)
    from .snapshot import Snapshot

BASELINE_SCHEMA = "driftwatch.baseline/v1"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


@dataclass
class Baseline:
    name: str
    snapshot: Snapshot
    metrics: dict[str, float] = field(default_factory=dict)
    note: str | None = None
    saved_by: str | None = None
    saved_at: str | None = None
    path: str | None = None

    @property
    def host(self) -> str | None:
        return self.snapshot.host

    @property
    def unit(self) -> str | None:
        return self.snapshot.unit


def baselines_dir(option: str | None = None) -> Path:
    return Path(option or os.environ.get("DRIFTWATCH_BASELINES") or "baselines")


def list_baselines(directory: Path) -> list[str]:
    """Names of the baselines in `directory`: regular files only (a FIFO or a socket named *.yaml
    would block a read forever)."""
    if not directory.is_dir():
        return []
    return sorted(p.stem for p in directory.glob("*.yaml") if not p.name.startswith(".") and p.is_file())


def baseline_to_dict(baseline: Baseline) -> dict:
    # lazy, here and below: .snapshot loads the engines, the parser and redact (hashlib); listing and
    # pruning baselines (`baselines_dir`, `list_baselines`) need none of them
    from .snapshot import snapshot_to_dict
    return {
        "schema": BASELINE_SCHEMA,
        "name": baseline.name,
        "host": baseline.host,
        "unit": baseline.unit,
        "metrics": dict(baseline.metrics),
        "note": baseline.note,
        "saved_by": baseline.saved_by,
        "saved_at": baseline.saved_at,
        "snapshot": snapshot_to_dict(baseline.snapshot),
    }


def save_baseline(directory: Path, name: str, snapshot: Snapshot, metrics: dict[str, float],
                  note: str | None, force: bool) -> Path:
    from .snapshot import now_utc
    if not NAME_RE.match(name):
        raise InputError(f"baseline name {name!r}: use letters, digits, '.', '_' and '-' only")
    import getpass  # only when a baseline is saved: reading baselines (prune, report) skips termios and socket
    import socket
    user = getpass.getuser() if hasattr(os, "getuid") else "unknown"
    baseline = Baseline(name=name, snapshot=snapshot, metrics=metrics, note=note,
                        saved_by=f"{user}@{socket.gethostname()}", saved_at=now_utc())
    path = directory / f"{name}.yaml"
    header = (f"# driftwatch baseline {name!r}: a known-good unit and what was measured on it.\n"
              "# Review changes to this file like code. Regenerate with `driftwatch baseline save --force`.\n")
    write_new(path, header + dump_yaml_readable(baseline_to_dict(baseline), f"baseline {name}"), force=force)
    return path


def baseline_from_dict(data, origin: str, engine_version: str | None = None) -> Baseline:
    from .snapshot import SNAPSHOT_SCHEMA, _Fields, snapshot_from_dict
    if not isinstance(data, dict):
        raise BaselineError(f"{origin}: not a driftwatch baseline (expected a mapping with schema {BASELINE_SCHEMA})")
    schema = data.get("schema")
    if schema == SNAPSHOT_SCHEMA:  # a snapshot used directly as an ad-hoc baseline
        snap = snapshot_from_dict(data, origin, engine_version)
        name = f"{snap.host}:{snap.unit}" if snap.host and snap.unit else Path(origin).stem
        return Baseline(name=name, snapshot=snap, path=origin)
    if schema != BASELINE_SCHEMA:
        if isinstance(schema, str) and schema.startswith("driftwatch.baseline/"):
            raise BaselineError(f"{origin}: baseline schema {schema} is newer than this driftwatch understands "
                                f"({BASELINE_SCHEMA}); upgrade driftwatch")
        raise BaselineError(f"{origin}: not a driftwatch baseline (expected schema {BASELINE_SCHEMA})")
    f = _Fields(origin, "baseline")  # every key type-checked: one line naming the file, key and problem
    metrics = {}
    for key, value in f.mapping(data, "metrics").items():
        if not isinstance(key, str):
            raise f.fail("metrics", f"a metric name that is {f.kind(key)}, not a string")
        metrics[key] = float(f.number(value, f"metrics.{key}", -1e12, 1e12))
    if not isinstance(data.get("snapshot"), dict):
        raise f.fail("snapshot", "missing" if data.get("snapshot") is None else
                     f"expected a mapping, found {f.kind(data.get('snapshot'))}")
    snap = snapshot_from_dict(data.get("snapshot"), origin, engine_version, what="baseline", prefix="snapshot.")
    # The top-level host/unit are the ones people review and edit by hand: they win.
    for key in ("host", "unit"):
        value = f.text(data, key)
        if value is not None:
            setattr(snap, key, value)
    return Baseline(name=f.text(data, "name") or Path(origin).stem, snapshot=snap, metrics=metrics,
                    note=f.text(data, "note"), saved_by=f.text(data, "saved_by"), saved_at=f.text(data, "saved_at"),
                    path=origin)


def load_baseline(spec: str, directory: Path, engine_version: str | None = None,
                  unit_reader=None) -> Baseline:
    """--baseline NAME | PATH.yaml | UNIT_FILE. Unknown names list the known ones."""
    path = Path(spec)
    looks_like_path = os.sep in spec or spec.endswith((".yaml", ".yml", ".service")) or path.exists()
    if not looks_like_path:
        candidate = directory / f"{spec}.yaml"
        if not candidate.exists():
            known = list_baselines(directory)
            listing = ", ".join(known) if known else "none"
            raise BaselineError(f"unknown baseline {spec!r} in {directory}/ (known: {listing})")
        path = candidate
    if not path.exists():
        raise BaselineError(f"{path}: no such baseline file")
    if path.suffix in (".yaml", ".yml"):
        return baseline_from_dict(read_yaml(path, "baseline"), str(path), engine_version)
    if unit_reader is None:
        raise BaselineError(f"{path}: not a baseline YAML file")
    snap = unit_reader(str(path))
    return Baseline(name=path.name, snapshot=snap, path=str(path))
