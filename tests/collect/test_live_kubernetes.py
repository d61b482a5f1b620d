"""Inventory `kubernetes:` entries read with the real kubectl (collect/kube.py, run/live_containers.py).

No API server can run here: kubectl talks to tests/collect/kube_lab.py, which serves objects that
kubectl itself decoded from the seed-000 manifests (`kubectl kustomize`, `kubectl label --local -o
json`). The story is seed 003's "template versus the live copy" on seed 000 as a Deployment: the
overlay's values change (MTP 3 steps -> 1) is rolled out, one Pod runs the new template, one still
runs the old ReplicaSet's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kube_lab import KUBECTL, KUBECTL_MISSING, KubeLab, decoded, rendered

from driftwatch.collect.inventory import KubernetesSource, load_inventory
from driftwatch.collect.kube import kubectl_argv, kubectl_get
from driftwatch.errors import InputError

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "manifests" / "seed-000"
DW = str(Path(sys.executable).with_name("driftwatch"))
pytestmark = pytest.mark.skipif(KUBECTL is None, reason=KUBECTL_MISSING)


def _pod(tmp: Path, name: str, template_from: dict, hash_: str, namespace: str = "inference") -> list[dict]:
    """A Pod as its ReplicaSet made it from `template_from`'s pod template, decoded by kubectl."""
    template = template_from["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"sglang-qwen-{hash_}-{name}", "namespace": namespace,
                        "labels": {**template["metadata"]["labels"], "pod-template-hash": hash_},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "controller": True,
                                             "name": f"sglang-qwen-{hash_}", "uid": f"uid-{hash_}"}]},
           "spec": template["spec"]}
    path = tmp / f"pod-{name}.yaml"
    path.write_text(yaml.safe_dump(pod))
    return decoded(path)


@pytest.fixture
def kube(tmp_path, monkeypatch):
    """The lab serving the overlay's Deployment (1 step), a Pod of it, a Pod of the base (3 steps) and
    an unrelated Pod; kubectl pointed at it for this test only; the server shut down whatever happens."""
    new = rendered(SEED / "overlay-40toks", "app=sglang-qwen")
    [old] = decoded(SEED / "base" / "deployment.yaml", "app=sglang-qwen")
    objects = new + _pod(tmp_path, "new01", new[0], "6b7c8d9e0") + _pod(tmp_path, "old01", old, "5d8f7c9b4") \
        + _pod(tmp_path, "old02", old, "5d8f7c9b4")
    other = _pod(tmp_path, "other", old, "1a2b3c4d5", namespace="elsewhere")
    lab = KubeLab(tmp_path, objects + other)
    for key, value in lab.env().items():
        monkeypatch.setenv(key, value)
    try:
        yield lab
    finally:
        lab.close()


def _inventory(tmp_path: Path, **entries: dict) -> str:
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"hosts": entries}))
    return str(path)


def _run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([DW, *args], capture_output=True, text=True, timeout=300, env=os.environ.copy(),
                          cwd=tmp_path)


def test_kubectl_argv_passes_each_value_as_one_word():
    source = KubernetesSource("prod; rm -rf /", "llm", "app=vllm,tier in (a,b)")
    assert kubectl_argv("kubectl", source, "pods") == ["kubectl", "--context", "prod; rm -rf /", "get", "pods",
                                                       "-n", "llm", "-l", "app=vllm,tier in (a,b)", "-o", "json"]


def test_the_inventory_refuses_a_kubernetes_value_that_could_read_as_an_option(tmp_path):
    bad = _inventory(tmp_path, k8s={"kubernetes": {"context": "--kubeconfig=/etc/x"}})
    with pytest.raises(InputError, match="context"):
        load_inventory(bad)
    bad = _inventory(tmp_path, k8s={"kubernetes": {"cluster": "x"}})
    with pytest.raises(InputError, match="unknown key 'cluster'"):
        load_inventory(bad)


