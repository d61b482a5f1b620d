"""From finding to fix (`driftwatch restore`): per unit, the drop-in that brings it back to ITS OWN
baseline, checked before it is offered; written to a directory, saved as a reviewed plan, or installed
over SSH.

Each unit is read (a local file, or live over SSH), compared with its baseline (a typed --baseline,
else the inventory's for that unit), and planned (findings/restore.py). The plan's drop-in is laid
over the unit, read again and compared again; only a plan with nothing left but what the operator
keeps (or must set by hand) is offered. Installing (`--apply`, or `--apply PLAN` for a reviewed plan
file, run/plan.py) asks first, then re-reads the unit and refuses a host whose unit state hash moved,
whose baseline changed or whose drop-in planned again would differ; writes atomically and durably;
reloads where systemd runs, restarts only when asked, puts the previous file back when either fails;
then reads the unit again and reports what drift is left.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import EXIT_DRIFT, EXIT_OK, EXIT_TROUBLE, DriftwatchError, InputError
from .targets import Target
from .voice import Voice

if TYPE_CHECKING:
    from ..collect.install import Installer, OldFile, Step
    from ..collect.raw import RawUnit
    from ..collect.sshoptions import SSHOptions
    from ..engines.files import EngineFiles
    from ..findings.compare import Finding
    from ..findings.judging import Judging
    from ..findings.restore import RestorePlan
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot
    from .plan import PlannedDropin


@dataclass(frozen=True)
class RestoreRequest:
    """What was typed (and the config file's inventory/limit, kept apart: they never widen a typed
    target, and `--apply` never acts on the config's inventory alone)."""

    baseline: str | None = None
    unit_file: str | None = None
    host: str | None = None
    unit: str | None = None
    inventory: str | None = None  # typed --inventory
    limit: str | None = None  # typed --limit
    config_inventory: str | None = None
    config_limit: str | None = None
    keep: tuple[str, ...] = ()
    allow_engine_change: bool = False
    config_baseline: str | None = None  # the config file's baseline: only where the inventory names none


@dataclass(frozen=True)
class ApplyRequest:
    """What to do with the plans: save (--write DIR, --plan-out PLAN) and install (--apply [PLAN])."""

    write_dir: str | None = None
    plan_out: str | None = None
    apply: bool = False
    plan_file: str | None = None  # --apply PLAN: install exactly this reviewed plan
    confirm: Callable[[str], bool] | None = None  # None: --yes
    restart: bool = False
    reload_command: str | None = None
    restart_command: str | None = None


@dataclass(frozen=True)
class RestoreContext:
    """How units are judged and read."""

    judging: Judging
    baselines_dir: str | None
    ssh: SSHOptions
    files: EngineFiles
    voice: Voice


@dataclass
class Restored:
    """One unit's plan and what happened to it (`extra`: written, applied, reload, after …)."""

    plan: RestorePlan | None
    host: str | None
    unit: str
    extra: dict = field(default_factory=dict)
    raw: RawUnit | None = None
    target: Target | None = None
    base: Baseline | None = None

    def doc(self) -> dict:
        from ..report.restore import plan_doc
        if self.plan is None:
            return {"host": self.host, "unit": self.unit, "status": self.extra.get("status", "error"),
                    **{k: v for k, v in self.extra.items() if k != "status"}}
        return plan_doc(self.plan, self.extra)


@dataclass
class RestoreRun:
    units: list[Restored]
    applying: bool = False

    @property
    def exit_code(self) -> int:
        docs = [u.doc() for u in self.units]
        if any(d["status"] in ("error", "cannot-restore") or d.get("refused") or d.get("error") for d in docs):
            return EXIT_TROUBLE
        pending = [d for d in docs if d["status"] in ("restorable", "by-hand", "planned")
                   and not (self.applying and d.get("drift_after_apply") == [])]
        return EXIT_DRIFT if pending else EXIT_OK


def restore_units(request: RestoreRequest, outputs: ApplyRequest, ctx: RestoreContext) -> RestoreRun:
    """Plan (and check) each named unit's drop-in against its own baseline; `outputs` saves them or
    installs them (`confirm(diff)` asked per unit unless None: --yes)."""
    if outputs.plan_file:
        if request.unit_file or request.host or request.inventory or request.limit or request.baseline:
            raise InputError("--apply PLAN installs the plan's own targets: give no --host, --inventory, "
                             "--limit, --unit-file or --baseline with it")
        from .plan import read_plan
        entries = read_plan(outputs.plan_file)
        units = [_apply_entry(entry, outputs, ctx) for entry in entries]
        return RestoreRun(units, applying=True)
    if outputs.restart and not outputs.apply:
        raise InputError("--restart needs --apply")
    targets = _restore_targets(request, changes_hosts=outputs.apply)
    if outputs.apply and any(t.kind != "ssh" for t in targets):
        raise InputError("--apply installs over SSH: give --host/--unit or --inventory (or use --write DIR)")
    if outputs.plan_out and any(t.kind != "ssh" for t in targets):
        raise InputError("--plan-out plans an install over SSH: give --host/--unit or --inventory "
                         "(or use --write DIR)")
    units = _plan_all(targets, request, ctx)
    if outputs.write_dir:
        _write_all(units, outputs.write_dir)
    planned = [(r, _entry(r, request)) for r in units if _offered(r) and r.target and r.target.kind == "ssh"]
    if outputs.plan_out:
        from .plan import write_plan
        write_plan(outputs.plan_out, [e for _, e in planned])
        for r, _ in planned:
            r.extra["planned"] = outputs.plan_out
    if outputs.apply:
        for r, entry in planned:
            _apply_entry(entry, outputs, ctx, r)
    return RestoreRun(units, applying=outputs.apply)


# ------------------------------------------------------------------------------------ targets
def _restore_targets(request: RestoreRequest, changes_hosts: bool = False) -> list[Target]:
    """The units a restore acts on, each with its own baseline, as every command resolves them
    (run/targets.resolve_targets): named targets (a unit file, --host) are the whole set; the
    inventory (typed, else the config file's when nothing is named) is the set otherwise, narrowed by
    --limit. With `changes_hosts` (--apply) the config file's inventory alone never is."""
    from dataclasses import replace

    from ..collect.unitname import validate_unit_name
    from .targets import TargetRequest, resolve_targets
    if request.unit_file and (request.host or request.inventory):
        raise InputError("give one of --unit-file FILE, --host HOST --unit UNIT or --inventory INV")
    named = bool(request.unit_file or request.host)
    if changes_hosts and not named and not (request.inventory or request.limit) and request.config_inventory:
        raise InputError("--apply acts only on typed targets: the config file's inventory alone is never "
                         f"restored; give --inventory {request.config_inventory}, --limit PATTERN or --host HOST")
    targets = resolve_targets(TargetRequest(
        unit_files=(request.unit_file,) if request.unit_file else (), hosts=(request.host,) if request.host else (),
        unit=request.unit, inventory=request.inventory, limit=request.limit,
        config_inventory=request.config_inventory, config_limit=request.config_limit, baseline=request.baseline,
        changes_hosts=changes_hosts, config_baseline=request.config_baseline))
    # An inventory's containers and Kubernetes workloads are restored as patches of their manifests
    # (`restore --manifest`), never by a drop-in: they are not planned here (docs/config.md).
    live = [t for t in targets if t.kind in ("container", "kubernetes")]
    targets = [t for t in targets if t not in live]
    if not targets and live:
        raise InputError("restore plans systemd drop-ins: containers and Kubernetes workloads are restored as a "
                         "patch of their manifest (restore --manifest FILE --baseline NAME)")
    if not targets:
        raise InputError("give one of --unit-file FILE, --host HOST --unit UNIT or --inventory INV")
    out = []
    for t in targets:
        if t.kind == "unit-file":
            if not t.baseline:
                raise InputError("--unit-file needs --baseline NAME (no inventory names this file's baseline)")
            out.append(replace(t, unit=_unit_file_name(t.path or "", request.unit)))
        elif not t.unit:
            raise InputError("--host needs --unit (the systemd unit to restore)")
        else:
            out.append(replace(t, unit=validate_unit_name(t.unit)))
    return out


def _unit_file_name(path: str, unit: str | None) -> str:
    """The unit's name for --unit-file: --unit, else the `# /path` header of `systemctl cat`, else the
    file's name; validated as systemd would (never an absolute or `../` name: it names a folder)."""
    from ..collect.unitname import validate_unit_name
    if unit:
        return validate_unit_name(unit)
    from ..fileio import read_text_file
    from ..parse.unitfile import split_files
    name, _, _, _ = split_files(read_text_file(path))
    return validate_unit_name(name or os.path.basename(path))


# ------------------------------------------------------------------------------------ reading
def _read(targets: list[Target], ctx: RestoreContext) -> list[RawUnit | str]:
    """Each target's unit in clear (or why it could not be read), in order; hosts read in parallel."""
    from ..collect.fleet import collect_fleet
    from ..collect.raw import RawUnit
    from ..fileio import read_text_file
    from ..snapshots.reader import EngineReader
    out: list[RawUnit | str] = []
    ssh = [(i, t) for i, t in enumerate(targets) if t.kind == "ssh"]
    got: dict[int, RawUnit] = {}
    if ssh:
        pairs = [(t.address, t.unit) for _, t in ssh if t.address is not None]
        raws = collect_fleet(pairs, ctx.ssh, EngineReader(ctx.files))  # type: ignore[arg-type]
        for (i, t), raw in zip(ssh, raws, strict=False):
            raw.host = t.host or ""
            got[i] = raw
    for i, t in enumerate(targets):
        if t.kind == "unit-file" and t.path:
            text = read_text_file(t.path)
            from ..parse.unitfile import split_files
            _, _, parts, _ = split_files(text)
            out.append(RawUnit(host="", unit=t.unit or "", text=text, source="file", paths=[p for p, _ in parts if p]))
            continue
        raw = got[i]
        out.append(raw if raw.status in ("ok", "fallback") else
                   f"{raw.status}" + (f": {raw.error}" if raw.error else ""))
    return out


def _snapshot(raw: RawUnit, files: EngineFiles) -> Snapshot:
    from ..snapshots.snapshot import build_snapshot
    origin = f"{raw.host}:{raw.unit}" if raw.host else (raw.unit or "unit")
    snap = build_snapshot(raw, origin=origin, files=files)
    snap.host = raw.host or None
    snap.unit = raw.unit or snap.unit
    return snap


def _baseline(spec: str, ctx: RestoreContext, cache: dict) -> Baseline:
    from ..snapshots.baseline import baselines_dir as resolve_dir
    from .reading import named_baseline
    if spec not in cache:
        cache[spec] = named_baseline(spec, resolve_dir(ctx.baselines_dir), ctx.files)
    return cache[spec]


def _plan_all(targets: list[Target], request: RestoreRequest, ctx: RestoreContext) -> list[Restored]:
    from .targets import baseline_override_note
    note = baseline_override_note(targets)
    if note:
        ctx.voice.aside(note)  # one line, however many units the typed --baseline overrides
    cache: dict = {}
    for target in targets:  # a typed baseline that cannot be read is bad input, said before any host is read
        if target.baseline and target.baseline_from in ("typed", "config"):
            _baseline(target.baseline, ctx, cache)
    units = []
    for target, raw in zip(targets, _read(targets, ctx), strict=True):
        extra: dict = {"baseline_from": target.baseline_from}
        if target.baseline is None:
            units.append(Restored(None, target.host, target.unit or "",
                                  {"status": "no-baseline", "why": "the inventory names no baseline for this unit "
                                   "(give --baseline NAME)"}, None, target))
            continue
        if isinstance(raw, str):
            units.append(Restored(None, target.host, target.unit or "", {"error": raw}, None, target))
            continue
        try:
            base = _baseline(target.baseline, ctx, cache)
        except DriftwatchError as exc:
            units.append(Restored(None, target.host, target.unit or "", {"error": str(exc)}, raw, target))
            continue
        restored = _planned(raw, base, ctx, request.keep, request.allow_engine_change)
        restored.target, restored.base = target, base
        restored.extra.update(extra)
        units.append(restored)
    return units


def _planned(raw: RawUnit, base: Baseline, ctx: RestoreContext, keep: tuple[str, ...],
             allow_engine_change: bool) -> Restored:
    from ..findings.restore import laid_over, plan_restore, unit_secrets, verify
    from ..report.restore import dropin_text
    from ..snapshots.store import state_hash
    try:
        current = _snapshot(raw, ctx.files)
        result = ctx.judging.compare(base, current)
        plan = plan_restore(result, raw, keep, ctx.files, allow_engine_change)
        plan.state_hash = state_hash(current)
        if not plan.empty and not plan.problems:
            verify(plan, raw, dropin_text(plan), base, ctx.judging, ctx.files)
        if not plan.empty:
            text = dropin_text(plan)
            learned = unit_secrets(laid_over(raw, plan, text).text or "", plan.unit) | \
                unit_secrets(raw.text or "", plan.unit)
            plan.secrets.extend(s for s in learned if s in text and s not in plan.secrets)
    except DriftwatchError as exc:
        return Restored(None, raw.host or None, raw.unit, {"error": str(exc)}, raw)
    return Restored(plan, plan.host, plan.unit, {}, raw)


# ------------------------------------------------------------------------------------ writing
def _offered(restored: Restored) -> bool:
    p = restored.plan
    return p is not None and not p.empty and not p.problems


def _mode(plan: RestorePlan) -> int:
    return 0o600 if plan.secrets else 0o644


def _write_all(units: list[Restored], directory: str) -> None:
    """One file per host and unit: DIR/HOST/UNIT.d/DROPIN (DIR/UNIT.d/… for a local file), each
    written atomically; the unit and host names were validated (no absolute or `../` name)."""
    from ..fileio import write_atomic
    from ..report.restore import dropin_text
    for restored in units:
        if not _offered(restored):
            continue
        plan = restored.plan
        assert plan is not None
        rel = os.path.join(*([plan.host] if plan.host else []), f"{plan.unit}.d", os.path.basename(plan.path))
        target = os.path.join(directory, rel)
        if os.path.isabs(rel) or ".." in rel.split(os.sep):
            raise InputError(f"--write {directory}: refused to write outside it: {rel}")
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            write_atomic(target, dropin_text(plan), mode=_mode(plan))
        except OSError as exc:
            raise InputError(f"--write {directory}: cannot write {rel}: {exc.strerror or exc}") from None
        restored.extra["written"] = target


def _entry(restored: Restored, request: RestoreRequest) -> PlannedDropin:
    from ..report.restore import dropin_text
    from .plan import Address, PlannedDropin, file_hash, sha256_text
    plan, target, base = restored.plan, restored.target, restored.base
    assert plan is not None and target is not None and target.address is not None and base is not None
    a = target.address
    text = dropin_text(plan)
    return PlannedDropin(
        host=target.host or a.name, unit=plan.unit,
        address=Address(a.name, a.address, a.user, a.port, a.identity),
        state_hash=plan.state_hash or "", path=plan.path, dropin=text, dropin_sha256=sha256_text(text),
        mode=f"0{_mode(plan):o}", baseline=base.name,
        baseline_path=os.path.abspath(base.path) if base.path else target.baseline,
        baseline_sha256=file_hash(base.path), keep=tuple(request.keep),
        allow_engine_change=request.allow_engine_change, secrets=tuple(plan.secrets))


# ------------------------------------------------------------------------------------ applying
def _refuse(restored: Restored, words: str) -> Restored:
    restored.extra["refused"] = True
    restored.extra["applied"] = f"refused: {words}; nothing written"
    return restored


def _masked(entry: PlannedDropin, text: str) -> str:
    """`text` (the drop-in, or the file now on the host) with every secret masked as compare masks it:
    those the plan copied from the unit, and whatever the text itself holds (a plan file keeps none)."""
    from ..findings.restore import unit_secrets
    from ..report.restore import mask_secrets
    secrets = set(entry.secrets) | unit_secrets(entry.dropin, entry.unit) | unit_secrets(text, entry.unit)
    return mask_secrets(text, secrets)


def _apply_entry(entry: PlannedDropin, outputs: ApplyRequest, ctx: RestoreContext,
                 restored: Restored | None = None) -> Restored:
    """Install one planned drop-in: confirm, then (after the confirmation) re-read the unit and
    re-plan it, refuse on any change since review, write, reload, restart, put back on failure."""
    from ..collect.install import Installer
    if restored is None:
        restored = Restored(None, entry.host, entry.unit, {"status": "planned", "baseline": entry.baseline,
                                                           "path": entry.path, "state_hash": entry.state_hash})
    try:
        installer = Installer(entry.address.host_target(), ctx.ssh)
    except DriftwatchError as exc:
        return _refuse(restored, str(exc))
    try:
        old = installer.old(entry.path)
        if old.kind in ("symlink", "other"):
            return _refuse(restored, f"{entry.path} is a {'symlink' if old.kind == 'symlink' else 'directory or '}"
                                     f"{'' if old.kind == 'symlink' else 'special file'} on the host")
        if outputs.confirm is not None:
            if not outputs.confirm(_diff(entry, old.text)):
                restored.extra["applied"] = "not applied (not confirmed)"
                return restored
        # After the confirmation: the unit, the baseline and the drop-in planned now, as reviewed?
        why = _moved(entry, ctx)
        if why:
            return _refuse(restored, why)
        step = installer.write(entry.path, entry.dropin, entry.mode)
        if step.status == "no-root":
            return _refuse(restored, f"logged in as {step.detail}, neither root nor allowed `sudo -n`")
        if step.status == "refused":
            return _refuse(restored, step.detail)
        if step.status != "written":
            restored.extra["error"] = f"install failed ({step.status} {step.detail})"
            return _refuse(restored, f"install failed ({step.status} {step.detail})")
        restored.extra["applied"] = f"installed {entry.path}"
        if not _reload_and_restart(installer, entry, outputs, restored):
            _put_back(installer, entry, old, outputs, restored)
            return restored
    except DriftwatchError as exc:
        restored.extra["refused"] = True
        restored.extra["error"] = str(exc)
        restored.extra["applied"] = f"failed: {exc}"
        return restored
    finally:
        installer.close()
    _after(restored, entry, ctx)
    return restored


def _diff(entry: PlannedDropin, old: str | None) -> str:
    from ..report.restore import diff_text
    return diff_text(entry.path, _masked(entry, entry.dropin), _masked(entry, old) if old else None)


def _reread(entry: PlannedDropin, ctx: RestoreContext) -> RawUnit:
    from ..collect.fleet import collect_fleet
    from ..snapshots.reader import EngineReader
    [raw] = collect_fleet([(entry.address.host_target(), entry.unit)], ctx.ssh,
                          EngineReader(ctx.files))
    raw.host = entry.host
    return raw


def _moved(entry: PlannedDropin, ctx: RestoreContext) -> str | None:
    """Why the host is no longer as reviewed (None: it is): the unit's state hash, the baseline file,
    the drop-in planned again now."""
    from ..report.restore import dropin_text
    from ..snapshots.store import state_hash
    from .plan import file_hash, sha256_text
    raw = _reread(entry, ctx)
    if raw.status not in ("ok", "fallback"):
        return f"the unit could not be read again ({raw.status})"
    try:
        now = state_hash(_snapshot(raw, ctx.files))
    except DriftwatchError as exc:
        return f"the unit could not be read again ({exc})"
    if now != entry.state_hash:
        return f"the unit changed since it was compared (state {now}, reviewed {entry.state_hash})"
    if entry.baseline_sha256 and file_hash(entry.baseline_path) != entry.baseline_sha256:
        return f"the baseline {entry.baseline} changed since the plan was reviewed ({entry.baseline_path})"
    try:
        base = _baseline(entry.baseline_path or entry.baseline, ctx, {})
    except DriftwatchError as exc:
        return f"the baseline cannot be read again ({exc})"
    again = _planned(raw, base, ctx, entry.keep, entry.allow_engine_change)
    if again.plan is None or not _offered(again) or sha256_text(dropin_text(again.plan)) != entry.dropin_sha256:
        return "the drop-in planned now differs from the reviewed one (re-plan and review again)"
    return None


def _reload_and_restart(installer: Installer, entry: PlannedDropin, outputs: ApplyRequest, restored: Restored) -> bool:
    """daemon-reload (and restart when asked); False when either failed (the error goes in the JSON)."""
    from ..collect.install import RELOAD, RESTART, restart_command
    reload_cmd = outputs.reload_command or RELOAD
    step = installer.systemd(reload_cmd, check_systemd=outputs.reload_command is None)
    restored.extra["reload"] = _step_words(step, reload_cmd)
    if step.status in ("error", "no-root"):
        restored.extra["error"] = f"`{reload_cmd}` failed: {step.detail or step.status}"
        return False
    if outputs.restart:
        command = restart_command(outputs.restart_command or RESTART, entry.unit)
        step = installer.systemd(command, check_systemd=outputs.restart_command is None)
        restored.extra["restarted"] = _step_words(step, command)
        if step.status in ("error", "no-root"):
            restored.extra["error"] = f"`{command}` failed: {step.detail or step.status}"
            return False
    return True


def _put_back(installer: Installer, entry: PlannedDropin, old: OldFile, outputs: ApplyRequest,
              restored: Restored) -> None:
    """The previous file back (removed when there was none), then reload again."""
    from ..collect.install import RELOAD
    step = installer.put_back(entry.path, old)
    restored.extra["refused"] = True
    if step.status in ("written", "removed"):
        what = "the previous file put back" if old.kind == "present" else "the drop-in removed (there was none)"
    else:
        what = f"the previous file could NOT be put back ({step.status} {step.detail})"
    reload_cmd = outputs.reload_command or RELOAD
    again = installer.systemd(reload_cmd, check_systemd=outputs.reload_command is None)
    restored.extra["applied"] = f"rolled back: {what}; {_step_words(again, reload_cmd)}"


def _step_words(step: Step, command: str) -> str:
    if step.status == "ok":
        return f"ran `{command}`"
    if step.status == "no-systemd":
        return f"not run: systemd is not running on the host; run `{command}` there"
    if step.status == "no-root":
        return f"not run: no root or sudo rights for `{command}`"
    return f"`{command}` failed: {step.detail}"


def _after(restored: Restored, entry: PlannedDropin, ctx: RestoreContext) -> None:
    """Read the unit again after the install and say what drift is left."""
    raw = _reread(entry, ctx)
    if raw.status not in ("ok", "fallback"):
        restored.extra["after"] = f"could not read it again: {raw.status}"
        return
    try:
        base = _baseline(entry.baseline_path or entry.baseline, ctx, {})
        result = ctx.judging.compare(base, _snapshot(raw, ctx.files))
    except DriftwatchError as exc:
        restored.extra["after"] = f"could not compare it again: {exc}"
        return
    left = [f.difference.label for f in result.findings if not any(fnmatch(f, pat) for pat in entry.keep)]
    restored.extra["drift_after_apply"] = [{"key": f.key, "label": f.difference.label} for f in result.findings]
    restored.extra["after"] = ("no drift from baseline " + base.name) if not result.findings else \
        ("still differs: " + ", ".join(left or [f.difference.label for f in result.findings]))


def fnmatch(finding: Finding, pattern: str) -> bool:
    from fnmatch import fnmatchcase
    d = finding.difference
    return any(fnmatchcase(n, pattern) for n in (d.key, d.label, d.label.rstrip("="), d.concept or "") if n)
