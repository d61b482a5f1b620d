"""A stand-in Kubernetes API for the real `kubectl` binary, where no API server can run.

The objects it serves are real manifests decoded by kubectl itself (`kubectl label --local -o json`,
`kubectl kustomize`); the server answers kubectl's legacy discovery (/api, /api/v1, /apis,
/apis/apps/v1) and list requests (`/api/v1/namespaces/NS/pods?labelSelector=…`, the apps kinds),
applying equality label selectors (`k=v,k2=v2`) as the API server does for them. So the real kubectl
builds the request from driftwatch's argv (`--context`, `-n`, `-l`), reads the kubeconfig, decodes
the answer and prints its `List`: everything but the API server's storage is the real thing.
Every request is recorded (`requests`) for the tests to check what kubectl asked.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse


def usable_kubectl() -> str | None:
    """The kubectl on PATH if it can render the fixtures' kustomizations (patches as inline objects need
    the kustomize of a recent kubectl; Debian 12's kubectl 1.20 refuses them), else None: the tests that
    need one skip with that reason instead of failing on a machine with an old kubectl."""
    found = shutil.which("kubectl")
    if found is None:
        return None
    overlay = Path(__file__).resolve().parent.parent / "fixtures" / "manifests" / "seed-000" / "overlay-40toks"
    try:
        done = subprocess.run([found, "kustomize", str(overlay)], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if done.returncode == 0 else None


KUBECTL = usable_kubectl()
KUBECTL_MISSING = "needs a kubectl on PATH that renders kustomize patches (none, or too old: Debian 12's 1.20 is)"

_CORE = {"pods": ("Pod", True)}
_APPS = {"deployments": ("Deployment", True), "statefulsets": ("StatefulSet", True),
         "daemonsets": ("DaemonSet", True), "replicasets": ("ReplicaSet", True)}
_LWS = {"leaderworkersets": ("LeaderWorkerSet", True)}  # a CRD: served only when the lab is made with it


def _resources(table: dict) -> list[dict]:
    return [{"name": plural, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
             "verbs": ["get", "list"]} for plural, (kind, namespaced) in table.items()]


def decoded(path: Path | str, label: str = "driftwatch.test/lab=1") -> list[dict]:
    """The objects of a manifest as kubectl decodes them (`kubectl label --local -o json`: no server),
    each labelled `label` (a chart labels its workloads as their Pods)."""
    done = subprocess.run([KUBECTL or "kubectl", "label", "--local", "-f", str(path), label, "-o", "json"], capture_output=True, text=True, timeout=60, check=True)
    out, text, at = [], done.stdout, 0  # a file of several documents: one JSON object after another
    decoder = json.JSONDecoder()
    while text[at:].strip():
        data, at = decoder.raw_decode(text, len(text) - len(text[at:].lstrip()))
        out += data["items"] if data.get("kind") == "List" else [data]
    return out


def rendered(directory: Path | str, label: str = "driftwatch.test/lab=1") -> list[dict]:
    """A kustomize directory rendered by `kubectl kustomize`, then decoded as above."""
    import tempfile
    text = subprocess.run([KUBECTL or "kubectl", "kustomize", str(directory)], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as tmp:
        tmp.write(text)
        tmp.flush()
        return decoded(tmp.name, label)


class KubeLab:
    """The HTTP server (127.0.0.1, a free port) and a kubeconfig pointing at it (context `lab`)."""

    def __init__(self, directory: Path, objects: list[dict], lws: bool = False):
        self.objects = objects
        self.groups = {"apps": _APPS, **({"leaderworkerset.x-k8s.io": _LWS} if lws else {})}
        self.forbidden: set[str] = set()  # plurals this reader may not list (RBAC), answered 403 as the API does
        self.requests: list[str] = []
        lab = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                lab.requests.append(self.path)
                status, body = lab.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.kubeconfig = directory / "kubeconfig"
        self.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "lab",
            "clusters": [{"name": "lab", "cluster": {"server": self.url}}],
            "users": [{"name": "reader", "user": {"token": "lab-token-not-a-secret"}}],
            "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "reader", "namespace": "default"}}],
        }))
        self.cache = directory / "kube-cache"

    def env(self) -> dict[str, str]:
        """The environment kubectl is run with: this kubeconfig, a discovery cache of the test's own."""
        return {"KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(self.cache)}

    def answer(self, raw: str) -> tuple[int, dict]:
        url = urlparse(raw)
        parts = [p for p in url.path.split("/") if p]
        if parts == ["api"]:
            return 200, {"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
        if parts == ["apis"]:
            groups = []
            for group in self.groups:
                version = {"groupVersion": f"{group}/v1", "version": "v1"}
                groups.append({"name": group, "versions": [version], "preferredVersion": version})
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        if parts == ["api", "v1"]:
            return 200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": _resources(_CORE)}
        if len(parts) == 3 and parts[0] == "apis" and parts[1] in self.groups and parts[2] == "v1":
            return 200, {"kind": "APIResourceList", "groupVersion": f"{parts[1]}/v1",
                         "resources": _resources(self.groups[parts[1]])}
        if parts[:2] == ["api", "v1"] or (len(parts) > 3 and parts[0] == "apis" and parts[1] in self.groups):
            rest = parts[2:] if parts[0] == "api" else parts[3:]
            namespace = rest[1] if len(rest) == 3 and rest[0] == "namespaces" else None
            plural = rest[-1]
            table = _CORE if parts[0] == "api" else self.groups[parts[1]]
            kind = table.get(plural, ("", False))[0]
            if not kind:
                return 404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}
            if plural in self.forbidden:
                return 403, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
                             "code": 403, "message": f'{plural} is forbidden: User "reader" cannot list resource '
                                                     f'"{plural}" in API group "" in the namespace "{namespace}"'}
            selector = parse_qs(url.query).get("labelSelector", [""])[0]
            items = [o for o in self.objects if o.get("kind") == kind and _selected(o, namespace, selector)]
            return 200, {"kind": f"{kind}List", "apiVersion": f"{parts[1]}/v1" if parts[0] == "apis" else "v1",
                         "metadata": {"resourceVersion": "1"}, "items": items}
        return 404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def _selected(obj: dict, namespace: str | None, selector: str) -> bool:
    meta = obj.get("metadata") or {}
    if namespace is not None and meta.get("namespace", "default") != namespace:
        return False
    labels = meta.get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key.strip()) != value.strip().lstrip("="):
            return False
    return True
