"""From finding to fix (`driftwatch restore`): per unit, the drop-in that brings it back to its
baseline, checked before it is offered; written to a directory or installed over SSH.

Each unit is read (a local file, or live over SSH), compared with the baseline, and planned
(findings/restore.py). The plan's drop-in is laid over the unit, read again and compared again;
only a plan with nothing left but what the operator keeps (or must set by hand) is offered.
`--apply` re-reads each unit just before writing and refuses a unit whose state hash moved since
the comparison (or differs from `--expect-state`), writes atomically, reloads where systemd runs,
restarts only when asked, then reads the unit again and reports what drift is left.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import EXIT_DRIFT, EXIT_OK, EXIT_TROUBLE, DriftwatchError, InputError
from .voice import Voice

if TYPE_CHECKING:
    from ..collect.raw import RawUnit
    from ..collect.sshoptions import SSHOptions
    from ..engines.files import EngineFiles
    from ..findings.restore import RestorePlan


@dataclass
class Restored:
    """One unit's plan and what happened to it (`extra`: written, applied, reload, after …)."""

    plan: "RestorePlan | None"
    host: str | None
    unit: str
    extra: dict = field(default_factory=dict)
    raw: "RawUnit | None" = None

    def doc(self) -> dict:
        from ..report.restore import plan_doc
        if self.plan is None:
            return {"host": self.host, "unit": self.unit, "status": "error", **self.extra}
        return plan_doc(self.plan, self.extra)


@dataclass
class RestoreRun:
    units: list[Restored]

    @property
    def exit_code(self) -> int:
        docs = [u.doc() for u in self.units]
        if any(d["status"] in ("error", "cannot-restore") or d.get("refused") for d in docs):
            return EXIT_TROUBLE
        if any(d["status"] in ("restorable", "by-hand") for d in docs):
            return EXIT_DRIFT
        return EXIT_OK


def restore_units(baseline_spec: str, *, unit_file: str | None, host: str | None, unit: str | None,
                  inventory: str | None, baselines_dir: str | None, keep: tuple[str, ...], rules_dir: str | None,
                  ignores: tuple[str, ...], ignore_file: str | None, write_dir: str | None, apply: bool,
                  confirm: Callable[[str], bool] | None, restart: bool, expect_state: str | None,
                  reload_command: str | None, restart_command: str | None, ssh: "SSHOptions",
                  files: "EngineFiles", voice: Voice, limit: str | None = None) -> RestoreRun:
    """Plan (and check) each named unit's drop-in; `write_dir` saves them, `apply` installs them
    (`confirm(diff)` asked per unit unless None: --yes)."""
    from ..findings.judging import load_judging
    from ..snapshots.baseline import baselines_dir as resolve_dir
    from .targets import named_baseline
    if limit and not inventory:
        raise InputError("--limit chooses among an inventory's hosts: give --inventory FILE")
    if sum(bool(x) for x in (unit_file, host, inventory)) != 1:
        raise InputError("give one of --unit-file FILE, --host HOST --unit UNIT or --inventory INV")
    if apply and unit_file:
        raise InputError("--apply installs over SSH: give --host/--unit or --inventory (or use --write DIR)")
    if expect_state and inventory:
        raise InputError("--expect-state names one unit's state: use it with --host/--unit")
    if restart and not apply:
        raise InputError("--restart needs --apply")
    judging = load_judging(rules_dir, ignores, ignore_file, None, None)
    base = named_baseline(baseline_spec, resolve_dir(baselines_dir), files)
    read = _reader(unit_file, host, unit or (base.unit if host else None), inventory, ssh, files, limit)
    units: list[Restored] = []
    for spec, raw_or_error in read:
        if isinstance(raw_or_error, str):
            units.append(Restored(None, spec[0], spec[1], {"error": raw_or_error}))
            continue
        units.append(_planned(raw_or_error, base, judging, keep, files, spec))
    if write_dir:
        _write_all(units, write_dir, voice)
    if apply:
        for restored in units:
            _apply_one(restored, base, judging, keep, files, ssh, confirm, restart, expect_state, reload_command,
                       restart_command, inventory, voice)
    return RestoreRun(units)


