"""The fourth truth: what the server reported it runs with, laid over what the unit asks for.

Disk, loaded and running say what was *asked*; the start-up log (`runtime.startup`) and the probe
(`runtime.effective`) say what the engine *computed*: "--context-length 131072 → 19456 (computed at
start-up)". Measured beats assumed, so a reported value replaces a default or a computed-at-start-up
placeholder; where the unit sets the field and the server reports another value, that disagreement
is a finding of its own (`effective.<field>`).

Reported values belong to the process that printed them: they are used only while that process is
the unit's running server with the unit's command line (not for a stopped unit, a restart or
daemon-reload pending, or a running command line that could not be read); `not_applicable` says why
not, and compare.py asks it before using the server's figures too.
"""
from __future__ import annotations

from typing import Any

from ..engines.config import EXPLICIT, SOURCE_WORDS, EngineConfig, FlagValue
from ..engines.registry import get_engine
from ..redact import is_redacted, is_secret_field
from ..snapshots.reported import differs
from ..snapshots.snapshot import Snapshot
from .difference import Difference


def reported_fields(snapshot: Snapshot) -> dict[str, tuple[Any, str]]:
    """native field -> (value, where: startup | effective); the probe's answer wins (it is newer)."""
    out: dict[str, tuple[Any, str]] = {}
    for kind in ("startup", "effective"):
        for name, value in ((snapshot.runtime.get(kind) or {}).get("fields") or {}).items():
            out[name] = (value, kind)
    return out


def _merged(snapshot: Snapshot, part: str) -> dict[str, Any]:
    """One part (`concepts`, `figures`) of both reports; the probe's answer wins (it is newer)."""
    out: dict[str, Any] = {}
    for kind in ("startup", "effective"):
        out.update((snapshot.runtime.get(kind) or {}).get(part) or {})
    return out


def reported_concepts(snapshot: Snapshot, used_only: bool = False) -> dict[str, Any]:
    """concept -> value the server reported with no native field; `used_only`: none when the
    values do not describe the unit (`not_applicable`)."""
    if used_only and not_applicable(snapshot) is not None:
        return {}
    return _merged(snapshot, "concepts")


def reported_figures(snapshot: Snapshot) -> dict[str, float]:
    """Figures the server measured (start-up log, then the probe's live answer), when they are the
    unit's server's; an idle server's throughput of 0 says nothing about its speed."""
    if not_applicable(snapshot) is not None:
        return {}
    out = _merged(snapshot, "figures")
    for name in ("throughput", "accept_length"):
        if name in out and not out[name] > 0:
            del out[name]
    return out


def not_applicable(snapshot: Snapshot) -> str | None:
    """Why the reported values do not describe the unit on disk (None: they do). They do only for
    a server known to run the unit's command line now: not for a stopped unit (its last run's lines),
    a restart or daemon-reload pending, or a live unit whose running command line is unknown.
    (Environment changes without a restart are not seen here: only the command line is compared.)"""
    rt = snapshot.runtime
    if not (rt.get("startup") or rt.get("effective")):
        return None
    if rt.get("need_daemon_reload"):
        return "systemd has not loaded the unit on disk (daemon-reload pending)"
    state = rt.get("active_state")
    if state is not None and state not in ("active", "reloading"):
        return f"the unit is {state}: they are from a run that has ended"
    launcher = snapshot.running_launcher()  # the running argv, read once into the snapshot
    if launcher is not None:
        if launcher.engine != snapshot.launcher.engine or launcher.engine_argv != snapshot.engine_argv:
            return "the running server was started with other flags than the unit on disk (restart pending)"
    elif state is not None:
        return "the running server's command line could not be read (is it the unit on disk?)"
    return None


def overlay_reported(config: EngineConfig, snapshot: Snapshot) -> None:
    """Lay the server's values over the typed flags the unit leaves to the engine (in place)."""
    fields, concepts = reported_fields(snapshot), reported_concepts(snapshot)
    if not (fields or concepts):
        return
    why = not_applicable(snapshot)
    if why is not None:
        config.notes.append(f"the values the server reported were not used: {why}")
        return
    engine = get_engine(config.engine)
    for name, (value, kind) in fields.items():
        typed = config.flags.get(name)
        if typed is None:
            continue
        binding = config.bindings.get(name)
        if binding is not None:
            config.reported[binding.concept] = binding.to_concept_value(value)
        if typed.source == EXPLICIT:
            continue  # the unit's ask stays; a disagreement is reported by reported_truths
        config.flags[name] = FlagValue(value, kind, flag=typed.flag or engine.primary_flag(name, config.version))
    bound = {b.concept for b in config.bindings.values()}
    for concept, value in concepts.items():
        if concept in bound and concept not in config.reported:
            config.reported[concept] = value


def reported_truths(snapshot: Snapshot, config: EngineConfig) -> list[Difference]:
    """Fields with a concept the unit sets where the server reports another value (clamped or
    overridden)."""
    if not_applicable(snapshot) is not None:
        return []
    engine = get_engine(config.engine)
    diffs = []
    for name, (value, kind) in sorted(reported_fields(snapshot).items()):
        typed = config.flags.get(name)
        if typed is None or typed.source != EXPLICIT or not differs(config, name, typed.value, value):
            continue
        if name not in config.bindings:
            continue  # a setting no rule or model reads (how a path or name was spelled back)
        label = engine.primary_flag(name, config.version) or typed.flag or name
        binding = config.bindings.get(name)
        diff = Difference(key=f"effective.{name}", label=f"{label} (as the server runs it)", rule_by_key=True,
                          baseline=typed.value, current=value, baseline_source=EXPLICIT, current_source=kind,
                          secret=is_secret_field(name) or is_redacted(typed.value) or is_redacted(value),
                          notes=[f"the unit sets {label} {typed.value}; the server runs {value} "
                                 f"({SOURCE_WORDS[kind]})"])
        if binding is not None:
            diff.concept = binding.concept
            diff.concept_baseline = binding.to_concept_value(typed.value)
            diff.concept_current = binding.to_concept_value(value)
        diffs.append(diff)
    return diffs
