"""One host's unit, read and typed: the record that snapshots, baselines and comparisons share.

A Snapshot keeps what is needed to re-read the engine flags under another catalog (the redacted
engine argv and the recorded release), so two units can be compared under one release.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..collect.raw import RawUnit
from ..engines.config import EngineConfig, FoldedKeys, Issue, folded_issues, folded_keys
from ..engines.files import NO_FILES, EngineFiles
from ..engines.registry import ENGINES, carried_files, find_launcher, get_engine
from ..errors import DriftwatchError, InputError
from ..facts import model_facts
from ..facts.gpu import INTERCONNECTS
from ..fileio import MAX_TEXT_BYTES, loads_json
from ..parse.containers import value_kind
from ..parse.environment import parse_environment_file, parse_environment_values
from ..parse.execstart import ExecStartError, resolve_exec_start
from ..parse.launcher import Launcher
from ..parse.said import public
from ..parse.unitfile import LIST_KEYS, parse_unit_text
from ..parse.wrappers import NO_ENGINE
from ..redact import Redactor, credential_kind, load_public_env, visible
from ..timestamps import utc_now as now_utc
from .reported import EFFECTIVE, KINDS as REPORTED_KINDS, STARTUP, keep_reported
from .unitload import refusal_issues, unknown_value_issues

SNAPSHOT_SCHEMA = "driftwatch.snapshot/v1"
# [Service] keys whose drift we report besides ExecStart/Environment (which are read deeper).
_SKIPPED_SERVICE_KEYS = {"ExecStart", "Environment", "UnsetEnvironment"}  # read into the environment


@dataclass
class Snapshot:
    host: str | None
    unit: str | None
    source: str
    collected_at: str
    paths: list[str]
    unit_text: str  # redacted
    argv: list[str]  # ExecStart after quoting, before expansion (redacted)
    expanded_argv: list[str]  # after $VAR expansion (redacted)
    prefixes: str
    environment: dict[str, str]  # redacted
    environment_files: list[str]
    unit_keys: dict[str, str]  # "Service.User" -> value
    launcher: Launcher
    engine_version: str | None  # recorded with the unit (collector), never inferred
    engine: EngineConfig  # typed flags under the catalog chosen for this snapshot alone
    issues: list[Issue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    runtime: dict[str, Any] = field(default_factory=dict)  # loaded ExecStart, running argv, gpus, measured
    origins: dict[str, str] = field(default_factory=dict)  # "ExecStart" / "env.NAME" / "unit.S.K" -> file that set it
    # unit_keys holds every key of every section, Exec hooks included; False for a file saved before
    # (its unit_keys are [Service] keys only, without hooks): diff then compares only what both record.
    all_unit_keys: bool = True
    load_errors: list[str] = field(default_factory=list)  # why systemd would not load the unit (public)
    unreadable_files: list[str] = field(default_factory=list)  # required EnvironmentFile= paths not read
    unknown_variables: list[str] = field(default_factory=list)  # used by the command, maybe set by those

    @property
    def engine_argv(self) -> list[str]:
        return self.launcher.engine_argv

    def running_launcher(self) -> Launcher | None:
        """The running process's command line (`runtime["running_argv"]`) peeled to its engine, read
        once per snapshot however often a comparison asks (the diff's restart-pending check, whether
        the reported values describe the unit, each side's overlay); None when it is not known."""
        running = self.runtime.get("running_argv")
        if not running:
            return None
        key = (tuple(running), self.launcher.engine, tuple(self.engine_argv))  # what the reading depends on
        hit = self.__dict__.get("_running")
        if hit is None or hit[0] != key:
            files = carried_files(self.launcher.engine, self.engine_argv)
            hit = (key, find_launcher(list(running), files=files), {})
            self.__dict__["_running"] = hit
        return hit[1]

    def running_config(self, version: str | None) -> EngineConfig | None:
        """The running process's flags typed under `version` (the catalog its unit is compared
        under), once per snapshot and version; None when no process is known or it runs no engine.
        Shared: read it, never change it."""
        launcher = self.running_launcher()
        if launcher is None or launcher.engine == NO_ENGINE:
            return None
        typed: dict[str | None, EngineConfig] = self.__dict__["_running"][2]
        if version not in typed:
            typed[version] = get_engine(launcher.engine).read_config(launcher.engine_argv, engine_version=version)
        return typed[version]

    @property
    def engine_version_from(self) -> str | None:
        """How the recorded release is known, when not from the collector: the image tag."""
        if self.engine_version and self.engine_version == get_engine(self.launcher.engine).release_from_image(
                self.launcher.image):
            return f"named by the image tag {self.launcher.image}"
        return None


def _locate(message: str, where: str, prefix: str = "") -> str:
    """`FILE[:LINE]: prefix reason`; parser messages may already start with FILE:LINE."""
    if message.startswith(where + ":"):
        rest = message[len(where) + 1:]
        m = re.match(r"(\d+):\s*(.*)", rest, re.S)
        if m:
            return f"{where}:{m.group(1)}: {prefix}{m.group(2)}"
        return f"{where}: {prefix}{rest.lstrip()}"
    return f"{where}: {prefix}{message}"


def _origins(unit, environment: dict[str, str], environment_files: list[str]) -> dict[str, str]:
    """Which file (fragment or drop-in) set ExecStart, each environment variable and each unit key:
    the last assignment in systemd's order wins, as it does for the value."""
    origins: dict[str, str] = {}
    for a in unit.assignments:
        if a.path is None:
            continue
        if a.section != "Service":
            origins[f"unit.{a.section}.{a.key}"] = a.path
        elif a.key == "ExecStart":
            if a.value:
                origins["ExecStart"] = a.path
        elif a.key == "Environment":
            for name in parse_environment_values([a.value], None, []):
                origins[f"env.{name}"] = a.path
        else:
            origins[f"unit.{a.section}.{a.key}"] = a.path
    for name in environment:  # set by an EnvironmentFile= rather than Environment=
        if f"env.{name}" not in origins and environment_files:
            origins[f"env.{name}"] = environment_files[-1]
    return origins


def _typed_options(config: EngineConfig) -> dict[str, bool]:
    """The option spellings an engine typed in this argv, and whether each holds a credential."""
    return {v.flag: credential_kind(k, v.value) for k, v in config.explicit().items()
            if isinstance(v.flag, str) and v.flag.startswith("-")}




def credential_options() -> tuple[str, ...]:
    """Every credential flag of every registered engine's catalogs (`--api-key`, `--hf-token`, …):
    an abbreviation of one is a secret's name wherever it appears in a command line."""
    found: set[str] = set()
    for engine in ENGINES.values():
        catalogs = getattr(engine, "catalogs", None)
        found.update(getattr(catalogs, "credential_options", ()) or ())
    return tuple(sorted(found))


def build_snapshot(raw: RawUnit, engine_version: str | None = None, origin: str | None = None,
                   files: EngineFiles = NO_FILES) -> Snapshot:
    """Parse a collected unit into a Snapshot. Raises InputError/UnitError naming `origin`.
    The engine reads a vLLM `--config FILE` from `files` (the ones the user gave) and from the unit's
    own files the collector fetched from its host (`RawUnit.engine_files`)."""
    where = origin or f"{raw.host}:{raw.unit}"
    if raw.text is None or not raw.text.strip():
        raise InputError(f"{where}: unit is empty")
    if not isinstance(raw.text, str):
        raise InputError(f"{where}: unit text is not text")
    size = len(raw.text.encode("utf-8", "surrogateescape"))
    if size > MAX_TEXT_BYTES:  # one limit, however the unit was read (a file, systemctl cat, over SSH)
        raise InputError(f"{where}: unit text is larger than the limit ({size} bytes; the limit is "
                         f"{MAX_TEXT_BYTES} bytes)")
    try:
        unit = parse_unit_text(raw.text, name=raw.unit or None,
                               path=raw.paths[0] if raw.paths else origin)
        result = resolve_exec_start(unit, raw.environment_inputs())
        command = result.command
    except ExecStartError as exc:  # systemd's wording quotes the value: the public form never does
        raise type(exc)(visible(_locate(public(exc), where, "systemd would refuse this unit: "))) from None
    except DriftwatchError as exc:
        raise type(exc)(visible(_locate(public(exc), where))) from None
    # Read everything in clear first, to learn which values are secrets however they were written
    # (abbreviated flags, ${VAR}, wrapper environments), then scrub them everywhere before storing.
    clear_expanded = list(result.expanded_argv)
    at_path = getattr(command, "path", None)
    if "@" in command.prefixes and at_path:
        clear_expanded = [at_path] + clear_expanded[1:]  # `@path name …`: path runs, name is argv[0]
    unit_files = files.with_fetched(getattr(raw, "engine_files", None))
    launcher = find_launcher(clear_expanded, dict(result.environment), unit_files)
    engine_plugin = get_engine(launcher.engine)
    # The release: what the collector read from the host, else what the container image's tag names.
    recorded = raw.engine_version or engine_plugin.release_from_image(launcher.image)
    recorded_from = None if raw.engine_version or not recorded else f"named by the image tag {launcher.image}"
    clear_engine = engine_plugin.read_config(launcher.engine_argv, engine_version=engine_version,
                                             recorded_version=recorded, recorded_from=recorded_from,
                                             environment=result.environment)
    policy = Redactor(public_env=load_public_env(), credential_options=credential_options())
    policy.learn_typed(clear_engine.explicit(), credential_kind)
    policy.typed_public.update(launcher.entry.split())  # `vllm serve`: the subcommand word is the engine's
    running_typed: dict[str, bool] | None = None
    running_launcher = None
    if raw.running_argv:  # the running process may hold other secrets than the unit on disk
        try:
            running_launcher = find_launcher(list(raw.running_argv), files=unit_files)
            if running_launcher.engine == launcher.engine:
                running = engine_plugin.read_config(running_launcher.engine_argv,
                                                    engine_version=clear_engine.version or None)
                policy.learn_typed(running.explicit(), credential_kind)
                running_typed = _typed_options(running)
        except DriftwatchError:
            running_launcher = None
    # Each field through the policy (learning every secret), then one scrub of them all.
    clear_engine_argv = list(launcher.engine_argv)
    engine_argv = policy.words(clear_engine_argv, _typed_options(clear_engine) if launcher.engine != NO_ENGINE
                               else None)
    if running_launcher is not None and running_typed is not None:
        policy.words(list(running_launcher.engine_argv), running_typed)
    argv = policy.words(list(command.argv))
    # no $VAR to expand (the usual case): the same words, redacted once (8 000 words cost 0.1 s a pass)
    expanded = list(argv) if clear_expanded == list(command.argv) else policy.words(clear_expanded)
    wrapper_args = [policy.text(w) for w in launcher.wrapper_args]
    launcher_env = {k: policy.env_value(k, v) for k, v in launcher.env.items()}
    # The server's environment: in a container (`docker|podman run IMAGE`), what -e/--env give it (the
    # image's defaults and an --env-file's contents are unknown here); the unit's Environment= reaches
    # only the container client, and is compared as the unit key Service.Environment.
    clear_environment = dict(launcher.env) if launcher.image else {**result.environment, **launcher.env}
    environment = {k: policy.env_value(k, v) for k, v in clear_environment.items()}
    for text in (raw.environment_files or {}).values():  # variables a later file overrides still hold secrets
        for k, v in parse_environment_file(text if isinstance(text, str) else "").items():
            policy.env_value(k, v)
    unit_keys: dict[str, str] = {}
    for section, keys in unit.sections().items():  # every section: [Unit] After=, [Install] WantedBy=, …
        for key, values in keys.items():
            if (section == "Service" and key in _SKIPPED_SERVICE_KEYS) or not values:
                continue
            if key.startswith("Exec"):  # ExecStartPre=, ExecStopPost=, …: every command, in order, as
                # one list (systemd runs them one after another; `;` is its own separator of commands)
                unit_keys[f"{section}.{key}"] = " ; ".join(policy.assignment_value(section, key, v)
                                                           for v in values)
                continue
            # A scalar set twice (a drop-in over the fragment) is its last value, as systemd reads it.
            joined = " ".join(values) if len(values) > 1 and key in LIST_KEYS else values[-1]
            unit_keys[f"{section}.{key}"] = policy.unit_value(section, key, joined)
    if launcher.image and unit.values("Service", "Environment"):
        unit_keys["Service.Environment"] = policy.unit_value("Service", "Environment",
                                                             " ".join(unit.values("Service", "Environment")))
    if result.working_directory is not None:
        unit_keys.setdefault("Service.WorkingDirectory", policy.unit_value("Service", "WorkingDirectory",
                                                                           result.working_directory))
    if result.user is not None:
        unit_keys.setdefault("Service.User", policy.unit_value("Service", "User", result.user))
    unit_keys.setdefault("Service.Type", result.service_type)
    runtime: dict[str, Any] = {}
    if raw.loaded_exec_start is not None:
        runtime["loaded_exec_start"] = policy.text(raw.loaded_exec_start)
    if raw.need_daemon_reload is not None:
        runtime["need_daemon_reload"] = raw.need_daemon_reload
    if raw.running_argv is not None:
        runtime["running_argv"] = policy.words(list(raw.running_argv))
    unit_text = policy.unit_text(unit)
    warnings = [policy.text(public(w)) for w in list(unit.warnings) + [f"ExecStart: {p}" for p in launcher.problems]
                + [f"--config {path}: {why}; its settings are not compared"
                   for path, why in (getattr(raw, "engine_file_problems", None) or {}).items()]
                + ([raw.incomplete] if getattr(raw, "incomplete", None) else [])]
    # The last pass: every secret learned above, wherever it appears.
    scrub = policy.scrub
    launcher.engine_argv = scrub(engine_argv)
    launcher.env = scrub(launcher_env)
    launcher.wrapper_args = scrub(wrapper_args)
    argv, expanded, environment, unit_keys = scrub(argv), scrub(expanded), scrub(environment), scrub(unit_keys)
    runtime = scrub(runtime)
    engine = clear_engine if launcher.engine_argv == clear_engine_argv else engine_plugin.read_config(
        launcher.engine_argv, engine_version=engine_version, recorded_version=recorded, recorded_from=recorded_from,
        environment=result.environment)
    gpus_issue = _visible_devices_issue(clear_environment, engine, bool(launcher.image))
    if gpus_issue is not None:
        engine.issues.append(gpus_issue)
    engine.issues[:] = unknown_value_issues(engine.issues, engine.explicit(), result.unknown_variables,
                                            result.unreadable_files) + refusal_issues(
        [policy.text(public(e)) for e in result.load_errors])
    for issue in engine.issues:
        issue.message = scrub(issue.message)
    for name in ("main_pid", "active_state", "gpus", "interconnect"):
        if getattr(raw, name) is not None:
            runtime[name] = getattr(raw, name)
    if raw.measured:
        runtime["measured"] = dict(raw.measured)
    if getattr(raw, "incomplete", None):  # a partial read: what the comparisons must say was not read
        runtime["not_read"] = scrub(policy.text(public(raw.incomplete)))
    runtime.update(_reported(raw, engine_plugin, clear_engine, policy))  # compared in clear, stored redacted
    facts = _model_facts(raw, engine)
    if facts:
        runtime["model_facts"] = scrub(facts)
    return Snapshot(
        host=raw.host, unit=raw.unit or unit.name, source=raw.source,
        collected_at=raw.collected_at or now_utc(), paths=list(raw.paths or unit.paths),
        unit_text=scrub(unit_text), argv=argv, expanded_argv=expanded,
        prefixes=command.prefixes, environment=environment,
        environment_files=list(result.environment_files), unit_keys=unit_keys, launcher=launcher,
        engine_version=recorded, engine=engine, issues=list(engine.issues),
        warnings=scrub(warnings), runtime=runtime,
        origins=_origins(unit, result.environment, list(result.environment_files)),
        load_errors=[scrub(policy.text(public(e))) for e in result.load_errors],
        unreadable_files=list(result.unreadable_files), unknown_variables=result.unknown_variables)


def _visible_devices_issue(environment: dict[str, str], engine: EngineConfig, container: bool) -> Issue | None:
    """CUDA_VISIBLE_DEVICES naming fewer GPUs than the tensor-parallel size: the server cannot start.
    The same environment (the container's, for a container) that compare's impact model reads, so
    `check` and `compare` agree."""
    value = environment.get("CUDA_VISIBLE_DEVICES")
    if value is None or engine.engine == NO_ENGINE:
        return None
    devices = [d for d in str(value).split(",") if d.strip()]
    tp = engine.concept_values()[0].get("parallel.tensor")
    if isinstance(tp, bool) or not isinstance(tp, int) or len(devices) >= tp:
        return None
    where = "the container's " if container else ""
    return Issue("startup-crash", f"{where}CUDA_VISIBLE_DEVICES={value} leaves {len(devices)} visible GPU"
                 f"{'s' if len(devices) != 1 else ''} for tensor parallelism {tp}: {engine.title} cannot start",
                 key="CUDA_VISIBLE_DEVICES", severity="error")


def _model_facts(raw: RawUnit, engine: EngineConfig) -> dict[str, Any] | None:
    """Facts of the model the unit serves, from the config.json the collector read on the host
    (the one named by the unit's model path when several were read); None when none parses."""
    configs = dict(getattr(raw, "model_configs", None) or {})
    if not configs:
        return None
    path = engine.concept_values()[0].get("model.path")
    name = path if path in configs else next(iter(configs))
    try:
        data = loads_json(configs[name])
    except (ValueError, RecursionError, MemoryError):  # not JSON, or nested past what Python parses
        return None
    if not isinstance(data, dict):
        return None
    try:
        return model_facts(data, f"{raw.host}:{name}/config.json").to_dict() or None
    except Exception:  # noqa: BLE001 - a config.json we cannot read is "facts unknown", never a failure
        return None


def _reported(raw: RawUnit, engine_plugin, engine: EngineConfig, policy: Redactor) -> dict[str, Any]:
    """`runtime.startup` (the journal's start-up lines) and `runtime.effective` (the --probe answers)."""
    out: dict[str, Any] = {}
    if raw.startup_lines:
        record = keep_reported(engine_plugin.parse_startup_log(list(raw.startup_lines), engine), engine, policy)
        if record:
            out[STARTUP] = record
    if raw.probe is not None or raw.probe_problems:
        record = keep_reported(engine_plugin.parse_probe(dict(raw.probe or {})), engine, policy)
        if raw.probe_problems:
            record["problems"] = {path: policy.scrub(policy.text(why)) for path, why in raw.probe_problems.items()}
        if record:
            out[EFFECTIVE] = record
    return out


def engine_to_dict(engine: EngineConfig, include_defaults: bool = False, fold_keys: bool = False) -> dict:
    """The engine section: every flag (`show --format json`), or with `fold_keys` (the derived section
    of a saved snapshot, which is never read back: flags are re-read from the argv) the keys of a
    JSON-valued flag past the first few without a concept counted under `keys_not_listed`."""
    flags = {}
    chosen = engine.flags.items() if include_defaults else [(k, v) for k, v in engine.flags.items()
                                                            if v.source == "explicit"]
    chosen = sorted(chosen)  # the few explicit ones sorted, not a release's 500 options
    not_listed: dict[str, dict[str, Any]] = {}
    for item in (folded_keys(chosen, engine.concept_of) if fold_keys else chosen):
        if isinstance(item, FoldedKeys):  # (one field filled by two flags: both named, their keys counted)
            counted = not_listed.setdefault(item.field, {"flag": item.flag, "keys": 0})
            if item.flag not in counted["flag"].split(", "):
                counted["flag"] += f", {item.flag}"
            counted["keys"] += item.count
            continue
        key, value = item
        entry = {"value": value.value, "source": value.source, "flag": value.flag}
        if value.note:
            entry["note"] = value.note
        flags[key] = entry
    concepts = {key: engine.concept_of(key) for key in flags if engine.concept_of(key)}
    out = {"name": engine.engine, "version": engine.version, "version_reason": engine.version_reason,
           "flags": flags, "notes": list(engine.notes)}
    if not_listed:
        out["keys_not_listed"] = not_listed  # re-read from the argv like every flag
    if concepts:
        out["concepts"] = concepts  # native field -> engine-neutral concept, for readers of the YAML
    return out


def snapshot_to_dict(snap: Snapshot) -> dict:
    """The YAML/JSON form of a snapshot (schema driftwatch.snapshot/v1). Secrets are already redacted."""
    argv = list(snap.argv)
    # no $VAR expanded (the usual case): one list for both, which YAML writes once when it is long
    expanded = argv if snap.expanded_argv == snap.argv else list(snap.expanded_argv)
    return {
        "schema": SNAPSHOT_SCHEMA,
        "host": snap.host,
        "unit": snap.unit,
        "collected_at": snap.collected_at,
        "source": snap.source,
        "paths": list(snap.paths),
        "engine_version": snap.engine_version,
        "exec_start": {"prefixes": snap.prefixes, "argv": argv, "expanded_argv": expanded},
        "environment": dict(snap.environment),
        "environment_files": list(snap.environment_files),
        "unit_keys": dict(snap.unit_keys),
        "all_unit_keys": snap.all_unit_keys,
        "launcher": snap.launcher.to_dict(),
        "engine": engine_to_dict(snap.engine, fold_keys=True),
        "issues": folded_issues(snap.issues),
        "warnings": list(snap.warnings),
        "runtime": dict(snap.runtime),
        "origins": dict(snap.origins),
        "unit_text": snap.unit_text,
        # additive keys, absent when empty (as in files saved before them)
        **({"load_errors": list(snap.load_errors)} if snap.load_errors else {}),
        **({"unreadable_environment_files": list(snap.unreadable_files)} if snap.unreadable_files else {}),
        **({"unknown_variables": list(snap.unknown_variables)} if snap.unknown_variables else {}),
    }


class _Fields:
    """Type checks for a document a user keeps (and may edit by hand): each failure is one InputError
    naming the file, the key and the problem."""

    def __init__(self, origin: str, what: str = "snapshot", prefix: str = ""):
        self.origin, self.what, self.prefix = origin, what, prefix

    def fail(self, key: str, problem: str) -> InputError:
        return InputError(f"{self.origin}: {self.what} key {self.prefix}{key}: {problem}")

    @staticmethod
    def kind(value: Any) -> str:
        return value_kind(value)

    def required_text(self, data: dict, key: str) -> str:
        """`text` of a key that must hold a string (None is refused like any other non-string)."""
        value = self.text(data, key, optional=False)
        assert value is not None  # optional=False: `text` raised instead
        return value

    def text(self, data: dict, key: str, default: Any = None, optional: bool = True) -> str | None:
        value = data.get(key, default)
        if value is None and optional:
            return None
        if isinstance(value, (_dt.datetime, _dt.date)) and key in ("collected_at", "saved_at"):
            return value.isoformat()  # an unquoted timestamp: YAML made it a date
        if not isinstance(value, str):
            hint = " (quote it)" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
            raise self.fail(key, f"expected a string, found {self.kind(value)}{hint}")
        if len(value) > MAX_FIELD_CHARS:
            raise self.fail(key, f"longer than {MAX_FIELD_CHARS} characters")
        return value

    def texts(self, data: dict, key: str, required: bool = False) -> list[str]:
        value = data.get(key)
        if value is None and not required:
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of strings, found {self.kind(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.fail(f"{key}[{i}]", f"expected a string, found {self.kind(item)}")
        return list(value)

    def mapping(self, data: dict, key: str) -> dict:
        value = data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a mapping, found {self.kind(value)}")
        return value

    def scalars(self, data: dict, key: str) -> dict[str, str]:
        """NAME: value pairs (numbers and booleans a hand edit left unquoted are read as their text)."""
        out = {}
        for name, value in self.mapping(data, key).items():
            if not isinstance(name, str):
                raise self.fail(f"{key}", f"a name that is {self.kind(name)}, not a string")
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (int, float)) and math.isfinite(value) and abs(value) < 1e18:
                value = str(value)
            elif not isinstance(value, str):
                raise self.fail(f"{key}.{name}", f"expected a string, found {self.kind(value)}")
            out[name] = value
        return out

    def number(self, value: Any, key: str, lo: float = -1e15, hi: float = 1e15, integer: bool = False):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"expected a number, found {self.kind(value)}")
        if isinstance(value, int) and not -10 ** 18 < value < 10 ** 18:
            raise self.fail(key, "a number too large")
        if not math.isfinite(value):
            raise self.fail(key, "not a finite number")
        if integer and not isinstance(value, int):
            raise self.fail(key, "expected a whole number")
        if not lo <= value <= hi:
            raise self.fail(key, f"out of range ({lo:g} to {hi:g})")
        return value


MAX_FIELD_CHARS = 2_000_000


def _runtime_from(data: Any, f: _Fields) -> dict[str, Any]:
    """The `runtime:` mapping, each known key type-checked; keys this release does not know are dropped."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise f.fail("runtime", f"expected a mapping, found {f.kind(data)}")
    r = _Fields(f.origin, f.what, f.prefix + "runtime.")
    out: dict[str, Any] = {}
    if data.get("loaded_exec_start") is not None:
        out["loaded_exec_start"] = r.text(data, "loaded_exec_start")
    if data.get("need_daemon_reload") is not None:
        if not isinstance(data["need_daemon_reload"], bool):
            raise r.fail("need_daemon_reload", f"expected true or false, found {r.kind(data['need_daemon_reload'])}")
        out["need_daemon_reload"] = data["need_daemon_reload"]
    if data.get("running_argv") is not None:
        out["running_argv"] = r.texts(data, "running_argv")
    if data.get("main_pid") is not None:
        out["main_pid"] = r.number(data["main_pid"], "main_pid", 0, 2 ** 31, integer=True)
    if data.get("active_state") is not None:
        out["active_state"] = r.text(data, "active_state")
    if data.get("not_read") is not None:
        out["not_read"] = r.text(data, "not_read")
    if data.get("gpus") is not None:
        gpus = data["gpus"]
        if not isinstance(gpus, list):
            raise r.fail("gpus", f"expected a list, found {r.kind(gpus)}")
        out["gpus"] = []
        for i, gpu in enumerate(gpus):
            if not isinstance(gpu, dict):
                raise r.fail(f"gpus[{i}]", f"expected a mapping, found {r.kind(gpu)}")
            g = _Fields(f.origin, f.what, f"{r.prefix}gpus[{i}].")
            entry = {"index": g.number(gpu.get("index"), "index", 0, 4096, integer=True) if "index" in gpu else 0,
                     "name": g.text(gpu, "name") or "?", "memory_total": g.text(gpu, "memory_total") or "?"}
            out["gpus"].append(entry)
    if data.get("interconnect") is not None:
        link = r.text(data, "interconnect")
        if link not in INTERCONNECTS:
            raise r.fail("interconnect", f"expected one of {', '.join(INTERCONNECTS)}, found {link!r}")
        out["interconnect"] = link
    if data.get("measured") is not None:
        measured = r.mapping(data, "measured")
        out["measured"] = {str(k): r.number(v, f"measured.{k}", 0, 1e12) for k, v in measured.items()}
    if data.get("model_facts") is not None:
        facts = r.mapping(data, "model_facts")
        for name, value in facts.items():
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, str):
                    if len(item) > 4096:
                        raise r.fail(f"model_facts.{name}", "longer than 4096 characters")
                elif item is not None and not isinstance(item, bool):
                    r.number(item, f"model_facts.{name}", 0, 1e15)
        out["model_facts"] = {str(k): v for k, v in facts.items()}
    if data.get("container") is not None:  # a manifest's container (collect/manifest.py)
        c = r.mapping(data, "container")
        cf = _Fields(f.origin, f.what, f"{r.prefix}container.")
        record: dict[str, Any] = {"platform": cf.text(c, "platform"), "argv": cf.texts(c, "argv"),
                                  "image": cf.text(c, "image"), "origin": cf.scalars(c, "origin")}
        if c.get("gpus") is not None:
            record["gpus"] = c["gpus"] if isinstance(c["gpus"], str) else cf.number(c["gpus"], "gpus", 0, 4096,
                                                                                     integer=True)
        if c.get("notes") is not None:
            record["notes"] = cf.texts(c, "notes")
        out["container"] = record
    for kind in REPORTED_KINDS:
        if data.get(kind) is not None:
            out[kind] = _reported_from(r.mapping(data, kind), _Fields(f.origin, f.what, f"{r.prefix}{kind}."))
    return out


def _reported_from(data: dict, f: _Fields) -> dict[str, Any]:
    """`runtime.startup` / `runtime.effective`: fields (scalars or flat lists), concepts and figures
    (numbers), problems (path -> text)."""
    out: dict[str, Any] = {}
    fields = f.mapping(data, "fields")
    for name, value in fields.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is not None and not isinstance(item, (bool, str)):
                f.number(item, f"fields.{name}")
            elif isinstance(item, str) and len(item) > MAX_FIELD_CHARS:
                raise f.fail(f"fields.{name}", f"longer than {MAX_FIELD_CHARS} characters")
        if isinstance(value, list) and any(v is None for v in value):
            raise f.fail(f"fields.{name}", "a list holding null")
    if fields:
        out["fields"] = {str(k): v for k, v in fields.items()}
    concepts = f.mapping(data, "concepts")
    for name, value in concepts.items():
        if not isinstance(value, bool):
            f.number(value, f"concepts.{name}")
    if concepts:
        out["concepts"] = {str(k): v for k, v in concepts.items()}
    figures = {str(k): f.number(v, f"figures.{k}") for k, v in f.mapping(data, "figures").items()}
    if figures:
        out["figures"] = figures
    problems = f.scalars(data, "problems")
    if problems:
        out["problems"] = problems
    return out


def snapshot_from_dict(data: Any, origin: str, engine_version: str | None = None, what: str = "snapshot",
                       prefix: str = "") -> Snapshot:
    """Rebuild a Snapshot from its saved form; the engine flags are re-read from the saved argv.

    Every field is type-checked first: a hand-edited file with a list where a string belongs, a float,
    null, a huge number is refused with one line naming the file, the key and the problem. Values
    are passed through the redaction policy again (a file saved by an older release may hold what
    this one fingerprints)."""
    if not isinstance(data, dict) or data.get("schema") != SNAPSHOT_SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else None
        if isinstance(schema, str) and schema.startswith("driftwatch.snapshot/"):
            raise InputError(f"{origin}: snapshot schema {schema} is newer than this driftwatch understands "
                             f"({SNAPSHOT_SCHEMA}); upgrade driftwatch")
        raise InputError(f"{origin}: not a driftwatch snapshot (expected schema {SNAPSHOT_SCHEMA})")
    f = _Fields(origin, what, prefix)
    exec_start = data.get("exec_start")
    if not isinstance(exec_start, dict):
        raise f.fail("exec_start",
                     "missing" if exec_start is None else f"expected a mapping, found {f.kind(exec_start)}")
    e = _Fields(origin, what, prefix + "exec_start.")
    argv = e.texts(exec_start, "argv", required=True)
    expanded = e.texts(exec_start, "expanded_argv", required=True)
    prefixes = e.text(exec_start, "prefixes", "") or ""
    raw_launcher = data.get("launcher")
    if not isinstance(raw_launcher, dict):
        raise f.fail("launcher",
                     "missing" if raw_launcher is None else f"expected a mapping, found {f.kind(raw_launcher)}")
    lf = _Fields(origin, what, prefix + "launcher.")
    engine_name = lf.required_text(raw_launcher, "engine") if "engine" in raw_launcher else NO_ENGINE
    launcher = Launcher(
        engine=engine_name, entry=lf.text(raw_launcher, "entry", "") or "",
        interpreter=lf.text(raw_launcher, "interpreter"), wrappers=lf.texts(raw_launcher, "wrappers"),
        engine_argv=lf.texts(raw_launcher, "engine_argv", required=True), image=lf.text(raw_launcher, "image"),
        venv=lf.text(raw_launcher, "venv"), env=lf.scalars(raw_launcher, "env"),
        wrapper_args=lf.texts(raw_launcher, "wrapper_args"), problems=lf.texts(raw_launcher, "problems"))
    recorded = f.text(data, "engine_version")
    plugin = get_engine(launcher.engine)
    policy = Redactor(public_env=load_public_env())
    environment = {k: policy.env_value(k, v) for k, v in f.scalars(data, "environment").items()}
    unit_keys = {}
    for key, value in f.scalars(data, "unit_keys").items():
        section, _, name = key.partition(".")
        unit_keys[key] = policy.unit_value(section, name or section, value)
    launcher.env = {k: policy.env_value(k, v) for k, v in launcher.env.items()}
    said = (f"named by the image tag {launcher.image}"
            if recorded and recorded == plugin.release_from_image(launcher.image) else None)
    engine = plugin.read_config(list(launcher.engine_argv), engine_version=engine_version,
                                recorded_version=recorded, recorded_from=said, environment=environment)
    gpus_issue = _visible_devices_issue(environment, engine, bool(launcher.image))
    if gpus_issue is not None:
        engine.issues.append(gpus_issue)
    load_errors, unreadable = f.texts(data, "load_errors"), f.texts(data, "unreadable_environment_files")
    unknown = f.texts(data, "unknown_variables")
    engine.issues[:] = unknown_value_issues(engine.issues, engine.explicit(), unknown, unreadable) + refusal_issues(
        load_errors)
    return Snapshot(
        host=f.text(data, "host"), unit=f.text(data, "unit"), source=f.text(data, "source", "file") or "file",
        collected_at=f.text(data, "collected_at") or now_utc(), paths=f.texts(data, "paths"),
        unit_text=f.text(data, "unit_text", "") or "", argv=argv, expanded_argv=expanded, prefixes=prefixes,
        environment=policy.scrub(environment), environment_files=f.texts(data, "environment_files"),
        unit_keys=policy.scrub(unit_keys), launcher=launcher, engine_version=recorded, engine=engine,
        issues=list(engine.issues), warnings=f.texts(data, "warnings"), runtime=_runtime_from(data.get("runtime"), f),
        origins=f.scalars(data, "origins"), all_unit_keys=data.get("all_unit_keys") is True,
        load_errors=load_errors, unreadable_files=unreadable, unknown_variables=unknown)
