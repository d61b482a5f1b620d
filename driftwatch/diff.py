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
import shlex

from dataclasses import dataclass, field
from typing import Any

from deepdiff import DeepDiff

from .engines.registry import find_launcher, get_engine
from .model import EXPLICIT, RUNTIME, EngineConfig, FlagValue
from .parse.wrappers import NO_ENGINE
from .redact import is_redacted, is_secret_field
from .snapshot import Snapshot

# Concepts reported with the speculative finding they belong to (never as findings of their own
# when the algorithm itself changed).
SPECULATIVE_DETAILS = ("speculative.steps", "speculative.topk", "speculative.draft_tokens",
                       "speculative.draft_model")


@dataclass
class Difference:
    key: str  # native field, or env.NAME / unit.Section.Key / launcher.* / engine.version / host.gpus / exec.argv
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
    concept_baseline: Any = None  # the two sides as concept values (booleans mean "on"), for impact models
    concept_current: Any = None
    origin: dict = field(default_factory=dict)  # {"baseline": file, "current": file} that set each side

    def model_inputs(self) -> tuple[str, Any, Any]:
        """(name, baseline, current) as impact models read them: by concept where one applies."""
        if self.concept:
            return self.concept, self.concept_baseline, self.concept_current
        return self.key, self.baseline, self.current


@dataclass
class EnginePair:
    """Both sides' engine configs read under the release chosen for the comparison."""

    baseline: EngineConfig
    current: EngineConfig
    shared_version: bool

    @property
    def same_engine(self) -> bool:
        return self.baseline.engine == self.current.engine


def read_pair(baseline: Snapshot, current: Snapshot, engine_version: str | None = None) -> EnginePair:
    """Type both sides under one release of their engine unless each side records its own."""
    b_engine, c_engine = get_engine(baseline.launcher.engine), get_engine(current.launcher.engine)
    if b_engine is not c_engine or b_engine.name == NO_ENGINE:
        # Different engines (or none): each side is read by itself; flags are not compared.
        b = b_engine.read_config(baseline.engine_argv, engine_version=engine_version if b_engine is c_engine else None,
                                 recorded_version=baseline.engine_version,
                                 recorded_from=baseline.engine_version_from)
        c = c_engine.read_config(current.engine_argv, engine_version=engine_version if b_engine is c_engine else None,
                                 recorded_version=current.engine_version, recorded_from=current.engine_version_from)
        return EnginePair(b, c, b_engine is c_engine)
    engine = b_engine
    if engine_version:
        b = engine.read_config(baseline.engine_argv, engine_version=engine_version)
        c = engine.read_config(current.engine_argv, engine_version=engine_version)
        return EnginePair(b, c, True)
    if baseline.engine_version or current.engine_version:
        if baseline.engine_version:
            b = engine.read_config(baseline.engine_argv, recorded_version=baseline.engine_version,
                                   recorded_from=baseline.engine_version_from)
        else:
            b = engine.read_config(baseline.engine_argv, engine_version=current.engine_version)
            b.version_reason = (f"the current unit's {engine.label} {current.engine_version} "
                                "(the baseline records none)")
        if current.engine_version:
            c = engine.read_config(current.engine_argv, recorded_version=current.engine_version,
                                   recorded_from=current.engine_version_from)
        else:
            c = engine.read_config(current.engine_argv, engine_version=b.version)
            c.version_reason = f"the baseline's {engine.label} {b.version} (the current unit records none)"
        return EnginePair(b, c, b.version == c.version)
    version, why = engine.choose_release([baseline.engine_argv, current.engine_argv])
    b = engine.read_config(baseline.engine_argv, engine_version=version)
    c = engine.read_config(current.engine_argv, engine_version=version)
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
        diffs.append(_with_concept(Difference(
            key=key, label=_primary_label(key, b, c, label), baseline=bv, current=cv,
            baseline_source=bs, current_source=cs, kind=kind, notes=notes,
            secret=is_secret_field(key) or is_redacted(bv) or is_redacted(cv)), b, c))
    return _group_speculative(diffs, b, c)


def _with_concept(diff: Difference, b: EngineConfig, c: EngineConfig) -> Difference:
    """Name the difference's concept and give both sides as concept values."""
    binding = c.bindings.get(diff.key) or b.bindings.get(diff.key)
    if binding is not None:
        diff.concept = binding.concept
        diff.concept_baseline = binding.to_concept_value(diff.baseline)
        diff.concept_current = binding.to_concept_value(diff.current)
    return diff


def _primary_label(key: str, b: EngineConfig, c: EngineConfig, fallback: str) -> str:
    """The long, canonical spelling (--speculative-num-steps), not an abbreviation someone typed."""
    for config in (c, b):
        primary = get_engine(config.engine).primary_flag(key, config.version)
        if primary is not None:
            return primary
    return fallback


