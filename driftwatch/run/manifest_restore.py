"""`restore --manifest`: the smallest patch that brings a manifest's container back to its baseline.

The plan is the unit restore's own (findings/restore.py `plan_restore`), made on the unit the
container is equivalent to (snapshots/container.py), with the launcher kept (a container stays in
its image). Its new command line and environment are written back in the platform's terms:

- Kubernetes kinds with a strategic-merge schema (Pod, Deployment, StatefulSet, DaemonSet,
  ReplicaSet, Job, CronJob): a strategic-merge patch naming the container (containers merge by
  `name`; `args`/`command` are replaced whole; `env` merges by `name`, `$patch: delete` removes);
- custom resources (LeaderWorkerSet, KServe runtimes): a JSON 6902 patch (`replace` of the
  container's `args`/`command`/`env` by index), as kustomize applies to any kind;
- Compose: a `compose.override.yaml` for the service (`command`/`entrypoint` replaced, `environment`
  merged by name, as Compose merges an override file).

A patch is checked by laying it over the original (`kubectl kustomize` for Kubernetes; Compose's
merge rules for an override) and comparing again, as a drop-in is. `--apply` is not offered for
manifests: the cluster or the Compose project is applied from git (GitOps), not by driftwatch.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..collect.raw import RawUnit
from ..errors import InputError
from ..fileio import dump_yaml, load_yaml_text
from ..parse.containers import ContainerSpec
from ..snapshots.container import _synthetic_unit, choose_container, snapshot_from_container
from .manifest import ManifestRead, ManifestRequest, read_manifests

if TYPE_CHECKING:
    from ..findings.compare import Comparison
    from ..findings.judging import Judging
    from ..snapshots.baseline import Baseline
    from .voice import Voice

SMP_KINDS = {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "ReplicationController"}
# The container stays in its image: the plan keeps the launcher; the environment (the container's,
# which a unit's plan would write as `docker run -e`) is written here, in the platform's terms.
_KEEP_LAUNCHER = ("launcher.*", "env.*")


@dataclass
class ManifestRestore:
    """What `restore --manifest` offers: the patch, what it undoes, what is left and why."""

    target: str
    kind: str  # "strategic-merge" | "json6902" | "compose-override" | "none"
    patch: str | None = None
    undoes: list[str] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)  # (label, reason)
    problems: list[str] = field(default_factory=list)
    still: list[str] = field(default_factory=list)  # labels that still differ with the patch laid over
    checked_with: str = ""

    def doc(self) -> dict:
        return {"target": self.target, "patch_kind": self.kind, "patch": self.patch, "undoes": self.undoes,
                "left": [{"label": a, "reason": b} for a, b in self.left], "problems": self.problems,
                "still_differs": self.still, "checked_with": self.checked_with}


# ---------------------------------------------------------------- the plan's words, back to the container
def _container_words(words: list[str]) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) of the `docker run --entrypoint=E -e N=V … IMAGE ARGS…` a plan writes (its
    words as ExecStart= holds them: `$$` is systemd's `$`)."""
    words = [w.replace("$$", "$") for w in words]
    entry, env, i = None, {}, 2
    while i < len(words):
        w = words[i]
        if w.startswith("--entrypoint="):
            entry = w.split("=", 1)[1]
        elif w in ("-e", "--env") and i + 1 < len(words):
            name, _, value = words[i + 1].partition("=")
            env[name] = value
            i += 1
        elif not w.startswith("-"):
            return [entry or "", *words[i + 1:]], env
        i += 1
    raise InputError("the restored command line has no image word")  # not reached: the plan keeps it


def _late_back(words: list[str], late: set[str], handed: list[str], original: tuple[str, ...]) -> list[str]:
    """Undo the `$NAME` -> `$(NAME)` rewriting of snapshots/container.py in a shell script (a word
    the plan kept is the original word; a word it rewrote gets `${NAME}` back)."""
    if list(handed) == list(original) or not late:
        return list(words)
    back = {h: o for h, o in zip(handed, original, strict=False) if h != o}
    pattern = re.compile(r"\$\((" + "|".join(map(re.escape, sorted(late))) + r")\)")
    return [back.get(w, pattern.sub(lambda m: "${" + m.group(1) + "}", w)) for w in words]


def _k8s_words(new: list[str], spec: ContainerSpec) -> list[str]:
    """Words as a manifest writes them: a word that came from a `$(VAR)` reference written as it was,
    any other `$` doubled so that the kubelet does not expand it."""
    raw = list(spec.extra.get("command") or []) + list(spec.extra.get("args") or [])
    expanded = list(spec.argv[spec.extra.get("head_len", 0):])
    back = {e: r for e, r in zip(expanded, raw, strict=False) if e != r}
    written = set(raw)  # a word the manifest has as it is (an unresolved `$(VAR)` included)
    return [back.get(w, w if w in written or "$(" not in w else w.replace("$", "$$")) for w in new]