def test_kubectl_get_lists_workloads_and_pods_of_the_namespace_and_selector(kube):
    answer = kubectl_get(KubernetesSource("lab", "inference", "app=sglang-qwen"))
    assert answer.error is None, answer.error
    names = sorted((i["kind"], i["metadata"]["name"]) for i in answer.items)
    assert names == [("Deployment", "sglang-qwen"), ("Pod", "sglang-qwen-5d8f7c9b4-old01"),
                     ("Pod", "sglang-qwen-5d8f7c9b4-old02"), ("Pod", "sglang-qwen-6b7c8d9e0-new01")]
    # (not the Pod of namespace `elsewhere`)
    asked = [r for r in kube.requests if "labelSelector" in r]
    assert asked and all("/namespaces/inference/" in r and "labelSelector=app%3Dsglang-qwen" in r for r in asked)
    assert answer.notes == []  # no LeaderWorkerSet CRD on this "cluster": nothing to read, nothing said


def test_report_compares_template_with_baseline_and_each_pod_with_its_template(kube, tmp_path):
    saved = _run("baseline", "save", "seed70", "--manifest", str(SEED / "base" / "deployment.yaml"),
                 "--baselines-dir", str(tmp_path / "b"), tmp_path=tmp_path)
    assert saved.returncode == 0, saved.stderr
    inventory = _inventory(tmp_path, **{"prod-k8s": {"kubernetes": {"context": "lab", "namespace": "inference",
                                                                     "selector": "app=sglang-qwen"},
                                                      "baseline": "seed70"}})
    prom = tmp_path / "dw.prom"
    done = _run("report", "--inventory", inventory, "--baselines-dir", str(tmp_path / "b"), "--format", "json",
                "--prometheus", str(prom), "--store", str(tmp_path / "store"), tmp_path=tmp_path)
    assert done.returncode == 1, done.stderr  # drift
    doc = json.loads(done.stdout)
    by_unit = {e["unit"]: e for e in doc["hosts"]}
    template = by_unit["inference/Deployment/sglang-qwen/sglang"]
    old = by_unit["inference/Pod/sglang-qwen-5d8f7c9b4-old01/sglang"]
    new = by_unit["inference/Pod/sglang-qwen-6b7c8d9e0-new01/sglang"]
    assert len(by_unit) == 4  # the metrics-exporter sidecar and the init container are no server
    assert template["status"] == "drift" and template["baseline"] == "seed70"
    steps = [f for f in template["comparison"]["findings"] if f["key"] == "speculative_num_steps"]
    assert [(f["baseline"], f["current"]) for f in steps] == [(3, 1)]
    # the live copy against its template: the Pod still on the old ReplicaSet runs 3 steps
    assert old["status"] == "drift" and old["baseline"] == "template inference/Deployment/sglang-qwen/sglang"
    assert [(f["baseline"], f["current"]) for f in old["comparison"]["findings"]
            if f["key"] == "speculative_num_steps"] == [(1, 3)]
    assert new["status"] == "clean"
    # the two Pods left on the old ReplicaSet drift the same way from the same template: one group
    [group] = [g for g in doc["drift_groups"] if g["key"] == "speculative_num_steps" and len(g["hosts"]) > 1]
    assert sorted(h["unit"] for h in group["hosts"]) == [f"inference/Pod/sglang-qwen-5d8f7c9b4-old0{i}/sglang"
                                                         for i in (1, 2)]
    assert template["namespace"] == new["namespace"] == "inference"
    assert new["workload"] == "Deployment/sglang-qwen" and new["container"] == "sglang"
    text = prom.read_text()
    assert ('driftwatch_drift{report="dw",host="prod-k8s",unit="inference/Pod/sglang-qwen-6b7c8d9e0-new01/sglang",'
            'baseline="template inference/Deployment/sglang-qwen/sglang",namespace="inference",'
            'workload="Deployment/sglang-qwen",container="sglang"} 0') in text
    assert 'namespace=' not in text.split("driftwatch_hosts{")[1]  # run-level series carry none
    assert any((tmp_path / "store").rglob("*")), "the units read were stored"
    assert "lab-token-not-a-secret" not in done.stdout + done.stderr + text
    # the same units by `snapshot`, then the history of the host: one line per unit, as for units
    snapped = _run("snapshot", "--inventory", inventory, "--store", str(tmp_path / "store"), tmp_path=tmp_path)
    assert snapped.returncode == 0, snapped.stderr
    lines = sorted(line.split("\t")[:3] for line in snapped.stdout.splitlines())
    assert lines == sorted([["prod-k8s", unit, "ok"] for unit in by_unit])
    history = _run("history", "prod-k8s", "--store", str(tmp_path / "store"), "--format", "json",
                   tmp_path=tmp_path)
    assert history.returncode == 0, history.stderr
    kept = [u for u in json.loads(history.stdout)["units"] if u["host"] == "prod-k8s"]
    assert sorted(u["unit"] for u in kept) == sorted(by_unit) and all(u["snapshots"] >= 1 for u in kept)
    # inventory-wide: the entry's workloads and Pods, as stored, each against the entry's baseline
    whole = _run("history", "--inventory", inventory, "--store", str(tmp_path / "store"), "--baselines-dir",
                 str(tmp_path / "b"), "--format", "json", tmp_path=tmp_path)
    assert whole.returncode == 0, whole.stderr
    units = {u["unit"]: u for u in json.loads(whole.stdout)["units"]}
    assert sorted(units) == sorted(by_unit) and all(u["host"] == "prod-k8s" for u in units.values())
    assert [(f["baseline"], f["current"]) for f in units["inference/Deployment/sglang-qwen/sglang"]["findings"]
            if f["key"] == "speculative_num_steps"] == [(3, 1)]
    # (in a history every unit of the entry is judged against the entry's baseline, a Pod included)
    assert not [f for f in units["inference/Pod/sglang-qwen-5d8f7c9b4-old01/sglang"]["findings"]
                if f["key"] == "speculative_num_steps"]