def _key_of(config: EngineConfig, concept: str) -> str | None:
    """The native field that expresses `concept` in this config (explicit binding first)."""
    keys = [k for k, binding in config.bindings.items() if binding.concept == concept]
    keys.sort(key=lambda k: config.flags[k].source != EXPLICIT if k in config.flags else True)
    return keys[0] if keys else None


def _concept_state(b: EngineConfig, c: EngineConfig, concept: str) -> dict:
    """{"baseline": value, "current": value} of a concept, by each side's native field."""
    out = {}
    for side, config in (("baseline", b), ("current", c)):
        key = _key_of(config, concept)
        out[side] = _flag_state(config.flags.get(key))[0] if key else None
    return out


def _group_speculative(diffs: list[Difference], b: EngineConfig, c: EngineConfig) -> list[Difference]:
    """Report speculative settings under their cause, by concept: an algorithm change carries the
    steps/topk/draft settings of both sides; values the engine derives from the steps (draft tokens
    forced to steps + 1) belong to the steps finding."""
    by_concept = {d.concept: d for d in diffs if d.concept}
    order = [d for d in diffs]

    def drop(diff: Difference) -> None:
        order.remove(diff)

    algo = by_concept.get("speculative.algorithm")
    if algo is not None:
        for concept in SPECULATIVE_DETAILS:
            detail = by_concept.get(concept)
            key = _key_of(c, concept) or _key_of(b, concept)
            if key is not None:
                algo.details[key] = _concept_state(b, c, concept)
            if detail is not None:
                drop(detail)
                algo.notes.extend(detail.notes)
        return order
    steps = by_concept.get("speculative.steps")
    draft = by_concept.get("speculative.draft_tokens")
    if draft is not None:
        derived = any(v is not None and v.follows == "speculative.steps"
                      for v in (b.flags.get(draft.key), c.flags.get(draft.key)))
        if derived or (draft.current_source != EXPLICIT and draft.baseline_source != EXPLICIT):
            drop(draft)
            if steps is None:
                key = _key_of(c, "speculative.steps") or _key_of(b, "speculative.steps") or "speculative_num_steps"
                state = _concept_state(b, c, "speculative.steps")
                steps = _with_concept(Difference(key=key, label=_primary_label(key, b, c, key),
                                                 baseline=state["baseline"], current=state["current"]), b, c)
                order.append(steps)
            steps.details[draft.key] = {"baseline": draft.baseline, "current": draft.current}
            steps.notes.append(f"draft tokens {draft.baseline} → {draft.current} follow (steps + 1 with topk 1)")
    if steps is not None:
        for concept in ("speculative.topk", "speculative.algorithm"):
            key = _key_of(c, concept) or _key_of(b, concept)
            if key is not None:
                steps.details.setdefault(key, _concept_state(b, c, concept))
    return order


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
    other_engine = b.launcher.engine != c.launcher.engine  # said once, by the launcher.engine finding
    for attr, label in (("interpreter", "interpreter"), ("entry", "entry point"), ("image", "container image")):
        bv, cv = getattr(b.launcher, attr), getattr(c.launcher, attr)
        if attr in ("interpreter", "entry") and (same_venv or other_engine):
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
        launcher = find_launcher(list(running))
        if launcher.engine != config.engine or config.engine == NO_ENGINE:
            return diffs  # not the same program: which process serves the unit is not known here
        running_config = get_engine(launcher.engine).read_config(launcher.engine_argv, engine_version=config.version)
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


def _engine_diff(baseline: Snapshot, current: Snapshot, pair: EnginePair) -> list[Difference]:
    """A different engine (or none) on one side: one finding, and the argv compared as words."""
    b, c = pair.baseline, pair.current
    diffs = []
    if not pair.same_engine:
        diffs.append(Difference(key="launcher.engine", label="engine", baseline=b.title, current=c.title,
                                notes=[f"the unit now runs {c.title} where the baseline ran {b.title}: "
                                       "settings and throughput are not comparable flag by flag"]))
    if NO_ENGINE not in (b.engine, c.engine):
        diffs += diff_concepts(b, c)  # a migration: what it changed, in words both engines share
    elif baseline.expanded_argv[1:] != current.expanded_argv[1:]:
        # The whole command line after the program: for `sh -c 'a && b'` every command of the script
        # counts, not only the innermost one the wrapper layer reached.
        diffs.append(Difference(key="exec.argv", label="arguments", baseline=shlex.join(baseline.expanded_argv[1:]),
                                current=shlex.join(current.expanded_argv[1:])))
    return diffs


