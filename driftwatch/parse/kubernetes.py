"""Kubernetes objects -> the containers they start, after the kubelet's own rules.

Rules (each cited in docs/engines.md, "Containers and Kubernetes", and tested):
- `command` replaces the image's ENTRYPOINT and `args` its CMD; `args` alone keeps the ENTRYPOINT
  and drops the CMD; `command` alone drops both (kubernetes.io "Define a Command and Arguments").
- `$(VAR)` in `command`/`args` expands from the container's environment; in an `env` value, from the
  variables defined EARLIER in the list; `$$` is a literal `$` (so `$$(VAR)` is the text `$(VAR)`);
  a reference to an undefined variable stays as written (the kubelet's third_party/forked/golang/
  expansion).
- `valueFrom` (secretKeyRef, configMapKeyRef, fieldRef, resourceFieldRef) and `envFrom` values are not
  in the manifest: "value unknown", a secretKeyRef always a secret.
- Workloads: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, LeaderWorkerSet
  (leader and worker templates; the worker's when no leader template is given), KServe
  (Cluster)ServingRuntime and InferenceService (custom `containers`, or `model` merged with a runtime
  given in the same input: the runtime's args then the InferenceService's, env merged by name).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InputError
from .containers import ContainerSpec, EnvVar, ImageLookup, Origin, gpu_count, no_images, string_list

_POD_TEMPLATE_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController"}
_RUNTIME_KINDS = {"ServingRuntime", "ClusterServingRuntime"}
WORKLOAD_KINDS = _POD_TEMPLATE_KINDS | _RUNTIME_KINDS | {"Pod", "CronJob", "LeaderWorkerSet", "InferenceService"}


# ------------------------------------------------------------------------------ $(VAR) expansion
def expand(text: str, mapping: Callable[[str], str | None]) -> str:
    """The kubelet's expansion of `text`: `$(NAME)` -> mapping(NAME) (kept as written when None),
    `$$` -> `$`, an unclosed `$(` and a `$` before anything else kept as they are."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
                continue
            name = text[i + 2:close]
            value = mapping(name)
            out.append(value if value is not None else f"$({name})")
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


# ------------------------------------------------------------------------------------ environment
def _ref(value: dict, key: str) -> str:
    ref = value.get(key) or {}
    if not isinstance(ref, dict):
        return key
    if key in ("fieldRef",):
        return f"fieldRef {ref.get('fieldPath')}"
    if key == "resourceFieldRef":
        return f"resourceFieldRef {ref.get('resource')}"
    return f"{key} {ref.get('name')}/{ref.get('key')}"


