"""Read Kubernetes manifests and Compose files (`--manifest FILE`, `-` for standard input, a kustomize
directory rendered with `kubectl kustomize`) and turn the engine container into a Snapshot.

The container goes through the same `build_snapshot` as a unit: its argv (after the platform's rules,
parse/kubernetes.py and parse/compose.py) is handed over as the `docker run --entrypoint=ARGV0 -e …
IMAGE ARGV1…` it is equivalent to, so the image tag, the container's environment, the wrappers inside
it (`sh -c '…'`) and every engine's parser are read exactly as for a unit's `docker run`; then the
fields that describe the unit are set to what the container is (`container.argv`, its origin, the
platform as the launcher's outer wrapper, no unit keys).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..engines.files import NO_FILES, EngineFiles
from ..errors import EngineError, InputError
from ..fileio import MAX_YAML_BYTES, load_yaml_text, read_text_file
from ..parse.compose import read_compose, read_dotenv
from ..parse.containers import ContainerSpec, ImageCommand, table_command
from ..parse.kubernetes import WORKLOAD_KINDS, read_objects
from ..parse.wrappers import NO_ENGINE

STDIN = "-"
KUSTOMIZE_TIMEOUT = 60.0
_DOC_START = re.compile(r"^---(?:[ \t].*)?$")
_DOC_END = re.compile(r"^\.\.\.[ \t]*$")


@dataclass(frozen=True)
class ManifestRequest:
    """What the command line named: the files (`-`: standard input), the container (--container),
    and the environment a Compose file is interpolated from."""

    files: tuple[str, ...]
    container: str | None = None
    environ: Mapping[str, str] | None = None  # None: this process's environment
    use_podman: bool = True  # ask `podman image inspect` for an image the table does not know


@dataclass
class ManifestRead:
    """Every container read, and what was said about the reading."""

    containers: list[ContainerSpec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------ documents
def split_documents(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each YAML document in a stream, each padded with blank lines so
    that a YAML error names the line of the file."""
    docs: list[tuple[int, str]] = []
    lines = text.splitlines(keepends=True)
    start, current = 0, []  # type: tuple[int, list[str]]
    for i, line in enumerate(lines):
        stripped = line.rstrip("\r\n")
        if _DOC_START.match(stripped) or _DOC_END.match(stripped):
            if "".join(current).strip():
                docs.append((start, "\n" * start + "".join(current)))
            rest = stripped[3:].strip() if _DOC_START.match(stripped) else ""
            current = [rest + "\n"] if rest and not rest.startswith("#") else []
            start = i + (0 if current else 1)
            continue
        current.append(line)
    if "".join(current).strip():
        docs.append((start, "\n" * start + "".join(current)))
    return docs


