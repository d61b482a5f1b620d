"""The inventory's live containers and Kubernetes workloads, read for a fleet run (`report`).

- `containers:` on a host (names, or `auto`): podman/docker inspect over one SSH connection per host
  (collect/containers.py `read_host_containers`); with `auto`, only the containers whose command
  starts an engine are kept (the others are no server).
- `kubernetes: {context, namespace, selector}`: the user's `kubectl get` (collect/kube.py); each
  workload's pod template is one unit judged against the entry's baseline, and each of its running
  Pods one unit judged against that template (seed 003's "template versus the live copy": a Pod
  still running an old ReplicaSet, or changed by an admission webhook, is drift from its template).

Every unit is a `LiveRead`: its Snapshot, or its one-line error (a down host, a missing container,
kubectl refusing); run/fleet.py turns each into a report entry.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from ..errors import DriftwatchError
from .collect_options import CollectOptions
from .targets import Target

K = TypeVar("K")
V = TypeVar("V")

if TYPE_CHECKING:
    from ..collect.containers import HostContainers
    from ..parse.containers import ContainerSpec, ImageCommand
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot

LIVE_KINDS = ("container", "kubernetes")
_LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
_LWS_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


@dataclass
class LiveRead:
    """One container read live, or why it could not be: the report entry's content."""

    target: Target
    host: str
    unit: str
    snapshot: Snapshot | None = None
    error: str | None = None
    failure: str | None = None
    template: Baseline | None = None  # a Pod: its workload's template, the baseline it is judged against
    labels: dict[str, str] = field(default_factory=dict)  # namespace, workload, container (Prometheus labels)