# ------------------------------------------------------------------------------------ reading
def _reader(unit_file, host, unit, inventory, ssh, files, limit=None) -> list[tuple[tuple, object]]:
    """[((host, unit, target spec), RawUnit | error text)] for what the user named."""
    from ..collect.raw import RawUnit
    from ..fileio import read_text_file
    if unit_file:
        text = read_text_file(unit_file)
        raw = RawUnit(host="", unit=unit or "", text=text, source="file", paths=[])
        if not raw.unit:
            from ..parse.unitfile import split_files
            name, _, parts, _ = split_files(text)
            raw.unit = name or os.path.basename(unit_file)
            raw.paths = [p for p, _ in parts if p]
        return [((None, raw.unit, None), raw)]
    from .targets import inventory_targets
    if host:
        if not unit:
            raise InputError("--host needs --unit (the systemd unit to restore)")
        pairs = [(host, unit)]
    else:
        pairs = inventory_targets(inventory, unit, limit)
    return [((raw.host, raw.unit, spec), raw if raw.status in ("ok", "fallback") else
             f"{raw.status}" + (f": {raw.error}" if raw.error else ""))
            for (spec, _), raw in zip(pairs, _collect(pairs, ssh, inventory, files))]


def _collect(pairs, ssh, inventory, files):
    from .targets import collect_live
    from ..collect.unitname import validate_unit_name
    for _, u in pairs:
        validate_unit_name(u)
    return collect_live(pairs, ssh, inventory, files=files)


def _snapshot(raw, files):
    from ..snapshots.snapshot import build_snapshot
    origin = f"{raw.host}:{raw.unit}" if raw.host else (raw.unit or "unit")
    snap = build_snapshot(raw, origin=origin, files=files)
    snap.host = raw.host or None
    return snap


def _planned(raw, base, judging, keep, files, spec) -> Restored:
    from ..findings.restore import plan_restore, verify
    from ..report.restore import dropin_text
    from ..snapshots.store import state_hash
    try:
        current = _snapshot(raw, files)
        result = judging.compare(base, current)
        plan = plan_restore(result, raw, keep, files)
        plan.state_hash = state_hash(current)
        if not plan.empty and not plan.problems:
            verify(plan, raw, dropin_text(plan), base, judging, files)
    except DriftwatchError as exc:
        return Restored(None, spec[0], spec[1], {"error": str(exc)}, raw)
    return Restored(plan, plan.host, plan.unit, {"target": spec[2]} if spec[2] else {}, raw)


# ------------------------------------------------------------------------------------ writing
def _offered(restored: Restored) -> bool:
    p = restored.plan
    return p is not None and not p.empty and not p.problems


def _write_all(units: list[Restored], directory: str, voice: Voice) -> None:
    """One file per host and unit: DIR/HOST/UNIT.d/50-driftwatch-restore.conf (DIR/UNIT.d/… for a
    local file), each written atomically."""
    from ..fileio import write_atomic
    from ..report.restore import dropin_text
    for restored in units:
        if not _offered(restored):
            continue
        plan = restored.plan
        rel = os.path.join(*([plan.host] if plan.host else []), f"{plan.unit}.d", os.path.basename(plan.path))
        target = os.path.join(directory, rel)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            write_atomic(target, dropin_text(plan), mode=0o600 if plan.secrets else 0o644)
        except OSError as exc:
            raise InputError(f"--write {directory}: cannot write {rel}: {exc.strerror or exc}") from None
        restored.extra["written"] = target


