"""Two snapshots -> the semantic differences between them.

Spelling is not drift: both sides are typed under one catalog first, so aliases, prefixes, `=` vs
space, `0.8` vs `0.80`, NEXTN vs EAGLE and an explicit value equal to the default all compare equal.
A difference is reported under its cause: switching speculative decoding on/off/to another algorithm
is one difference keyed `speculative_algorithm` that carries its steps/topk/draft settings.
"""
from __future__ import annotations

import json
import posixpath
import re

from dataclasses import dataclass, field
from typing import Any

from deepdiff import DeepDiff

from .engines.launcher import find_launcher
from .engines.sglang.config import choose_version, read_engine_config
from .errors import EngineError
from .model import EXPLICIT, RUNTIME, EngineConfig, FlagValue
from .redact import is_redacted, is_secret_field
from .snapshot import Snapshot

SPECULATIVE_DETAIL_KEYS = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
                           "speculative_draft_model_path")


@dataclass
class Difference:
    key: str  # ServerArgs field, or env.NAME / unit.Section.Key / launcher.* / engine.version / host.gpus
    label: str  # how a person recognises it: --flag, NAME=, User=
    baseline: Any
    current: Any
    baseline_source: str | None = None  # explicit | default | runtime | absent (flags only)
    current_source: str | None = None
    kind: str = "changed"  # changed | added | removed
    details: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    secret: bool = False
    concept: str | None = None  # engine-neutral name (speculative.steps, parallel.tensor, ...), when one applies


@dataclass
class EnginePair:
    """Both sides' engine configs read under the release chosen for the comparison."""

    baseline: EngineConfig
    current: EngineConfig
    shared_version: bool


def read_pair(baseline: Snapshot, current: Snapshot, engine_version: str | None = None) -> EnginePair:
    """Type both sides under one release unless each side records its own."""
    if engine_version:
        b = read_engine_config(baseline.engine_argv, engine_version=engine_version)
        c = read_engine_config(current.engine_argv, engine_version=engine_version)
        return EnginePair(b, c, True)
    if baseline.engine_version or current.engine_version:
        if baseline.engine_version:
            b = read_engine_config(baseline.engine_argv, recorded_version=baseline.engine_version)
        else:
            b = read_engine_config(baseline.engine_argv, engine_version=current.engine_version)
            b.version_reason = f"the current unit's SGLang {current.engine_version} (the baseline records none)"
        if current.engine_version:
            c = read_engine_config(current.engine_argv, recorded_version=current.engine_version)
        else:
            c = read_engine_config(current.engine_argv, engine_version=b.version)
            c.version_reason = f"the baseline's SGLang {b.version} (the current unit records none)"
        return EnginePair(b, c, b.version == c.version)
    version, why = choose_version([baseline.engine_argv, current.engine_argv])
    b = read_engine_config(baseline.engine_argv, engine_version=version)
    c = read_engine_config(current.engine_argv, engine_version=version)
    for config in (b, c):
        config.version_reason = f"inferred: {why}"
    return EnginePair(b, c, True)


