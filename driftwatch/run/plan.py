"""The reviewed restore plan (`restore --plan-out PLAN`, then `restore --apply PLAN`), as terraform's:
what was reviewed is what is installed, and only while the host still is as it was reviewed.

The file (JSON, schema `driftwatch.restore-plan/v1`, mode 0600: a drop-in may hold a secret the
unit holds) lists per target the host's recorded name and address, the unit, the unit's state hash
when it was compared, the drop-in's path, text and sha256, and the baseline's name, file and sha256.
`--apply PLAN` re-reads each unit after the confirmation and refuses a host whose state hash moved,
whose baseline file changed, or whose drop-in planned again now would differ.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from ..collect.inventory import HostTarget

PLAN_SCHEMA = "driftwatch.restore-plan/v1"
MAX_PLAN_BYTES = 16 * 1024 * 1024


def sha256_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_hash(path: str | None) -> str | None:
    """sha256 of a baseline file's bytes (None: the baseline is not a file)."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            return "sha256:" + hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


@dataclass(frozen=True)
class Address:
    """How the host was reached: the inventory's address, user, port and key (or the typed HOST)."""

    name: str
    address: str | None = None
    user: str | None = None
    port: int | None = None
    identity: str | None = None

    def host_target(self) -> HostTarget:
        from ..collect.inventory import HostTarget
        return HostTarget(name=self.name, address=self.address, user=self.user, port=self.port,
                          identity=self.identity)


@dataclass(frozen=True)
class PlannedDropin:
    """One target's reviewed drop-in."""

    host: str
    unit: str
    address: Address
    state_hash: str
    path: str
    dropin: str
    dropin_sha256: str
    mode: str
    baseline: str
    baseline_path: str | None
    baseline_sha256: str | None
    keep: tuple[str, ...] = ()
    allow_engine_change: bool = False
    secrets: tuple[str, ...] = field(default=(), compare=False)  # masked when shown; never stored

    def doc(self) -> dict:
        doc = asdict(self)
        doc.pop("secrets")
        doc["keep"] = list(self.keep)
        return doc


def write_plan(path: str, entries: list[PlannedDropin]) -> None:
    """The plan file, 0600, written atomically."""
    from ..fileio import write_atomic
    doc = {"schema": PLAN_SCHEMA, "targets": [e.doc() for e in entries]}
    try:
        write_atomic(path, json.dumps(doc, indent=2) + "\n", mode=0o600)
    except OSError as exc:
        raise InputError(f"--plan-out {path}: cannot write: {exc.strerror or exc}") from None


def read_plan(path: str) -> list[PlannedDropin]:
    """The plan file's targets; anything else than a plan this release writes is one clear error."""
    from ..collect.unitname import validate_unit_name
    from ..findings.restore import DROPIN_NAME
    try:
        if os.path.getsize(path) > MAX_PLAN_BYTES:
            raise InputError(f"{path}: not a restore plan (over {MAX_PLAN_BYTES} bytes)")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as exc:
        raise InputError(f"--apply {path}: cannot read the plan: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"--apply {path}: not a restore plan (not JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != PLAN_SCHEMA or not isinstance(doc.get("targets"), list):
        raise InputError(f"--apply {path}: not a restore plan (schema {PLAN_SCHEMA} expected)")
    out = []
    for i, t in enumerate(doc["targets"]):
        try:
            a = t["address"]
            entry = PlannedDropin(
                host=str(t["host"]), unit=validate_unit_name(str(t["unit"])),
                address=Address(str(a["name"]), a.get("address"), a.get("user"),
                                int(a["port"]) if a.get("port") is not None else None, a.get("identity")),
                state_hash=str(t["state_hash"]), path=str(t["path"]), dropin=str(t["dropin"]),
                dropin_sha256=str(t["dropin_sha256"]), mode=str(t["mode"]), baseline=str(t["baseline"]),
                baseline_path=t.get("baseline_path"), baseline_sha256=t.get("baseline_sha256"),
                keep=tuple(str(k) for k in t.get("keep") or ()),
                allow_engine_change=t.get("allow_engine_change") is True)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"--apply {path}: target {i + 1} is not a planned drop-in ({exc})") from None
        if entry.path != f"/etc/systemd/system/{entry.unit}.d/{DROPIN_NAME}" or entry.mode not in ("0600", "0644"):
            raise InputError(f"--apply {path}: target {i + 1}: drop-in path or mode not one restore writes")
        if sha256_text(entry.dropin) != entry.dropin_sha256:
            raise InputError(f"--apply {path}: target {i + 1}: the drop-in does not match its sha256 "
                             "(edited after review?)")
        out.append(entry)
    return out