# ------------------------------------------------------------------------------------ applying
def _apply_one(restored: Restored, base, judging, keep, files, ssh, confirm, restart, expect_state,
               reload_command, restart_command, inventory, voice: Voice) -> None:
    from ..collect.install import RELOAD, RESTART, Installer
    from ..collect.inventory import parse_target
    from ..report.restore import diff_text, dropin_text
    from ..snapshots.store import state_hash
    from .targets import _inventory
    plan, extra = restored.plan, restored.extra
    if not _offered(restored):
        return
    spec = extra.get("target") or plan.host
    # The unit again, just before writing: refused when it moved since it was compared.
    [raw] = _collect([(spec, plan.unit)], ssh, inventory, files)
    try:
        now = state_hash(_snapshot(raw, files)) if raw.status in ("ok", "fallback") else None
    except DriftwatchError:
        now = None
    wanted = expect_state or plan.state_hash
    if now is None or now != wanted:
        extra["refused"] = True
        extra["applied"] = (f"refused: the unit changed since it was compared (state {now or 'unreadable'}, "
                            f"expected {wanted}); nothing written")
        return
    known = {t.name: t for t in _inventory(inventory)} if inventory else {}
    try:
        installer = Installer(known.get(spec) or parse_target(spec), ssh)
    except DriftwatchError as exc:
        extra["refused"] = True
        extra["applied"] = f"refused: {exc}"
        return
    try:
        text = dropin_text(plan)
        if confirm is not None:
            old = installer.read(plan.path)
            if not confirm(diff_text(plan, old)):
                extra["applied"] = "not applied (not confirmed)"
                return
        step = installer.write(plan.path, text, "0600" if plan.secrets else "0644")
        if step.status == "no-root":
            extra["refused"] = True
            extra["applied"] = (f"refused: logged in as {step.detail}, neither root nor allowed `sudo -n`; "
                                "nothing written")
            return
        if step.status != "written":
            extra["refused"] = True
            extra["applied"] = f"failed ({step.status} {step.detail}); nothing written"
            return
        extra["applied"] = f"installed {plan.path}"
        reload = installer.systemd(reload_command or RELOAD, check_systemd=reload_command is None)
        extra["reload"] = _step_words(reload, reload_command or RELOAD)
        if restart:
            command = (restart_command or RESTART).replace("{unit}", plan.unit)
            extra["restarted"] = _step_words(installer.systemd(command, check_systemd=restart_command is None),
                                             command)
    except DriftwatchError as exc:
        extra["refused"] = True
        extra["applied"] = f"failed: {exc}"
        return
    finally:
        installer.close()
    _after(restored, base, judging, keep, files, ssh, spec, inventory)


def _step_words(step, command: str) -> str:
    if step.status == "ok":
        return f"ran `{command}`"
    if step.status == "no-systemd":
        return f"not run: systemd is not running on the host; run `{command}` there"
    if step.status == "no-root":
        return f"not run: no root or sudo rights for `{command}`"
    return f"`{command}` failed: {step.detail}"


def _after(restored: Restored, base, judging, keep, files, ssh, spec, inventory) -> None:
    """Read the unit again after the install and say what drift is left."""
    [raw] = _collect([(spec, restored.plan.unit)], ssh, inventory, files)
    if raw.status not in ("ok", "fallback"):
        restored.extra["after"] = f"could not read it again: {raw.status}"
        return
    snap = _snapshot(raw, files)
    result = judging.compare(base, snap)
    left = [f.difference.label for f in result.findings
            if not any(fnmatch(f, pat) for pat in keep)]
    restored.extra["drift_after_apply"] = [{"key": f.key, "label": f.difference.label} for f in result.findings]
    restored.extra["after"] = ("no drift from baseline " + base.name) if not result.findings else \
        ("still differs: " + ", ".join(left or [f.difference.label for f in result.findings]))


def fnmatch(finding, pattern: str) -> bool:
    from fnmatch import fnmatchcase
    d = finding.difference
    return any(fnmatchcase(n, pattern) for n in (d.key, d.label, d.label.rstrip("="), d.concept or "") if n)