def diff_concepts(b: EngineConfig, c: EngineConfig) -> list[Difference]:
    """Settings of two different engines compared by concept (SGLang --max-running-requests 16 vs
    vLLM --max-num-seqs 256). Only concepts one side sets; keyed by the current side's field."""
    diffs = []
    for concept in sorted({bd.concept for bd in b.bindings.values()} & {bd.concept for bd in c.bindings.values()}):
        b_key, c_key = _key_of(b, concept), _key_of(c, concept)
        bv, bs = _flag_state(b.flags.get(b_key))
        cv, cs = _flag_state(c.flags.get(c_key))
        if EXPLICIT not in (bs, cs):
            continue
        b_concept, c_concept = b.bindings[b_key].to_concept_value(bv), c.bindings[c_key].to_concept_value(cv)
        if not _changed(b_concept, c_concept) and RUNTIME not in (bs, cs):
            continue
        b_flag = get_engine(b.engine).primary_flag(b_key, b.version) or b_key
        c_flag = get_engine(c.engine).primary_flag(c_key, c.version) or c_key
        label = f"{concept} ({b_flag} → {c_flag})" if b_flag != c_flag else f"{concept} ({c_flag})"
        diffs.append(Difference(key=c_key, label=label, baseline=b_concept, current=c_concept,
                                baseline_source=bs, current_source=cs, concept=concept,
                                concept_baseline=b_concept, concept_current=c_concept,
                                secret=is_secret_field(b_key) or is_secret_field(c_key)
                                or is_redacted(bv) or is_redacted(cv)))
    return diffs


def diff_snapshots(baseline: Snapshot, current: Snapshot, pair: EnginePair) -> list[Difference]:
    if pair.same_engine and pair.baseline.engine != NO_ENGINE:
        diffs = diff_flags(pair.baseline, pair.current)
    else:
        diffs = _engine_diff(baseline, current, pair)
    used = _exec_vars(baseline) | _exec_vars(current)  # compared through the flags they expand into
    diffs += _dict_diff("env.", "{name}", {k: v for k, v in baseline.environment.items() if k not in used},
                        {k: v for k, v in current.environment.items() if k not in used}, secret_aware=True)
    diffs += _dict_diff("unit.", "{name}=", baseline.unit_keys, current.unit_keys)
    diffs += _launcher_diff(baseline, current)
    b_prefixes, c_prefixes = _prefix_set(baseline.prefixes), _prefix_set(current.prefixes)
    if b_prefixes != c_prefixes:  # `-` ignores a failed start, `!` runs privileged, …
        diffs.append(Difference(key="exec.prefixes", label="ExecStart prefixes", baseline=b_prefixes or None,
                                current=c_prefixes or None))
    if (pair.same_engine and baseline.engine_version and current.engine_version
            and baseline.engine_version != current.engine_version):
        changed = default_changes(pair.baseline, pair.current)
        label = f"{pair.current.label} release" if pair.same_engine else "engine release"
        diffs.append(Difference(key="engine.version", label=label, baseline=baseline.engine_version,
                                current=current.engine_version, details={"defaults_changed": changed},
                                notes=[f"{len(changed)} default{'s' if len(changed) != 1 else ''} differ between "
                                       "the releases for settings neither unit sets"] if changed else []))
    bg, cg = baseline.runtime.get("gpus"), current.runtime.get("gpus")
    if bg is not None and cg is not None and _gpu_summary(bg) != _gpu_summary(cg):
        diffs.append(Difference(key="host.gpus", label="GPUs", baseline=_gpu_summary(bg), current=_gpu_summary(cg)))
    diffs += _runtime_truths(current, pair.current)
    for diff in diffs:
        _attach_origin(diff, baseline, current)
    return diffs


def _prefix_set(prefixes: str) -> str:
    """ExecStart prefixes that change how the command runs, in a fixed order; `@` only renames
    argv[0] (the launch is the same) and is compared through the argv."""
    return "".join(sorted(set(prefixes) - {"@"}))


def _origin_key(diff: Difference) -> str | None:
    if diff.key.startswith(("env.", "unit.")):
        return diff.key
    if diff.key.startswith(("launcher.", "exec.")) or diff.baseline_source or diff.current_source:
        return "ExecStart"  # engine flags and the launcher are written on the ExecStart= line
    return None


def _attach_origin(diff: Difference, baseline: Snapshot, current: Snapshot) -> None:
    """Name the file (fragment or drop-in) that set each side: the template-vs-live question."""
    key = _origin_key(diff)
    if key is None:
        return
    origin = {side: snap.origins[key] for side, snap in (("baseline", baseline), ("current", current))
              if key in snap.origins}
    if origin:
        diff.origin = origin


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
