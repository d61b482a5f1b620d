"""`--manifest`: the named Kubernetes manifests or Compose file read into containers (the platforms'
rules in parse/kubernetes.py and parse/compose.py; the text from collect/manifest.py), the engine
container chosen, and its Snapshot (snapshots/container.py)."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..collect.manifest import STDIN, podman_image_config, read_source
from ..engines.files import NO_FILES, EngineFiles
from ..engines.images import table_command
from ..errors import InputError
from ..fileio import load_yaml_text, read_text_file
from ..parse.compose import read_compose, read_dotenv
from ..parse.containers import ContainerSpec, ImageCommand
from ..parse.kubernetes import WORKLOAD_KINDS, read_objects
from ..snapshots.container import choose_container, snapshot_from_container
from ..snapshots.snapshot import Snapshot

if TYPE_CHECKING:
    from .collect_options import CollectOptions
    from .targets import Target

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
    texts: dict[str, str] = field(default_factory=dict)  # name shown -> the text read (kustomize: rendered)


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


def _is_compose(docs: list) -> bool:
    return (len(docs) == 1 and isinstance(docs[0], dict) and isinstance(docs[0].get("services"), dict)
            and "kind" not in docs[0])


def image_command(image: str | None, use_podman: bool = True) -> ImageCommand | None:
    """An image's own ENTRYPOINT/CMD: the engines' published images (engines/images.py), else what
    `podman image inspect` says of an image on this machine."""
    known = table_command(image)
    if known is not None or not use_podman:
        return known
    found = podman_image_config(image)
    return ImageCommand(tuple(found[0]), tuple(found[1]), "podman image inspect") if found else None


def read_manifests(request: ManifestRequest, texts: Mapping[str, str] | None = None) -> ManifestRead:
    """Every container of every workload or service the named files hold. `texts`: a file's text
    given rather than read (a patch laid over it, read again; run/manifest_restore.py)."""
    if not request.files:
        raise InputError("--manifest: no file named")
    use_podman = request.use_podman
    asked: dict[str | None, ImageCommand | None] = {}  # one `podman image inspect` per image, however many use it

    def images(image: str | None) -> ImageCommand | None:
        if image not in asked:
            asked[image] = image_command(image, use_podman)
        return asked[image]

    out = ManifestRead()
    objects: list[tuple[str, int | None, dict]] = []
    for path in request.files:
        text, shown = (texts[path], "standard input" if path == STDIN else path) if texts and path in texts \
            else read_source(path)
        out.texts[shown] = text
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


def snapshot_from_manifests(request: ManifestRequest, engine_version: str | None = None,
                            files: EngineFiles = NO_FILES) -> Snapshot:
    """The one engine container the named manifests hold (or --container names), as a Snapshot."""
    read = read_manifests(request)
    where = request.files[0] if len(request.files) == 1 else "--manifest"
    where = "standard input" if where == STDIN else where
    spec = choose_container(read.containers, request.container, files, where)
    snap = snapshot_from_container(spec, engine_version, files)
    snap.warnings.extend(read.warnings)
    return snap


def live_container(target: Target, collect: CollectOptions) -> Snapshot:
    """The Snapshot of a running container (`--host HOST --container NAME`): `podman inspect` over
    SSH, else `docker inspect` when the host has no podman (collect/containers.py)."""
    from ..collect.containers import inspect_containers
    from ..errors import CollectError
    from ..parse.inspect import read_inspect
    from ..snapshots.container import snapshot_from_container
    if target.address is None or not target.unit:  # resolve_targets gives a container both
        raise InputError(f"{target.host}: --container needs --host and the container's name")
    answer = None
    for runtime in ("podman", "docker"):
        [answer] = inspect_containers(target.address, [target.unit], collect.ssh, runtime, label=target.host)
        if answer.text is not None or "not found" not in (answer.error or "") or answer.status != "error":
            break
    if answer is None or answer.text is None:
        raise CollectError(f"{target.host}: container {target.unit}: {answer.error if answer else 'not read'}")
    specs = read_inspect(answer.text, answer.host, answer.runtime)
    if not specs:
        raise CollectError(f"{target.host}: container {target.unit}: {answer.runtime} inspect gave nothing")
    snap = snapshot_from_container(specs[0], collect.engine_version, collect.files)
    snap.host = target.host
    return snap