def _read_source(path: str) -> tuple[str, str]:
    """(text, name shown) of one --manifest: a file, standard input, or a kustomize directory."""
    if path == STDIN:
        import sys
        data = sys.stdin.buffer.read(MAX_YAML_BYTES + 1) if sys.stdin is not None else b""
        if len(data) > MAX_YAML_BYTES:
            raise InputError(f"standard input: manifest is too large (more than {MAX_YAML_BYTES} bytes)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"standard input: manifest is not valid UTF-8 (offset {exc.start})") from None
        if not text.strip():
            raise InputError("standard input: manifest is empty")
        return text, "standard input"
    if os.path.isdir(path):
        return kustomize(path), path
    return read_text_file(path, "manifest", limit=MAX_YAML_BYTES), path


def kustomize(directory: str) -> str:
    """`kubectl kustomize DIR` (offline: it renders, it never asks a cluster)."""
    if not any(os.path.exists(os.path.join(directory, n))
               for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")):
        raise InputError(f"{directory}: a directory without a kustomization.yaml (give a manifest file, or a "
                         "kustomize directory)")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise InputError(f"{directory}: a kustomize directory needs kubectl on PATH (`kubectl kustomize`), "
                         "or render it first: kubectl kustomize DIR | driftwatch … --manifest -")
    try:
        done = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True,
                              timeout=KUSTOMIZE_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise InputError(f"{directory}: kubectl kustomize took more than {KUSTOMIZE_TIMEOUT:.0f} s") from None
    except OSError as exc:
        raise InputError(f"{directory}: cannot run kubectl kustomize: {exc.strerror or exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise InputError(f"{directory}: kubectl kustomize failed: {last[:300]}")
    return done.stdout


def _is_compose(docs: list) -> bool:
    return (len(docs) == 1 and isinstance(docs[0], dict) and isinstance(docs[0].get("services"), dict)
            and "kind" not in docs[0])


def podman_image_command(image: str | None) -> ImageCommand | None:
    """The ENTRYPOINT/CMD `podman image inspect` gives for an image present on this machine (never
    pulled); None when podman is absent or the image is not here."""
    podman = shutil.which("podman")
    if not image or podman is None:
        return None
    try:
        done = subprocess.run([podman, "image", "inspect", "--format", "json", image], capture_output=True,
                              text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    from ..fileio import loads_json
    try:
        data = loads_json(done.stdout)
        config = data[0].get("Config") or {}
    except (ValueError, IndexError, AttributeError, TypeError):
        return None
    entrypoint = config.get("Entrypoint") or []
    cmd = config.get("Cmd") or []
    if not all(isinstance(w, str) for w in list(entrypoint) + list(cmd)):
        return None
    return ImageCommand(tuple(entrypoint), tuple(cmd), "podman image inspect")


def read_manifests(request: ManifestRequest) -> ManifestRead:
    """Every container of every workload or service the named files hold."""
    if not request.files:
        raise InputError("--manifest: no file named")
    use_podman = request.use_podman

    def images(image: str | None) -> ImageCommand | None:
        return table_command(image) or (podman_image_command(image) if use_podman else None)

    out = ManifestRead()
    objects: list[tuple[str, int | None, dict]] = []
    for path in request.files:
        text, shown = _read_source(path)
        docs = []
        for index, (_line, doc_text) in enumerate(split_documents(text)):
            data = load_yaml_text(doc_text, shown, "manifest")
            if data is not None:
                docs.append((index, data))
        if not docs:
            raise InputError(f"{shown}: no YAML document in it")
        if _is_compose([d for _, d in docs]):
            environ = os.environ if request.environ is None else request.environ
            dotenv_path = os.path.join(os.path.dirname(os.path.abspath(path)), ".env") if path != STDIN else None
            dotenv = read_dotenv(read_text_file(dotenv_path, ".env file", allow_empty=True)) \
                if dotenv_path and os.path.isfile(dotenv_path) else {}
            specs, warnings = read_compose(docs[0][1], shown, environ, dotenv, images)
            out.containers.extend(specs)
            out.warnings.extend(f"{shown}: {w}" for w in warnings)
            continue
        for index, data in docs:
            if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
                raise InputError(f"{shown}: document {index + 1} is not a Kubernetes object (no kind:) "
                                 "nor a Compose file (no services:)")
            objects.append((shown, index, data))
    if objects:
        out.containers.extend(read_objects(objects, images))
        if not any(o.get("kind") in WORKLOAD_KINDS or o.get("kind") == "List" for _, _, o in objects):
            kinds = sorted({str(o.get("kind")) for _, _, o in objects})
            raise InputError(f"{request.files[0] if len(request.files) == 1 else 'the manifests'}: no workload "
                             f"in it (kinds: {', '.join(kinds)}); driftwatch reads {', '.join(sorted(WORKLOAD_KINDS))}")
    return out


# -------------------------------------------------------------------------------- the engine one
def engine_of(spec: ContainerSpec, files: EngineFiles = NO_FILES) -> str:
    """The engine a container's argv starts (`none` when it starts none)."""
    if not spec.argv or spec.init:
        return NO_ENGINE
    from ..engines.registry import find_launcher
    return find_launcher(list(spec.argv), {}, files).engine


def choose_container(read: ManifestRead, container: str | None, files: EngineFiles = NO_FILES,
                     where: str = "--manifest") -> ContainerSpec:
    """The engine container: found by its argv (an engine's entry point), never an init container or
    a sidecar; `container` (a container name, or a suffix of `KIND/NAME/…/CONTAINER`) chooses among
    several. One clear error otherwise, naming the candidates."""
    if container:
        named = [c for c in read.containers if c.name == container or c.origin.label == container
                 or c.origin.label.endswith("/" + container)]
        if not named:
            names = ", ".join(c.origin.label for c in read.containers) or "none"
            raise InputError(f"{where}: no container {container} (containers: {names})")
        engines = [c for c in named if not c.init and engine_of(c, files) != NO_ENGINE]
        if len(named) > 1 and len(engines) != 1:
            raise InputError(f"{where}: --container {container} names several containers: "
                             f"{', '.join(c.origin.label for c in named)} (give KIND/NAME/CONTAINER)")
        chosen = engines[0] if engines else named[0]
        if chosen.init:
            raise InputError(f"{where}: {chosen.origin.label} is an init container, not the server")
        return chosen
    engines = [c for c in read.containers if not c.init and engine_of(c, files) != NO_ENGINE]
    if len(engines) == 1:
        return engines[0]
    if not engines:
        names = ", ".join(c.origin.label for c in read.containers) or "none"
        raise EngineError(f"{where}: no container runs an inference engine driftwatch knows (containers: {names})")
    raise InputError(f"{where}: several engine containers: {', '.join(c.origin.label for c in engines)}; "
                     "choose one with --container NAME")


# ------------------------------------------------------------------------------------- snapshot
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
    from ..findings.restore import quote_word
    late = {v.name for v in spec.env if v.value is None}
    argv = _at_start(list(spec.argv), late)
    words = ["docker", "run", f"--entrypoint={argv[0]}"]
    for name, var in {v.name: v for v in spec.env}.items():
        if var.value is not None:
            words += ["-e", f"{name}={var.value}"]
    image_index = len(words)
    words += [spec.image or "unknown-image", *argv[1:]]
    return "[Service]\nExecStart=" + " ".join(quote_word(w) for w in words) + "\n", image_index, argv


def snapshot_from_container(spec: ContainerSpec, engine_version: str | None = None,
                            files: EngineFiles = NO_FILES):
    """The Snapshot of one container, through the same build_snapshot as a unit (module docstring)."""
    from ..collect.raw import RawUnit
    from ..redact import Redactor, load_public_env
    from ..snapshots.snapshot import build_snapshot
    label = spec.origin.label
    where = f"{spec.origin.file}: {label}"
    if not spec.argv:
        raise EngineError(f"{where}: the command the container runs is not known"
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


def _run_time_values(snap, spec: ContainerSpec) -> None:
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


def snapshot_from_manifests(request: ManifestRequest, engine_version: str | None = None,
                            files: EngineFiles = NO_FILES):
    """The one engine container the named manifests hold (or --container names), as a Snapshot."""
    read = read_manifests(request)
    where = request.files[0] if len(request.files) == 1 else "--manifest"
    where = "standard input" if where == STDIN else where
    spec = choose_container(read, request.container, files, where)
    snap = snapshot_from_container(spec, engine_version, files)
    snap.warnings.extend(read.warnings)
    return snap