def container_env(container: dict, where: str) -> tuple[list[EnvVar], list[str]]:
    """The container's `env`, each value expanded from the variables defined before it, and notes on
    what `envFrom` brings that the manifest does not show."""
    env: list[EnvVar] = []
    known: dict[str, str] = {}
    notes: list[str] = []
    items = container.get("env") or []
    if not isinstance(items, list):
        raise InputError(f"{where}: env is not a list")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise InputError(f"{where}: env[{i}] has no name")
        name = item["name"]
        if isinstance(item.get("valueFrom"), dict):
            source = next((k for k in ("secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef")
                           if k in item["valueFrom"]), "valueFrom")
            env.append(EnvVar(name, None, _ref(item["valueFrom"], source), secret=source == "secretKeyRef"))
            known.pop(name, None)
            continue
        value = item.get("value", "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            hint = " (quote it)" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
            raise InputError(f"{where}: env {name} value is not a string{hint}: Kubernetes refuses it")
        value = expand(value, dict(known).get)  # only the variables defined earlier
        env.append(EnvVar(name, value))
        known[name] = value
    for ref in container.get("envFrom") or []:
        if isinstance(ref, dict):
            for key in ("configMapRef", "secretRef"):
                if isinstance(ref.get(key), dict):
                    prefix = f" (prefix {ref['prefix']})" if ref.get("prefix") else ""
                    notes.append(f"envFrom {key} {ref[key].get('name')}{prefix}: its variables and values are "
                                 f"not in the manifest (value unknown)")
    return env, notes


# ---------------------------------------------------------------------------------- one container
# Variables a controller adds to every container of the pods it creates (their values are per pod).
LWS_VARIABLES = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")


def container_spec(container: dict, origin: Origin, *, init: bool = False,
                   images: ImageLookup = no_images, injected: tuple[EnvVar, ...] = ()) -> ContainerSpec:
    """One container after the kubelet's rules (see the module docstring). `injected`: variables a
    controller adds to the pod's containers (LeaderWorkerSet's LWS_*), values unknown here."""
    where = f"{origin.file}: {origin.label}"
    if not isinstance(container, dict):
        raise InputError(f"{where}: a container is not a mapping")
    image = container.get("image")
    image = str(image) if image is not None else None
    env, notes = container_env(container, where)
    defined = {v.name for v in env}
    env = [v for v in injected if v.name not in defined] + env
    command = string_list(container.get("command"), where, "command")
    args = string_list(container.get("args"), where, "args")
    values = {v.name: v.value for v in env}  # the last definition wins
    unknown = {v.name for v in env if v.value is None}

    def mapping(name: str) -> str | None:
        return values.get(name)

    for word in (command or []) + (args or []):
        for name in unknown:
            if f"$({name})" in word and f"$$({name})" not in word:
                notes.append(f"$({name}) is set when the pod starts (from "
                             f"{next(v.source for v in env if v.name == name)}): its value is not in the manifest")
    words: list[str]
    head_len = 0  # words of the image's ENTRYPOINT in front of `args` (args alone)
    if command is not None:  # command replaces ENTRYPOINT; the image's CMD is dropped too
        words = [expand(w, mapping) for w in command] + [expand(w, mapping) for w in (args or [])]
    else:
        known = images(image)
        if args is not None:  # args replace CMD; the image's ENTRYPOINT stays
            head = list(known.entrypoint) if known else []
            head_len = len(head)
            if known is None:
                notes.append(f"the image {image}'s ENTRYPOINT is not known here: only `args` are read")
            words = head + [expand(w, mapping) for w in args]
        elif known is not None:
            words = list(known.entrypoint) + list(known.cmd)
        else:
            words = []
            notes.append(f"no command or args, and the image {image}'s ENTRYPOINT/CMD is not known here")
    resources = container.get("resources") or {}
    gpus = None
    if isinstance(resources, dict):
        for part in ("limits", "requests"):
            table = resources.get(part) or {}
            if isinstance(table, dict) and "nvidia.com/gpu" in table:
                gpus = gpu_count(table["nvidia.com/gpu"], where)
                break
    # As written (before expansion), for a patch that writes the container back (run/manifest_restore.py).
    extra = {"command": command, "args": args, "head_len": head_len, "env": list(container.get("env") or [])}
    return ContainerSpec(origin=origin, image=image, argv=tuple(words), env=tuple(env), gpus=gpus, init=init,
                         notes=tuple(dict.fromkeys(notes)), platform="kubernetes", extra=extra)


# ------------------------------------------------------------------------------------- workloads
def _meta(doc: dict) -> tuple[str, str | None]:
    meta = doc.get("metadata") or {}
    if not isinstance(meta, dict):
        meta = {}
    return str(meta.get("name") or "?"), (str(meta["namespace"]) if meta.get("namespace") else None)


def _at(data: Any, *keys: str) -> Any:
    """data[k1][k2]… when every level is a mapping, else None (a hand-written manifest may hold anything)."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def pod_path(kind: str, role: str | None, doc: dict) -> list[str]:
    """Where a workload keeps the pod spec `pod_specs` found for `role` (keys from the object's root)."""
    if kind == "Pod" or (kind in _RUNTIME_KINDS and role is None):
        return ["spec"]
    if kind in _RUNTIME_KINDS:
        return ["spec", "workerSpec"]
    if kind == "CronJob":
        return ["spec", "jobTemplate", "spec", "template", "spec"]
    if kind == "LeaderWorkerSet":
        which = "leaderTemplate" if role == "leader" and _at(doc, "spec", "leaderWorkerTemplate", "leaderTemplate") \
            else "workerTemplate"
        return ["spec", "leaderWorkerTemplate", which, "spec"]
    return ["spec", "template", "spec"]


def pod_specs(doc: dict) -> list[tuple[str | None, dict]]:
    """(role, pod spec) of every pod template a workload holds."""
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if not isinstance(spec, dict):
        return []

    def template(holder: Any) -> dict | None:
        if not isinstance(holder, dict):
            return None
        inner = (holder.get("template") or {}).get("spec") if isinstance(holder.get("template"), dict) else None
        return inner if isinstance(inner, dict) else None

    if kind == "Pod":
        return [(None, spec)]
    if kind in _POD_TEMPLATE_KINDS:
        found = template(spec)
        return [(None, found)] if found else []
    if kind == "CronJob":
        found = template(_at(spec, "jobTemplate", "spec"))
        return [(None, found)] if found else []
    if kind == "LeaderWorkerSet":
        out: list[tuple[str | None, dict]] = []
        worker = _at(spec, "leaderWorkerTemplate", "workerTemplate", "spec")
        leader = _at(spec, "leaderWorkerTemplate", "leaderTemplate", "spec") or worker  # none: the worker's
        if isinstance(leader, dict):
            out.append(("leader", leader))
        if isinstance(worker, dict):
            out.append(("worker", worker))
        return out
    if kind in _RUNTIME_KINDS:
        out = [(None, spec)]  # the runtime's own containers, then a multi-node runtime's workers
        if isinstance(spec.get("workerSpec"), dict):
            out.append(("worker", spec["workerSpec"]))
        return out
    return []


def _runtime_for(isvc: dict, runtimes: list[dict]) -> dict | None:
    """The ServingRuntime an InferenceService's `predictor.model` names (or the one auto-selected for
    its model format), among the documents read."""
    model = _at(isvc, "spec", "predictor", "model") or {}
    wanted = model.get("runtime")
    fmt = _at(model, "modelFormat", "name")
    for rt in runtimes:
        if wanted and _meta(rt)[0] == wanted:
            return rt
    if wanted:
        return None
    def formats(rt: dict) -> list:
        found = _at(rt, "spec", "supportedModelFormats")
        return found if isinstance(found, list) else []
    matches = [rt for rt in runtimes
               if any(isinstance(f, dict) and f.get("name") == fmt and f.get("autoSelect") for f in formats(rt))]
    return matches[0] if len(matches) == 1 else None


def _merge_runtime(runtime_container: dict, model: dict, isvc_name: str) -> dict:
    """KServe's MergeRuntimeContainers: the InferenceService's fields over the runtime container's,
    `args` concatenated (runtime then InferenceService), `env` merged by name; `{{.Name}}` in the
    runtime's args is the InferenceService's name."""
    merged = dict(runtime_container)
    for key in ("args", "env"):  # the two fields merged rather than replaced: lists, or Kubernetes refuses
        for side, where in ((runtime_container, "the ServingRuntime's container"), (model, "predictor.model")):
            if side.get(key) is not None and not isinstance(side.get(key), list):
                raise InputError(f"InferenceService/{isvc_name}: {key} of {where} is not a list")
    for key, value in model.items():
        if key in ("modelFormat", "runtime", "storageUri", "protocolVersion", "args", "env", "name"):
            continue
        merged[key] = value
    runtime_args = [a.replace("{{.Name}}", isvc_name) if isinstance(a, str) else a
                    for a in runtime_container.get("args") or []]
    merged["args"] = runtime_args + list(model.get("args") or [])
    env = {e.get("name"): e for e in runtime_container.get("env") or [] if isinstance(e, dict)}
    for e in model.get("env") or []:
        if isinstance(e, dict):
            env[e.get("name")] = e
    merged["env"] = list(env.values())
    return merged


def read_objects(objects: list[tuple[str, int | None, dict]], images: ImageLookup = no_images
                 ) -> list[ContainerSpec]:
    """Every container of every workload among `objects` ((file, document index, object), every file
    read: an InferenceService may run a ServingRuntime given in another file); a `List` is read item
    by item. Objects of other kinds (Service, ConfigMap, …) are skipped."""
    flat: list[tuple[str, int | None, dict]] = []
    for file, index, obj in objects:
        if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            flat.extend((file, index, item) for item in obj["items"] if isinstance(item, dict))
        elif isinstance(obj, dict):
            flat.append((file, index, obj))
    runtimes = [o for _, _, o in flat if o.get("kind") in _RUNTIME_KINDS]
    specs: list[ContainerSpec] = []
    for file, index, obj in flat:
        kind = obj.get("kind")
        name, namespace = _meta(obj)
        if kind == "InferenceService":
            specs.extend(_inference_service(obj, index, file, runtimes, images))
            continue
        for role, pod in pod_specs(obj):
            for init, key in ((True, "initContainers"), (False, "containers")):
                containers = pod.get(key) or []
                if not isinstance(containers, list):
                    raise InputError(f"{file}: {kind}/{name}: {key} is not a list")
                for position, c in enumerate(containers):
                    cname = str(c.get("name") or "?") if isinstance(c, dict) else "?"
                    origin = Origin(file, index, str(kind), name, namespace, cname,
                                    "init" if init and not role else (f"{role}/init" if init else role))
                    injected = tuple(EnvVar(n, None, "the LeaderWorkerSet controller")
                                     for n in LWS_VARIABLES) if kind == "LeaderWorkerSet" else ()
                    spec = container_spec(c, origin, init=init, images=images, injected=injected)
                    spec.extra.update(pod_path=pod_path(str(kind), role, obj), list=key, index=position, object=obj)
                    specs.append(spec)
    return specs


def _inference_service(obj: dict, index: int | None, file: str, runtimes: list[dict],
                       images: ImageLookup) -> list[ContainerSpec]:
    name, namespace = _meta(obj)
    predictor = _at(obj, "spec", "predictor") or {}
    if not isinstance(predictor, dict):
        return []
    out = []
    containers = predictor.get("containers") or []
    if not isinstance(containers, list):
        raise InputError(f"{file}: InferenceService/{name}: predictor.containers is not a list")
    for c in containers:
        if isinstance(c, dict):
            origin = Origin(file, index, "InferenceService", name, namespace, str(c.get("name") or "?"))
            out.append(container_spec(c, origin, images=images))
    model = predictor.get("model")
    if isinstance(model, dict):
        runtime = _runtime_for(obj, runtimes)
        if runtime is None:
            fmt = _at(model, "modelFormat", "name")
            wanted = model.get("runtime") or f"a runtime for model format {fmt}"
            raise InputError(f"{file}: InferenceService/{name}: predictor.model runs {wanted}, which is not among "
                             "the manifests read (give its ServingRuntime with another --manifest)")
        runtime_containers = _at(runtime, "spec", "containers")
        for c in runtime_containers if isinstance(runtime_containers, list) else []:
            if isinstance(c, dict):
                merged = _merge_runtime(c, model, name)
                origin = Origin(file, index, "InferenceService", name, namespace, str(c.get("name") or "?"))
                spec = container_spec(merged, origin, images=images)
                out.append(spec)
    return out