def test_kubectl_refusing_is_one_line_per_entry_and_limit_narrows(kube, tmp_path):
    inventory = _inventory(tmp_path, **{
        "prod-k8s": {"kubernetes": {"context": "lab", "namespace": "inference"}, "baseline": "none"},
        "gone-k8s": {"kubernetes": {"context": "no-such-context"}, "baseline": "none"}})
    done = _run("report", "--inventory", inventory, "--format", "json", "--no-store", tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "gone-k8s" in line]
    assert len(errors) == 1 and "no-such-context" in errors[0] and "Traceback" not in done.stderr
    doc = json.loads(done.stdout)
    assert {e["host"] for e in doc["hosts"]} == {"prod-k8s", "gone-k8s"}
    kube.requests.clear()
    limited = _run("report", "--inventory", inventory, "--limit", "prod-k8s", "--format", "json", "--no-store",
                   tmp_path=tmp_path)
    assert limited.returncode == 1, limited.stderr
    entries = json.loads(limited.stdout)["hosts"]
    assert {e["host"] for e in entries} == {"prod-k8s"}
    # `baseline: none`: the template is read, not judged; a Pod is still judged against its template
    assert {e["unit"].split("/")[1]: e["status"] for e in entries if e["status"] != "drift"} == \
        {"Deployment": "no_baseline", "Pod": "clean"}
    assert [e["unit"] for e in entries if e["status"] == "drift"] == [
        f"inference/Pod/sglang-qwen-5d8f7c9b4-old0{i}/sglang" for i in (1, 2)]