def read_live(targets: list[Target], collect: CollectOptions) -> list[LiveRead]:
    """Every unit of the container and kubernetes targets, in the order the targets were named; the
    hosts and clusters are read in parallel (at most `--parallel` at once)."""
    groups: dict[tuple[str, str], list[Target]] = {}
    for t in targets:
        groups.setdefault((t.kind, t.host or ""), []).append(t)
    jobs = list(groups.values())
    if not jobs:
        return []
    workers = max(1, min(len(jobs), collect.ssh.parallel or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        answers = list(pool.map(lambda group: _read_group(group, collect), jobs))
    return [read for answer in answers for read in answer]


def _read_group(group: list[Target], collect: CollectOptions) -> list[LiveRead]:
    try:
        return _host_containers(group, collect) if group[0].kind == "container" else _kubernetes(group[0], collect)
    except DriftwatchError as exc:  # the entry's own bad input: its units' error, never the others'
        return [LiveRead(t, t.host or "", t.unit or "containers", error=f"{t.host}: {exc}", failure="error")
                for t in group]


def _host_containers(group: list[Target], collect: CollectOptions) -> list[LiveRead]:
    """A host's named containers (and `auto`), over one SSH connection."""
    from ..collect.containers import read_host_containers
    from ..collect.inventory import AUTO_CONTAINERS, parse_target
    first = group[0]
    host = first.host or ""
    by_name = {t.unit or AUTO_CONTAINERS: t for t in group}
    answer = read_host_containers(first.address or parse_target(host), list(by_name), collect.ssh, label=host)
    return host_reads(group, answer, collect)


def host_reads(group: list[Target], answer: HostContainers, collect: CollectOptions) -> list[LiveRead]:
    """The units of one host's answer: each named container (its error when it could not be read),
    and with `auto` every other listed container whose command starts an engine."""
    from ..collect.inventory import AUTO_CONTAINERS
    from ..parse.inspect import read_inspect
    from ..parse.wrappers import NO_ENGINE
    from ..snapshots.container import engine_of, snapshot_from_container
    host = answer.host
    by_name = {t.unit or AUTO_CONTAINERS: t for t in group}
    if answer.error is not None:
        return [LiveRead(t, host, t.unit or AUTO_CONTAINERS, error=f"{host}: containers: {answer.error}",
                         failure=answer.status) for t in group]
    out = []
    auto = by_name.get(AUTO_CONTAINERS)
    for a in answer.answers:
        target = by_name.get(a.name) or auto
        named = a.name in by_name
        if target is None:
            continue
        if a.text is None:
            if named:
                out.append(LiveRead(target, host, a.name, error=f"{host}: container {a.name}: {a.error}",
                                    failure=a.status))
            continue  # `auto`: a container gone between `ps` and `inspect` is no server any more
        try:
            specs = read_inspect(a.text, host, a.runtime)
            if not specs:
                raise DriftwatchError(f"{a.runtime} inspect gave nothing")
            if not named and engine_of(specs[0], collect.files) == NO_ENGINE:
                continue  # `auto` keeps the containers that start an engine
            snap = snapshot_from_container(specs[0], collect.engine_version, collect.files)
        except DriftwatchError as exc:
            out.append(LiveRead(target, host, a.name, error=f"{host}: container {a.name}: {exc}",
                                failure="invalid unit"))
            continue
        snap.host, snap.unit = host, a.name
        out.append(LiveRead(target, host, a.name, snap, labels={"container": a.name}))
    if auto is not None and not any(r.target is auto for r in out) and not [t for t in group if t is not auto]:
        listed = ", ".join(answer.listed[:10]) or "none running"
        out.append(LiveRead(auto, host, AUTO_CONTAINERS, error=f"{host}: containers: auto: no running container "
                            f"starts an engine ({answer.runtime} ps: {listed})", failure="unit not found"))
    return out


# ------------------------------------------------------------------------------------ Kubernetes
def _kubernetes(target: Target, collect: CollectOptions) -> list[LiveRead]:
    """An entry's workloads (each template one unit) and their Pods (each judged against its template)."""
    from ..collect.kube import kubectl_get
    from ..parse.kubernetes import read_objects
    source = target.address.kubernetes if target.address is not None else None
    host = target.host or ""
    if source is None:
        return [LiveRead(target, host, "kubernetes", error=f"{host}: no kubernetes: entry", failure="error")]
    answer = kubectl_get(source)
    if answer.error is not None:
        return [LiveRead(target, host, "kubernetes", error=f"{host}: {source.label}: {answer.error}",
                         failure=answer.status)]
    from ..run.manifest import image_command
    shown = f"kubectl get ({source.label})"

    def own_command(image: str | None) -> ImageCommand | None:  # the engines' published images only
        return image_command(image, use_podman=False)

    images = _once(own_command)
    specs = read_objects([(shown, None, item) for item in answer.items], images)
    workloads = [s for s in specs if s.origin.kind != "Pod"]
    pods = [s for s in specs if s.origin.kind == "Pod"]
    out: list[LiveRead] = []
    templates: dict[tuple, tuple[ContainerSpec, LiveRead]] = {}
    for spec in _servers(workloads, collect):
        read = _read_spec(target, host, spec, collect)
        templates[_key(spec)] = spec, read
        out.append(read)
    for spec in _servers(pods, collect):
        read = _read_spec(target, host, spec, collect)
        owner = _owner(spec, [w for w in workloads if w.origin.namespace == spec.origin.namespace])
        if owner in templates and templates[owner][1].snapshot is not None:
            read.template = _template_of(spec, *templates[owner], collect)
            read.labels["workload"] = f"{owner[0]}/{owner[1]}"
        out.append(read)
    if not out:
        selector = f" -l {source.selector}" if source.selector else ""
        out.append(LiveRead(target, host, "kubernetes", error=f"{host}: {source.label}{selector}: no workload or Pod "
                            "runs an engine container", failure="unit not found"))
    return out


def _template_of(pod: ContainerSpec, template: ContainerSpec, read: LiveRead, collect: CollectOptions) -> Baseline:
    """The template a Pod's container is judged against. A variable the controller sets when the pod
    is made (a LeaderWorkerSet's LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX: "value unknown"
    in the template) takes this Pod's value, and `$(NAME)` in the command line with it, as the kubelet
    expands it: a worker's `--node-rank $(LWS_WORKER_INDEX)` is then no drift from its template."""
    from dataclasses import replace

    from ..parse.containers import EnvVar
    from ..snapshots.baseline import Baseline
    from ..snapshots.container import snapshot_from_container
    name = f"template {read.unit}"
    late = {v.name for v in template.env if v.value is None and v.source == "the LeaderWorkerSet controller"}
    values = {v.name: v.value for v in pod.env if v.name in late and v.value is not None}
    if not values:
        return Baseline(name=name, snapshot=read.snapshot)  # type: ignore[arg-type]  # read: never None here

    def expanded(word: str) -> str:
        for var, value in values.items():
            word = word.replace(f"$({var})", value)
        return word
    env = tuple(EnvVar(v.name, values[v.name]) if v.name in values else v for v in template.env)
    spec = replace(template, env=env, argv=tuple(expanded(w) for w in template.argv))
    try:
        snap = snapshot_from_container(spec, collect.engine_version, collect.files)
    except DriftwatchError:
        return Baseline(name=name, snapshot=read.snapshot)  # type: ignore[arg-type]
    snap.host, snap.unit = read.host, read.unit
    return Baseline(name=name, snapshot=snap)


def _once(lookup: Callable[[K], V]) -> Callable[[K], V]:
    """`lookup` asked once per argument (an image's own command: one `podman image inspect` each)."""
    seen: dict[K, V] = {}

    def cached(image: K) -> V:
        if image not in seen:
            seen[image] = lookup(image)
        return seen[image]
    return cached


def _servers(specs: list[ContainerSpec], collect: CollectOptions) -> Iterable[ContainerSpec]:
    """The containers that start an engine (init containers and sidecars are no server)."""
    from ..parse.wrappers import NO_ENGINE
    from ..snapshots.container import engine_of
    return [s for s in specs if not s.init and engine_of(s, collect.files) != NO_ENGINE]


def _read_spec(target: Target, host: str, spec: ContainerSpec, collect: CollectOptions) -> LiveRead:
    from ..snapshots.container import snapshot_from_container
    unit = spec.origin.label
    labels = {"namespace": spec.origin.namespace or "", "container": spec.origin.container}
    if spec.origin.kind != "Pod":
        labels["workload"] = f"{spec.origin.kind}/{spec.origin.name}"
    try:
        snap = snapshot_from_container(spec, collect.engine_version, collect.files)
    except DriftwatchError as exc:
        return LiveRead(target, host, unit, error=f"{host}: {unit}: {exc}", failure="invalid unit", labels=labels)
    snap.host, snap.unit = host, unit
    return LiveRead(target, host, unit, snap, labels=labels)


def _key(spec: ContainerSpec) -> tuple:
    """(kind, name, namespace, role, container): a workload template container."""
    o = spec.origin
    return o.kind, o.name, o.namespace, o.role, o.container


def _owner(pod: ContainerSpec, workloads: list[ContainerSpec]) -> tuple | None:
    """The template container a Pod's container was made from: the Pod's owner (a StatefulSet or
    DaemonSet by name; a Deployment through its ReplicaSet `NAME-<pod-template-hash>`; a
    LeaderWorkerSet by its name label, the leader being worker index 0), else the one workload whose
    selector's `matchLabels` the Pod carries."""
    obj = pod.extra.get("object") or {}
    meta = found if isinstance(found := obj.get("metadata"), dict) else {}
    labels = found if isinstance(found := meta.get("labels"), dict) else {}
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    container = pod.origin.container

    def find(kind: str, name: str, role: str | None = None) -> tuple | None:
        for w in workloads:
            if w.origin.kind == kind and w.origin.name == name and w.origin.container == container \
                    and (role is None or w.origin.role == role):
                return _key(w)
        return None

    if labels.get(_LWS_NAME):
        role = "leader" if str(labels.get(_LWS_INDEX, "0")) == "0" else "worker"
        return find("LeaderWorkerSet", str(labels[_LWS_NAME]), role)
    for o in owners:
        kind, name = str(o.get("kind")), str(o.get("name"))
        if kind in ("StatefulSet", "DaemonSet"):
            return find(kind, name)
        if kind == "ReplicaSet":
            suffix = labels.get("pod-template-hash")
            if suffix and name.endswith(f"-{suffix}"):
                return find("Deployment", name[:-len(suffix) - 1])
    matched = []
    for w in workloads:
        wobj = w.extra.get("object") or {}
        spec = wobj.get("spec")
        wanted = spec.get("selector") if isinstance(spec, dict) else None
        wanted = wanted.get("matchLabels") if isinstance(wanted, dict) else None
        if isinstance(wanted, dict) and wanted and all(labels.get(k) == v for k, v in wanted.items()) \
                and w.origin.container == container:
            matched.append(_key(w))
    return matched[0] if len(set(matched)) == 1 else None