_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _norm(value: Any) -> Any:
    """Comparable form: numbers (also numeric strings) as floats, tuples as lists, strings stripped."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.match(text):
            return float(text)
        if text[:1] in "[{":  # a JSON value written with other spacing or key order
            try:
                return _norm(json.loads(text))
            except ValueError:
                return text
        if text.startswith("/") and len(text) > 1:
            return posixpath.normpath(text)  # /models/x/ is /models/x
        return text
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _norm(v) for k, v in value.items()}
    return str(value)


def _flag_state(value: FlagValue | None) -> tuple[Any, str]:
    if value is None:
        return None, "absent"
    return value.value, value.source


def _changed(a: Any, b: Any) -> bool:
    return bool(DeepDiff(_norm(a), _norm(b), ignore_numeric_type_changes=True, ignore_order=False))


def default_changes(b: EngineConfig, c: EngineConfig) -> dict[str, dict]:
    """Settings neither unit sets whose release default differs (or exists on one side only)."""
    changes = {}
    for key in sorted(set(b.flags) | set(c.flags)):
        bv, bs = _flag_state(b.flags.get(key))
        cv, cs = _flag_state(c.flags.get(key))
        if EXPLICIT in (bs, cs) or RUNTIME in (bs, cs):
            continue
        if bs == "absent" or cs == "absent" or _changed(bv, cv):
            changes[key] = {"baseline": bv if bs != "absent" else "not in this release",
                            "current": cv if cs != "absent" else "not in this release"}
    return changes


def diff_flags(b: EngineConfig, c: EngineConfig) -> list[Difference]:
    """Differences in what the units ask for. Defaults both sides leave alone are not drift here:
    when releases differ they belong to the engine.version finding (default_changes)."""
    diffs: list[Difference] = []
    for key in sorted(set(b.flags) | set(c.flags)):
        bv, bs = _flag_state(b.flags.get(key))
        cv, cs = _flag_state(c.flags.get(key))
        if EXPLICIT not in (bs, cs):
            continue
        if not _changed(bv, cv) and not (RUNTIME in (bs, cs) and (bv is None or cv is None)):
            continue  # an explicit value equal to the other side's default is spelling, not drift
        kind = "changed"
        if bs != EXPLICIT and cs == EXPLICIT:
            kind = "added"
        elif bs == EXPLICIT and cs != EXPLICIT:
            kind = "removed"
        flag_obj = c.flags.get(key) or b.flags.get(key)
        label = (c.flags.get(key).flag if cs == EXPLICIT else None) or (b.flags.get(key).flag if bs == EXPLICIT
                                                                        else None) or flag_obj.flag or key
        notes = [v.note for v in (b.flags.get(key), c.flags.get(key)) if v is not None and v.note]
        diffs.append(Difference(key=key, label=_primary_label(key, b, c, label), baseline=bv, current=cv,
                                baseline_source=bs, current_source=cs, kind=kind, notes=notes,
                                secret=is_secret_field(key) or is_redacted(bv) or is_redacted(cv)))
    return _group_speculative(diffs, b, c)


def _primary_label(key: str, b: EngineConfig, c: EngineConfig, fallback: str) -> str:
    """The long, canonical spelling (--speculative-num-steps), not an abbreviation someone typed."""
    from .engines.sglang.catalog import load_catalog
    for config in (c, b):
        spec = load_catalog(config.version).by_field.get(key)
        if spec is not None:
            return spec.primary
    return fallback


def _group_speculative(diffs: list[Difference], b: EngineConfig, c: EngineConfig) -> list[Difference]:
    by_key = {d.key: d for d in diffs}
    algo = by_key.get("speculative_algorithm")
    if algo is not None:
        # On, off or another algorithm: one finding carrying the speculative settings of each side.
        for key in SPECULATIVE_DETAIL_KEYS:
            detail = by_key.pop(key, None)
            bv, _ = _flag_state(b.flags.get(key))
            cv, _ = _flag_state(c.flags.get(key))
            algo.details[key] = {"baseline": bv, "current": cv}
            if detail is not None:
                algo.notes.extend(detail.notes)
        return list(by_key.values())
    steps = by_key.get("speculative_num_steps")
    draft = by_key.get("speculative_num_draft_tokens")
    forced = draft is not None and any("steps + 1" in note for note in draft.notes)
    if draft is not None and (forced or (draft.current_source != EXPLICIT and draft.baseline_source != EXPLICIT)):
        # Draft tokens forced to steps + 1 (topk 1) follow the steps change: report them there.
        by_key.pop("speculative_num_draft_tokens")
        if steps is None:
            steps = Difference(key="speculative_num_steps", label="--speculative-num-steps",
                               baseline=b.flags.get("speculative_num_steps").value if b.flags.get(
                                   "speculative_num_steps") else None,
                               current=c.flags.get("speculative_num_steps").value if c.flags.get(
                                   "speculative_num_steps") else None)
            by_key["speculative_num_steps"] = steps
        steps.details["speculative_num_draft_tokens"] = {"baseline": draft.baseline, "current": draft.current}
        steps.notes.append(f"draft tokens {draft.baseline} → {draft.current} follow (steps + 1 with topk 1)")
    if steps is not None:
        for key in ("speculative_eagle_topk", "speculative_algorithm"):
            bv, _ = _flag_state(b.flags.get(key))
            cv, _ = _flag_state(c.flags.get(key))
            steps.details.setdefault(key, {"baseline": bv, "current": cv})
    return list(by_key.values())


def _dict_diff(prefix: str, label_fmt: str, base: dict, cur: dict, secret_aware: bool = False) -> list[Difference]:
    diffs = []
    for name in sorted(set(base) | set(cur)):
        bv, cv = base.get(name), cur.get(name)
        if bv == cv:
            continue
        kind = "added" if bv is None else "removed" if cv is None else "changed"
        secret = secret_aware and (is_redacted(bv) or is_redacted(cv))
        diffs.append(Difference(key=f"{prefix}{name}", label=label_fmt.format(name=name), baseline=bv, current=cv,
                                kind=kind, secret=secret))
    return diffs


def _launcher_diff(b: Snapshot, c: Snapshot) -> list[Difference]:
    diffs = []
    same_venv = b.launcher.venv is not None and b.launcher.venv == c.launcher.venv
    for attr, label in (("interpreter", "interpreter"), ("entry", "entry point"), ("image", "container image")):
        bv, cv = getattr(b.launcher, attr), getattr(c.launcher, attr)
        if attr in ("interpreter", "entry") and same_venv:
            continue  # python vs python3, `-m sglang.launch_server` vs `sglang serve`: the same SGLang
        if bv != cv:
            diffs.append(Difference(key=f"launcher.{attr}", label=label, baseline=bv, current=cv,
                                    kind="added" if bv is None else "removed" if cv is None else "changed"))
    b_wrap = b.launcher.wrapper_args or b.launcher.wrappers
    c_wrap = c.launcher.wrapper_args or c.launcher.wrappers
    if b_wrap != c_wrap:
        diffs.append(Difference(key="launcher.wrappers", label="wrappers",
                                baseline=" | ".join(b_wrap) or None, current=" | ".join(c_wrap) or None))
    return diffs


def _runtime_truths(current: Snapshot, config: EngineConfig) -> list[Difference]:
    """Disk vs loaded vs running on the current side: restart/daemon-reload pending."""
    diffs: list[Difference] = []
    rt = current.runtime
    loaded = _loaded_argv(rt.get("loaded_exec_start"))
    if loaded is not None and not rt.get("need_daemon_reload") and loaded != " ".join(" ".join(current.argv).split()):
        rt = dict(rt, need_daemon_reload=True)  # systemd's loaded ExecStart differs from the file on disk
    if rt.get("need_daemon_reload"):
        diffs.append(Difference(key="systemd.loaded", label="daemon-reload pending", baseline="loaded = on disk",
                                current="on disk differs from what systemd loaded",
                                notes=["systemd reports NeedDaemonReload=yes: the next restart runs the unit "
                                       "on disk only after `systemctl daemon-reload`"]))
    running = rt.get("running_argv")
    if running:
        try:
            launcher = find_launcher(list(running))
        except EngineError:
            return diffs
        running_config = read_engine_config(launcher.engine_argv, engine_version=config.version)
        changed = diff_flags(running_config, config)
        if changed:
            summary = ", ".join(f"{d.label} (secret) changed" if d.secret else
                                f"{d.label} {_short(d.baseline)} → {_short(d.current)}" for d in changed[:6])
            diffs.append(Difference(key="process.argv", label="restart pending",
                                    baseline="running process", current="unit on disk",
                                    details={d.key: ({"running": "(redacted)", "unit": "(redacted)"} if d.secret
                                                     else {"running": d.baseline, "unit": d.current})
                                             for d in changed},
                                    notes=[f"the running server was started with other flags ({summary}); "
                                           "its throughput comes from the running flags until a restart."]))
    return diffs


def _loaded_argv(show_value: str | None) -> str | None:
    """`systemctl show -p ExecStart` -> the argv systemd loaded, joined by spaces (None if unknown).

    The property looks like `{ path=/usr/bin/x ; argv[]=/usr/bin/x -a b ; ignore_errors=no ; ... }`.
    """
    if not show_value:
        return None
    m = re.search(r"argv\[\]=(.*?) ; ignore_errors=", show_value, re.S)
    return " ".join(m.group(1).split()) if m else None


def _short(value: Any) -> str:
    return "default" if value is None else str(value)


def diff_snapshots(baseline: Snapshot, current: Snapshot, pair: EnginePair) -> list[Difference]:
    diffs = diff_flags(pair.baseline, pair.current)
    used = _exec_vars(baseline) | _exec_vars(current)  # compared through the flags they expand into
    diffs += _dict_diff("env.", "{name}", {k: v for k, v in baseline.environment.items() if k not in used},
                        {k: v for k, v in current.environment.items() if k not in used}, secret_aware=True)
    diffs += _dict_diff("unit.", "{name}=", baseline.unit_keys, current.unit_keys)
    diffs += _launcher_diff(baseline, current)
    if baseline.engine_version and current.engine_version and baseline.engine_version != current.engine_version:
        changed = default_changes(pair.baseline, pair.current)
        diffs.append(Difference(key="engine.version", label="SGLang release", baseline=baseline.engine_version,
                                current=current.engine_version, details={"defaults_changed": changed},
                                notes=[f"{len(changed)} default{'s' if len(changed) != 1 else ''} differ between "
                                       "the releases for settings neither unit sets"] if changed else []))
    bg, cg = baseline.runtime.get("gpus"), current.runtime.get("gpus")
    if bg is not None and cg is not None and _gpu_summary(bg) != _gpu_summary(cg):
        diffs.append(Difference(key="host.gpus", label="GPUs", baseline=_gpu_summary(bg), current=_gpu_summary(cg)))
    diffs += _runtime_truths(current, pair.current)
    return diffs


_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _exec_vars(snap: Snapshot) -> set[str]:
    """Environment variables the ExecStart line expands ($VAR, ${VAR})."""
    names = set()
    for word in snap.argv:
        for m in _VAR_REF.finditer(word.replace("$$", "")):
            names.add(m.group(1) or m.group(2))
    return names


def _gpu_summary(gpus: list) -> str:
    names: dict[str, int] = {}
    for gpu in gpus or []:
        name = str(gpu.get("name", "?")) if isinstance(gpu, dict) else str(gpu)
        names[name] = names.get(name, 0) + 1
    return ", ".join(f"{n}× {name}" for name, n in sorted(names.items())) or "none"
