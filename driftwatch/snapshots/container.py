"""A container (parse/containers.py ContainerSpec) as a Snapshot, through the same `build_snapshot`
as a unit: its argv (after the platform's rules) is handed over as the `docker run --entrypoint=ARGV0
-e … IMAGE ARGV1…` it is equivalent to, so the image tag, the container's environment, the wrappers
inside it (`sh -c '…'`) and every engine's parser are read exactly as for a unit's `docker run`; then
the fields that describe a unit are set to what the container is (`runtime.container`: the argv, its
origin, GPUs; the platform as the launcher's outer wrapper; no unit keys). Also: which of a
manifest's containers is the server (`choose_container`)."""
from __future__ import annotations

import os
import re

from ..collect.raw import RawUnit
from ..engines.files import NO_FILES, EngineFiles
from ..engines.registry import find_launcher
from ..errors import InputError
from ..parse.containers import ContainerSpec
from ..parse.wrappers import NO_ENGINE
from ..redact import Redactor, load_public_env
from .snapshot import Snapshot, build_snapshot

_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def _quote(word: str) -> str:
    """One ExecStart= word read back as `word`: `$` and `%` doubled (no expansion), quoted when needed."""
    word = word.replace("%", "%%").replace("$", "$$")
    if word and _PLAIN.match(word):
        return word
    body = "".join("\\" + c if c in "\"\\" else f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c
                   for c in word)
    return f'"{body}"'


def _listed(labels: list[str], most: int = 10) -> str:
    """Labels for one line: the first `most`, then how many more (a rendered chart may hold hundreds)."""
    if not labels:
        return "none"
    more = f" and {len(labels) - most} more" if len(labels) > most else ""
    return ", ".join(labels[:most]) + more


def engine_of(spec: ContainerSpec, files: EngineFiles = NO_FILES) -> str:
    """The engine a container's argv starts (`none` when it starts none)."""
    if not spec.argv or spec.init:
        return NO_ENGINE
    return find_launcher(list(spec.argv), {}, files).engine


def choose_container(containers: list[ContainerSpec], container: str | None, files: EngineFiles = NO_FILES,
                     where: str = "--manifest") -> ContainerSpec:
    """The engine container: found by its argv (an engine's entry point), never an init container or
    a sidecar; `container` (a container name, or a suffix of `KIND/NAME/…/CONTAINER`) chooses among
    several. One clear error otherwise, naming the candidates."""
    if container:
        named = [c for c in containers if c.name == container or c.origin.label == container
                 or c.origin.label.endswith("/" + container)]
        if not named:
            names = _listed([c.origin.label for c in containers])
            raise InputError(f"{where}: no container {container} (containers: {names})")
        engines = [c for c in named if not c.init and engine_of(c, files) != NO_ENGINE]
        if len(named) > 1 and len(engines) != 1:
            raise InputError(f"{where}: --container {container} names several containers: "
                             f"{_listed([c.origin.label for c in named])} (give KIND/NAME/CONTAINER)")
        chosen = engines[0] if engines else named[0]
        if chosen.init:
            raise InputError(f"{where}: {chosen.origin.label} is an init container, not the server")
        return chosen
    engines = [c for c in containers if not c.init and engine_of(c, files) != NO_ENGINE]
    if len(engines) == 1:
        return engines[0]
    if not engines:
        names = _listed([c.origin.label for c in containers])
        raise InputError(f"{where}: no container runs an inference engine driftwatch knows (containers: {names})")
    raise InputError(f"{where}: several engine containers: {_listed([c.origin.label for c in engines])}; "
                     "choose one with --container NAME")


_SHELLS = {"sh", "bash", "dash", "zsh", "ash"}


def _at_start(words: list[str], late: set[str]) -> list[str]:
    """The words with a shell's `$NAME`/`${NAME}` of a variable set only when the pod starts written
    `$(NAME)`, as the kubelet leaves a reference it cannot resolve: the engine's parser then reads the
    value as "set when the pod starts" rather than the shell dropping it (an unset variable)."""
    if not late or not any(os.path.basename(w) in _SHELLS for w in words):
        return list(words)
    pattern = re.compile(r"\$(?:\{(" + "|".join(map(re.escape, sorted(late))) + r")\}|("
                         + "|".join(map(re.escape, sorted(late))) + r")(?![A-Za-z0-9_]))")
    return [pattern.sub(lambda m: f"$({m.group(1) or m.group(2)})", w) for w in words]