def _env_changes(spec: ContainerSpec, new_env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(set or changed, removed) of the container's variables whose value is in the manifest."""
    old = {v.name: v.value for v in spec.env if v.value is not None}
    late = {v.name for v in spec.env if v.value is None}
    changed = {k: v for k, v in new_env.items() if old.get(k) != v and k not in late}
    removed = [k for k in old if k not in new_env]
    return changed, removed


# ------------------------------------------------------------------------------------ the patches
def _nest(path: list[str], leaf: dict) -> dict:
    for key in reversed(path):
        leaf = {key: leaf}
    return leaf


def _split(spec: ContainerSpec, argv: list[str]) -> tuple[list[str] | None, list[str]]:
    """(command or None, args) for the restored argv, in the manifest's own split."""
    command = spec.extra.get("command")
    head = spec.extra.get("head_len", 0)
    if command is not None:
        n = len(command)
        if spec.extra.get("args") is None:  # the whole command line in `command`
            return argv, []
        if argv[:n] == list(spec.argv[:n]):
            return None, argv[n:]
        return argv, []
    return None, argv[head:]


def k8s_patch(spec: ContainerSpec, argv: list[str], env: dict[str, str]) -> tuple[str, str, dict]:
    """(kind of patch, its YAML, the kustomize `patches:` entry) for a Kubernetes container."""
    obj = spec.extra["object"]
    command, args = _split(spec, argv)
    changed, removed = _env_changes(spec, env)
    words_changed = argv != list(spec.argv)
    meta = {"name": spec.origin.name, **({"namespace": spec.origin.namespace} if spec.origin.namespace else {})}
    if spec.origin.kind in SMP_KINDS:
        entry: dict = {"name": spec.name}
        if command is not None:
            entry["command"] = _k8s_words(command, spec)
        if words_changed and (args or spec.extra.get("args") is not None):
            entry["args"] = _k8s_words(args, spec)
        if changed or removed:
            entry["env"] = [{"name": k, "value": v} for k, v in changed.items()] + \
                [{"name": k, "$patch": "delete"} for k in removed]
        body = {"apiVersion": obj.get("apiVersion"), "kind": spec.origin.kind, "metadata": meta,
                **_nest(spec.extra["pod_path"], {spec.extra["list"]: [entry]})}
        return "strategic-merge", dump_yaml(body), {"path": "patch.yaml"}
    base = "/" + "/".join(spec.extra["pod_path"] + [spec.extra["list"], str(spec.extra["index"])])
    ops: list[dict] = []
    if command is not None:
        ops += _list_ops(f"{base}/command", spec.extra.get("command"), _k8s_words(command, spec))
    if words_changed and (args or spec.extra.get("args") is not None):
        ops += _list_ops(f"{base}/args", spec.extra.get("args"), _k8s_words(args, spec))
    if changed or removed:
        kept = [e for e in spec.extra.get("env") or [] if isinstance(e, dict) and e.get("name") not in removed
                and e.get("name") not in changed]
        ops.append({"op": "replace" if spec.extra.get("env") else "add", "path": f"{base}/env",
                    "value": kept + [{"name": k, "value": v} for k, v in changed.items()]})
    target = {"kind": spec.origin.kind, "name": spec.origin.name,
              **({"namespace": spec.origin.namespace} if spec.origin.namespace else {})}
    return "json6902", dump_yaml(ops), {"path": "patch.yaml", "target": target}


def _list_ops(path: str, old: list[str] | None, new: list[str]) -> list[dict]:
    """The smallest JSON 6902 operations from `old` to `new`: one `replace` per word when only words
    changed (the list keeps its length), else the whole list."""
    if old is not None and len(old) == len(new):
        return [{"op": "replace", "path": f"{path}/{i}", "value": w} for i, (o, w) in enumerate(zip(old, new,
                strict=True)) if o != w]
    return [{"op": "replace" if old is not None else "add", "path": path, "value": new}]


def compose_override(spec: ContainerSpec, argv: list[str], env: dict[str, str]) -> tuple[str, dict]:
    """(compose.override.yaml, the override as data) for a service: `$` doubled (no interpolation)."""
    entrypoint = spec.extra.get("entrypoint")
    service: dict = {}
    if argv != list(spec.argv):
        if entrypoint is not None:
            if argv[:len(entrypoint)] != list(spec.argv[:len(entrypoint)]):
                service["entrypoint"] = [w.replace("$", "$$") for w in argv[:len(entrypoint)]]
            service["command"] = [w.replace("$", "$$") for w in argv[len(entrypoint):]]
        else:
            service["command"] = [w.replace("$", "$$") for w in argv[spec.extra.get("head_len", 0):]]
    changed, removed = _env_changes(spec, env)
    if changed or removed:
        service["environment"] = {**{k: v.replace("$", "$$") for k, v in changed.items()},
                                  **{k: None for k in removed}}
    data = {"services": {spec.origin.name: service}}
    return dump_yaml(data), data


def _compose_merge(base: dict, override: dict) -> dict:
    """Compose's merge of an override file, for what a restore writes: `command`/`entrypoint` replaced,
    `environment` merged by name (a null value in the override leaves the name unset here)."""
    merged = {**base, "services": dict(base.get("services") or {})}
    for name, svc in override["services"].items():
        cur = dict(merged["services"].get(name) or {})
        for key in ("command", "entrypoint"):
            if key in svc:
                cur[key] = svc[key]
        if "environment" in svc:
            env = cur.get("environment") or {}
            if isinstance(env, list):
                env = {str(e).partition("=")[0]: (str(e).partition("=")[2] if "=" in str(e) else None) for e in env}
            env = {**env, **svc["environment"]}
            cur["environment"] = {k: v for k, v in env.items() if v is not None}
        merged["services"][name] = cur
    return merged


# -------------------------------------------------------------------------------------- the run
def restore_manifest(request: ManifestRequest, baseline: Baseline, judging: Judging, keep: tuple[str, ...] = (),
                     allow_engine_change: bool = False) -> ManifestRestore:
    """Plan the patch for the engine container the manifests hold and check it (module docstring)."""
    from ..findings.restore import migration, plan_restore
    read = read_manifests(request)
    spec = choose_container(read.containers, request.container)
    current = snapshot_from_container(spec)
    result = judging.compare(baseline, current)
    out = ManifestRestore(spec.origin.label, "none")
    text, _image_index, handed = _synthetic_unit(spec)
    raw = RawUnit(host="", unit=spec.origin.label, text=text, source="manifest", paths=[spec.origin.file])
    # The container stays in its image, so a unit baseline's host launcher is no migration here;
    # another engine or model is (as for a unit), unless --allow-engine-change.
    change = migration(result)
    plan = plan_restore(result, raw, tuple(keep) + _KEEP_LAUNCHER, allow_engine_change=allow_engine_change or (
        change is not None and change.startswith("launcher family")))
    out.undoes = [f.difference.label for f in plan.undoes]
    out.left = [(left.label, "launcher" if left.key.startswith("launcher.") else left.reason) for left in plan.left
                if not left.key.startswith("env.")]
    out.problems = list(plan.problems)
    argv, env = _container_words(plan.exec_start or raw_words(raw))
    late = {v.name for v in spec.env if v.value is None}
    argv = _late_back(argv, late, handed, spec.argv)
    _plan_environment(out, result, spec, env, keep)
    if plan.exec_start is None and env == {v.name: v.value for v in spec.env if v.value is not None}:
        return out
    if spec.platform == "compose":
        out.kind = "compose-override"
        out.patch, data = compose_override(spec, argv, env)
        _check_compose(out, request, read, spec, data, baseline, judging)
    else:
        out.kind, out.patch, entry = k8s_patch(spec, argv, env)
        _check_kubernetes(out, request, read, spec, entry, baseline, judging)
    return out


def _plan_environment(out: ManifestRestore, result: Comparison, spec: ContainerSpec, env: dict[str, str],
                      keep: tuple[str, ...]) -> None:
    """The container's variables back to the baseline's, in `env`: never a secret (its value is not
    here), never one set when the pod starts, never one the container's own command line refers to
    (`$(NAME)`: removing it would change the argv)."""
    from fnmatch import fnmatchcase

    from ..redact import has_fingerprint
    late = {v.name for v in spec.env if v.value is None}
    raw_words = " ".join(list(spec.extra.get("command") or []) + list(spec.extra.get("args") or []))
    for f in result.findings:
        d = f.difference
        if not d.key.startswith("env."):
            continue
        name = d.key[4:]
        if any(fnmatchcase(n, pat) for pat in keep for n in (d.key, name, d.label)):
            out.left.append((d.label, "kept"))
        elif name in late:
            out.left.append((d.label, "set-at-start"))
        elif d.secret or has_fingerprint(d.baseline):
            out.left.append((d.label, "secret"))
        elif d.baseline is None and f"$({name})" in raw_words:
            out.left.append((d.label, "referenced"))
        else:
            if d.baseline is None:
                env.pop(name, None)
            else:
                env[name] = str(d.baseline)
            out.undoes.append(d.label)


def raw_words(raw: RawUnit) -> list[str]:
    from ..findings.restore import read_clear
    return list(read_clear(raw).expanded)


def _judge_again(out: ManifestRestore, request: ManifestRequest, texts: dict[str, str], label: str,
                 baseline: Baseline, judging: Judging) -> None:
    again = read_manifests(ManifestRequest(tuple(texts), label, request.environ, request.use_podman), texts)
    snap = snapshot_from_container(choose_container(again.containers, label))
    for issue in snap.issues:
        if issue.severity == "error":
            out.problems.append(f"engine:{issue.message}")
    after = judging.compare(baseline, snap)
    left = {label for label, _ in out.left}
    out.still = [f.difference.label for f in after.findings if f.difference.label not in left
                 and not f.difference.key.startswith("launcher.")]


def _check_kubernetes(out: ManifestRestore, request: ManifestRequest, read: ManifestRead, spec: ContainerSpec,
                      entry: dict, baseline: Baseline, judging: Judging) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        out.problems.append("unchecked: kubectl is not installed (the patch is laid over with kubectl kustomize)")
        return
    with tempfile.TemporaryDirectory(prefix="driftwatch-patch-") as tmp:
        with open(os.path.join(tmp, "base.yaml"), "w", encoding="utf-8") as fh:
            fh.write(read.texts[spec.origin.file])
        with open(os.path.join(tmp, "patch.yaml"), "w", encoding="utf-8") as fh:
            fh.write(out.patch or "")
        with open(os.path.join(tmp, "kustomization.yaml"), "w", encoding="utf-8") as fh:
            fh.write(dump_yaml({"resources": ["base.yaml"], "patches": [entry]}))
        done = subprocess.run([kubectl, "kustomize", tmp], capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        out.problems.append("refused: kubectl kustomize: " + (done.stderr.strip().splitlines() or ["?"])[-1][:300])
        return
    out.checked_with = "kubectl kustomize"
    texts = dict(read.texts)
    texts[spec.origin.file] = done.stdout
    _judge_again(out, request, texts, _label_key(spec), baseline, judging)


def _check_compose(out: ManifestRestore, request: ManifestRequest, read: ManifestRead, spec: ContainerSpec,
                   data: dict, baseline: Baseline, judging: Judging) -> None:
    base = load_yaml_text(read.texts[spec.origin.file], spec.origin.file, "manifest")
    merged = _compose_merge(base, data)
    out.checked_with = "the Compose merge rules (command/entrypoint replaced, environment by name)"
    texts = dict(read.texts)
    texts[spec.origin.file] = dump_yaml(merged)
    _judge_again(out, request, texts, _label_key(spec), baseline, judging)


def _label_key(spec: ContainerSpec) -> str:
    """The --container that names this very container again (its full label)."""
    return re.sub(r"^/", "", spec.origin.label)


@dataclass(frozen=True)
class ManifestRestoreRequest:
    """`restore --manifest` as typed: the manifests, the container, the baseline and how to judge."""

    manifests: tuple[str, ...]
    container: str | None
    baseline: str
    baselines_dir: str | None = None
    keep: tuple[str, ...] = ()
    rules_dir: str | None = None
    ignores: tuple[str, ...] = ()
    ignore_file: str | None = None
    write_dir: str | None = None
    allow_engine_change: bool = False


def run_manifest_restore(request: ManifestRestoreRequest, voice: Voice | None = None) -> tuple[dict, int]:
    """(the read-out's document, the exit code: 0 nothing to restore, 1 a patch offered, 2 a patch
    that does not check out); `write_dir` gets the patch file (never over an existing one)."""
    from ..fileio import write_new
    from ..findings.judging import load_judging
    from ..report.manifest_restore import patch_file_name
    from ..snapshots.baseline import baselines_dir as resolve_dir
    from .reading import named_baseline
    judging = load_judging(request.rules_dir, request.ignores, request.ignore_file, None, None)
    base = named_baseline(request.baseline, resolve_dir(request.baselines_dir))
    restored = restore_manifest(ManifestRequest(request.manifests, request.container), base, judging,
                                request.keep, request.allow_engine_change)
    doc = restored.doc()
    if restored.patch is None:
        return doc, 0
    if restored.problems or restored.still:
        return doc, 2
    if request.write_dir:
        name = patch_file_name(doc) or "patch.yaml"
        os.makedirs(request.write_dir, exist_ok=True)
        path = os.path.join(request.write_dir, name)
        try:
            write_new(path, restored.patch)
        except InputError:
            raise InputError(f"{path}: already exists; remove it or choose another --write DIR") from None
        doc["written"] = path
        if voice is not None:
            voice.aside(f"wrote {path}")
    return doc, 1