def _lws_pod(tmp: Path, lws: dict, role: str, index: int, tp: str = "2") -> list[dict]:
    """A LeaderWorkerSet's Pod as its controller makes it: the role's template, the LWS labels and the
    LWS_* variables with this Pod's values (kubernetes-sigs/lws `pkg/utils/pod` AddLWSVariables)."""
    template = lws["spec"]["leaderWorkerTemplate"][f"{role}Template"]
    spec = json.loads(json.dumps(template["spec"]))
    for c in spec["containers"]:
        c["env"] = c.get("env", []) + [{"name": "LWS_LEADER_ADDRESS", "value": "sglang-0.sglang.default"},
                                       {"name": "LWS_GROUP_SIZE", "value": "2"},
                                       {"name": "LWS_WORKER_INDEX", "value": str(index)}]
        c["command"] = [tp if prev == "--tp" else w for prev, w in zip([""] + c["command"][:-1], c["command"], strict=True)]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "sglang-0" if index == 0 else f"sglang-0-{index}", "namespace": "default",
                        "labels": {**template.get("metadata", {}).get("labels", {}),
                                   "leaderworkerset.sigs.k8s.io/name": "sglang",
                                   "leaderworkerset.sigs.k8s.io/worker-index": str(index)}},
           "spec": spec}
    path = tmp / f"lws-pod-{index}.yaml"
    path.write_text(yaml.safe_dump(pod))
    return decoded(path)


def test_leaderworkerset_pods_are_judged_against_their_role_with_their_own_lws_values(tmp_path, monkeypatch):
    fixture = SEED.parent / "lws-sglang.yaml"
    lws = [o for o in decoded(fixture) if o["kind"] == "LeaderWorkerSet"]
    objects = lws + _lws_pod(tmp_path, lws[0], "leader", 0) + _lws_pod(tmp_path, lws[0], "worker", 1) \
        + _lws_pod(tmp_path, lws[0], "worker", 2, tp="4")
    lab = KubeLab(tmp_path, objects, lws=True)
    try:
        for key, value in lab.env().items():
            monkeypatch.setenv(key, value)
        inventory = _inventory(tmp_path, multi={"kubernetes": {"context": "lab", "namespace": "default"},
                                                "baseline": "none"})
        done = _run("report", "--inventory", inventory, "--format", "json", "--no-store", tmp_path=tmp_path)
    finally:
        lab.close()
    assert done.returncode == 1, done.stderr
    by_unit = {e["unit"]: e for e in json.loads(done.stdout)["hosts"]}
    assert by_unit["default/Pod/sglang-0/sglang-leader"]["baseline"] == \
        "template default/LeaderWorkerSet/sglang/leader/sglang-leader"
    # each Pod's own LWS_WORKER_INDEX / GROUP_SIZE / LEADER_ADDRESS fill its template: no drift from them
    assert by_unit["default/Pod/sglang-0/sglang-leader"]["status"] == "clean"
    assert by_unit["default/Pod/sglang-0-1/sglang-worker"]["status"] == "clean"
    changed = by_unit["default/Pod/sglang-0-2/sglang-worker"]
    assert changed["status"] == "drift" and changed["workload"] == "LeaderWorkerSet/sglang"
    assert [(f["key"], f["baseline"], f["current"]) for f in changed["comparison"]["findings"]] == \
        [("tp_size", 2, 4)]
    assert {by_unit[u]["status"] for u in by_unit if "/LeaderWorkerSet/" in u} == {"no_baseline"}


def test_rbac_refusal_and_a_missing_kubectl_are_one_line(kube, tmp_path, monkeypatch):
    kube.forbidden.add("pods")
    answer = kubectl_get(KubernetesSource("lab", "inference"))
    assert answer.items == [] and answer.status == "error"
    assert answer.error is not None and "forbidden" in answer.error and "\n" not in answer.error
    monkeypatch.setenv("PATH", str(tmp_path))  # no kubectl on it
    missing = kubectl_get(KubernetesSource("lab", "inference"))
    assert missing.error is not None and "kubectl is not on PATH" in missing.error
