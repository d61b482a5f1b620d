"""An inventory entry's Kubernetes workloads and Pods, read with the user's own `kubectl get … -o json`
(their kubeconfig, context and RBAC: `get` and `list` on the kinds read is all it needs, never
cluster-admin). Every value goes to kubectl as one argv word (`--context`, `-n`, `-l`), never through
a shell. What comes back is the JSON `List`; run/live_containers.py reads its containers."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field

from ..fileio import MAX_YAML_BYTES, loads_json
from .inventory import KubernetesSource

KUBECTL_TIMEOUT = 60.0
# The workloads whose pod template is compared with its Pods; the Pods themselves. LeaderWorkerSets
# are asked for separately: a cluster without the LWS CRD refuses the whole request otherwise.
CORE_KINDS = "deployments.apps,statefulsets.apps,daemonsets.apps,pods"
OPTIONAL_KINDS = ("leaderworkersets.leaderworkerset.x-k8s.io",)


@dataclass
class KubeAnswer:
    """The objects kubectl listed (`items`), or why it gave none (`error`; `status` as a collector's)."""

    source: KubernetesSource
    items: list[dict] = field(default_factory=list)
    error: str | None = None
    status: str = "ok"
    notes: list[str] = field(default_factory=list)


def kubectl_argv(kubectl: str, source: KubernetesSource, kinds: str) -> list[str]:
    """`kubectl [--context C] get KINDS [-n NS] [-l SELECTOR] -o json`, each value its own word."""
    argv = [kubectl]
    if source.context:
        argv += ["--context", source.context]
    argv += ["get", kinds]
    if source.namespace:
        argv += ["-n", source.namespace]
    if source.selector:
        argv += ["-l", source.selector]
    return argv + ["-o", "json"]


def _get(argv: list[str], timeout: float) -> tuple[list[dict] | None, str | None]:
    """(items, None) or (None, the one line that says why)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"kubectl get took more than {timeout:g} s"
    except OSError as exc:
        return None, f"cannot run kubectl: {exc.strerror or exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return None, f"kubectl get failed: {last[:300]}"
    if len(done.stdout) > MAX_YAML_BYTES:
        return None, f"kubectl get wrote more than {MAX_YAML_BYTES} bytes"
    try:
        data = loads_json(done.stdout)
    except ValueError as exc:
        return None, f"kubectl get: not JSON: {str(exc)[:200]}"
    items = data.get("items") if isinstance(data, dict) and data.get("kind") == "List" else [data]
    if not isinstance(items, list):
        return None, "kubectl get: not a List"
    return [i for i in items if isinstance(i, dict)], None


def kubectl_get(source: KubernetesSource, kubectl: str | None = None,
                timeout: float = KUBECTL_TIMEOUT) -> KubeAnswer:
    """The entry's workloads (Deployments, StatefulSets, DaemonSets, LeaderWorkerSets where the CRD
    is installed) and Pods. Never raises: a missing kubectl, a refused request (RBAC, an unknown
    context) or a timeout is the answer's `error`."""
    out = KubeAnswer(source)
    kubectl = kubectl or shutil.which("kubectl")
    if kubectl is None:
        out.error, out.status = "kubectl is not on PATH (driftwatch reads workloads with `kubectl get`)", "error"
        return out
    items, error = _get(kubectl_argv(kubectl, source, CORE_KINDS), timeout)
    if items is None:
        out.error = error
        out.status = "timeout" if (error or "").startswith("kubectl get took") else "error"
        return out
    out.items = items
    for kinds in OPTIONAL_KINDS:
        more, error = _get(kubectl_argv(kubectl, source, kinds), timeout)
        if more is not None:
            out.items += more
        elif error and "resource type" not in error:  # the CRD not installed: nothing to read, nothing to say
            out.notes.append(f"{kinds}: {error}")
    return out