def _synthetic_unit(spec: ContainerSpec) -> tuple[str, int, list[str]]:
    """The unit `[Service] ExecStart=docker run --entrypoint=ARGV0 -e NAME=VALUE … IMAGE ARGV1…` the
    container is equivalent to, the index of the image word, and the argv as handed over. Variables
    whose value is not in the file are not passed (their markers are added to the snapshot after)."""
    late = {v.name for v in spec.env if v.value is None}
    argv = _at_start(list(spec.argv), late)
    words = ["docker", "run", f"--entrypoint={argv[0]}"]
    for name, var in {v.name: v for v in spec.env}.items():
        if var.value is not None:
            words += ["-e", f"{name}={var.value}"]
    image_index = len(words)
    words += [spec.image or "unknown-image", *argv[1:]]
    return "[Service]\nExecStart=" + " ".join(_quote(w) for w in words) + "\n", image_index, argv


def snapshot_from_container(spec: ContainerSpec, engine_version: str | None = None,
                            files: EngineFiles = NO_FILES) -> Snapshot:
    """The Snapshot of one container, through the same build_snapshot as a unit (module docstring)."""
    label = spec.origin.label
    where = f"{spec.origin.file}: {label}"
    if not spec.argv:
        raise InputError(f"{where}: the command the container runs is not known"
                          + (f" ({spec.notes[-1]})" if spec.notes else ""))
    text, image_index, handed = _synthetic_unit(spec)
    path = os.path.abspath(spec.origin.file) if spec.origin.file != "standard input" else spec.origin.file
    raw = RawUnit(host="", unit=label, text=text, source="manifest", paths=[path])
    if spec.gpus:
        raw.gpus = [{"index": i, "name": "?", "memory_total": "?"} for i in range(spec.gpus)]
    snap = build_snapshot(raw, engine_version=engine_version, origin=where, files=files)
    # What the snapshot says of a unit, said of the container instead.
    words = snap.expanded_argv  # systemd's `$$` read back as `$`
    entry = words[2].split("=", 1)[1] if len(words) > 2 and "=" in words[2] else spec.argv[0]
    container_argv = [entry, *words[image_index + 1:]]
    # A word rewritten for the engine's parser (`$NAME` -> `$(NAME)`) is shown as written, unless redacted.
    container_argv = [spec.argv[i] if i < len(handed) and w == handed[i] != spec.argv[i] else w
                      for i, w in enumerate(container_argv)]
    snap.argv = list(container_argv)
    snap.expanded_argv = list(container_argv)
    snap.prefixes = ""
    snap.unit_text = ""
    snap.unit_keys = {}
    snap.origins = {}
    snap.host = None
    snap.unit = label
    snap.paths = [path]
    platform = spec.platform
    launcher = snap.launcher
    if launcher.wrappers[:1] == ["docker run"]:
        launcher.wrappers = [platform, *launcher.wrappers[1:]]
        launcher.wrapper_args = [platform, *launcher.wrapper_args[1:]]
    policy = Redactor(public_env=load_public_env())
    for var in spec.env:  # the values not in the file: where each comes from (never a value)
        if var.value is None:
            marker = policy.env_value(var.name, var.shown())
            snap.environment[var.name] = marker
            launcher.env[var.name] = marker
    record: dict = {"platform": platform, "argv": list(container_argv), "image": spec.image,
                    "origin": spec.origin.to_dict()}
    if spec.gpus is not None or spec.gpus_note:
        record["gpus"] = spec.gpus if spec.gpus is not None else spec.gpus_note
    if spec.notes:
        record["notes"] = list(spec.notes)
    snap.runtime["container"] = record
    _run_time_values(snap, spec)
    snap.warnings.extend(n for n in spec.notes if n not in snap.warnings)
    return snap


def _run_time_values(snap: Snapshot, spec: ContainerSpec) -> None:
    """A flag whose value is `$(NAME)` of a variable set only when the pod starts (a secretKeyRef,
    the downward API, LeaderWorkerSet's LWS_*): the kubelet substitutes it, so the literal text is
    not what the engine will parse. Its "not a valid value" is not a reason the server would not
    start: it is said as a warning instead, and the flag is compared as written."""
    late = [v.name for v in spec.env if v.value is None]
    if not late:
        return

    def set_late(issue) -> bool:
        return issue.kind == "bad-value" and any(f"$({n})" in issue.message for n in late)
    moved = [i for i in snap.issues if set_late(i)]
    if not moved:
        return
    snap.issues = [i for i in snap.issues if not set_late(i)]
    snap.engine.issues = [i for i in snap.engine.issues if not set_late(i)]
    for issue in moved:
        snap.warnings.append(f"{issue.message.split(':', 1)[0]}: the value is set when the pod starts; "
                             "not checked here")
