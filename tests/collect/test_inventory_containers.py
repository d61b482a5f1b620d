"""Inventory `containers:` entries in a fleet report: podman-created containers (never started: the
sandbox's crun cannot set RLIMIT_NOFILE, so no container runs here) read with the real `podman
inspect` through the lab's real OpenSSH server, judged against a baseline saved from another kind
(the seed-000 Deployment), with the Prometheus `container` label, `--limit`, and one line per
container or host that cannot be read."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from test_collect_containers import PODMAN, engine_container  # noqa: F401 - the fixture, shared

from driftwatch.collect.containers import HostContainers, inspect_containers
from driftwatch.collect.inventory import HostTarget, load_inventory
from driftwatch.collect.sshoptions import SSHOptions
from driftwatch.errors import InputError
from driftwatch.run.live_containers import host_reads
from driftwatch.run.reading import CollectOptions
from driftwatch.run.targets import TargetRequest, live_targets, resolve_targets

DW = str(Path(sys.executable).with_name("driftwatch"))
SEED = Path(__file__).resolve().parents[1] / "fixtures" / "manifests" / "seed-000" / "base" / "deployment.yaml"


@pytest.fixture
def sidecar(engine_container):  # noqa: F811 - the fixture imported above
    """A second container of the same image whose command is no engine (`sleep`)."""
    _, image = engine_container
    name = f"dw-side-{uuid.uuid4().hex[:8]}"
    made = subprocess.run([PODMAN, "create", "--name", name, "--entrypoint", '["sleep", "600"]', image],
                          capture_output=True, text=True, timeout=120)
    if made.returncode != 0:
        pytest.skip(f"podman cannot create a container here: {made.stderr.strip()[-200:]}")
    yield name
    subprocess.run([PODMAN, "rm", "-f", name], capture_output=True, timeout=120)


def _inventory(tmp_path: Path, hosts: dict) -> str:
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"hosts": hosts}))
    return str(path)


def _ssh_args(lab, known: str) -> list[str]:
    return ["--known-hosts", known, "-i", lab.client_key, "--ssh-config", "none"]


def test_inventory_containers_are_targets_with_their_own_baselines(tmp_path):
    inventory = _inventory(tmp_path, {
        "gpu1": {"units": ["sglang.service"], "containers": {"vllm-a": "vl-32b", "vllm-b": None},
                 "baseline": "host-wide"},
        "gpu2": {"containers": "auto", "baseline": "host-wide"},
        "gpu3": {"containers": ["x; reboot"]}})
    with pytest.raises(InputError, match="not a container name"):
        load_inventory(inventory)
    inventory = _inventory(tmp_path, {
        "gpu1": {"units": ["sglang.service"], "containers": {"vllm-a": "vl-32b", "vllm-b": None},
                 "baseline": "host-wide"},
        "gpu2": {"containers": "auto", "baseline": "host-wide"}})
    got = [(t.kind, t.host, t.unit, t.baseline, t.baseline_from)
           for t in resolve_targets(TargetRequest(inventory=inventory))]
    assert got == [("ssh", "gpu1", "sglang.service", "host-wide", "host"),
                   ("container", "gpu1", "vllm-a", "vl-32b", "unit"),
                   ("container", "gpu1", "vllm-b", None, "none"),
                   ("container", "gpu2", None, "host-wide", "host")]
    limited = resolve_targets(TargetRequest(inventory=inventory, limit="gpu2"))
    assert [(t.kind, t.host) for t in limited] == [("container", "gpu2")]
    # --unit names a systemd unit: the containers are not read then
    assert [t.kind for t in resolve_targets(TargetRequest(inventory=inventory, unit="x.service"))] == ["ssh", "ssh"]


def test_report_reads_inventory_containers_over_ssh(lab, loopback, known_hosts, engine_container,  # noqa: F811
                                                    tmp_path):
    name, _ = engine_container
    known = known_hosts(loopback)
    saved = subprocess.run([DW, "baseline", "save", "template", "--manifest", str(SEED), "--baselines-dir",
                            str(tmp_path / "b")], capture_output=True, text=True, timeout=120)
    assert saved.returncode == 0, saved.stderr
    inventory = _inventory(tmp_path, {
        "gpu-a": {"address": loopback.address, "port": loopback.port, "user": "root", "containers": [name],
                  "baseline": "template"},
        "gpu-b": {"address": loopback.address, "port": loopback.port, "user": "root",
                  "containers": ["dw-no-such-container"], "baseline": "template"}})
    prom = tmp_path / "dw.prom"
    done = subprocess.run([DW, "report", "--inventory", inventory, "--baselines-dir", str(tmp_path / "b"),
                           "--format", "json", "--prometheus", str(prom), "--store", str(tmp_path / "store"),
                           *_ssh_args(lab, known)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr  # one container is missing: trouble, said in one line
    doc = json.loads(done.stdout)
    by_host = {e["host"]: e for e in doc["hosts"]}
    found = by_host["gpu-a"]
    assert found["unit"] == name and found["status"] == "drift" and found["container"] == name
    keys = [f["key"] for f in found["comparison"]["findings"]]
    # a Deployment's baseline against a podman container: the engine flags compare (3 steps on both sides)
    assert "model_path" in keys and "speculative_num_steps" not in keys
    missing = by_host["gpu-b"]
    assert missing["status"] == "error" and missing["failure"] == "container not found"
    lines = [line for line in done.stderr.splitlines() if "dw-no-such-container" in line]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f'host="gpu-a",unit="{name}",baseline="template",container="{name}"' in prom.read_text()
    assert any((tmp_path / "store").rglob("*")), "the container read was stored"
    limited = subprocess.run([DW, "report", "--inventory", inventory, "--limit", "gpu-a", "--baselines-dir",
                              str(tmp_path / "b"), "--format", "json", "--no-store", *_ssh_args(lab, known)],
                             capture_output=True, text=True, timeout=300)
    assert limited.returncode == 1, limited.stderr
    assert [e["host"] for e in json.loads(limited.stdout)["hosts"]] == ["gpu-a"]
    # typed: `report --host H --container NAME`, the same container, the same findings
    typed = subprocess.run([DW, "report", "--host", f"root@{loopback.address}:{loopback.port}", "--container", name,
                            "--baseline", "template", "--baselines-dir", str(tmp_path / "b"), "--format", "json",
                            "--no-store", *_ssh_args(lab, known)], capture_output=True, text=True, timeout=300)
    assert typed.returncode == 1, typed.stderr
    [entry] = json.loads(typed.stdout)["hosts"]
    assert entry["host"] == f"{loopback.address}:{loopback.port}" and entry["unit"] == name
    assert [f["key"] for f in entry["comparison"]["findings"]] == keys


def test_a_down_host_is_one_line_for_its_containers(lab, known_hosts, loopback, tmp_path):
    import socket
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    inventory = _inventory(tmp_path, {"down": {"address": "127.0.0.1", "port": port, "user": "root",
                                               "containers": ["a", "b"], "baseline": "none"}})
    done = subprocess.run([DW, "report", "--inventory", inventory, "--format", "json", "--no-store",
                           "--connect-timeout", "3", *_ssh_args(lab, known_hosts(loopback))],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    entries = json.loads(done.stdout)["hosts"]
    assert [(e["unit"], e["failure"]) for e in entries] == [("a", "unreachable"), ("b", "unreachable")]


def test_auto_with_no_running_engine_container_says_so(lab, loopback, known_hosts, tmp_path):
    inventory = _inventory(tmp_path, {"gpu-a": {"address": loopback.address, "port": loopback.port,
                                                "user": "root", "containers": "auto", "baseline": "none"}})
    done = subprocess.run([DW, "report", "--inventory", inventory, "--format", "json", "--no-store",
                           *_ssh_args(lab, known_hosts(loopback))], capture_output=True, text=True, timeout=120)
    running = subprocess.run([PODMAN or "podman", "ps", "--format", "{{.Names}}"], capture_output=True, text=True,
                             timeout=60).stdout.split()
    if running:
        pytest.skip(f"containers run on this machine ({', '.join(running[:3])}): `auto` may find a server")
    assert done.returncode == 2, done.stderr
    [entry] = json.loads(done.stdout)["hosts"]
    assert entry["unit"] == "auto" and "no running container starts an engine" in entry["error"]


def test_auto_keeps_the_engine_containers_of_real_inspect_answers(loopback, known_hosts, options,
                                                                  engine_container, sidecar):  # noqa: F811
    """`auto`'s choice, on what podman answered over SSH for both containers (`podman ps` would list
    them if they could run here)."""
    name, _ = engine_container
    host = HostTarget(name="gpu-a", address=loopback.address, user="root", port=loopback.port, containers=["auto"])
    ssh: SSHOptions = options(known_hosts(loopback))
    answers = inspect_containers(host, [name, sidecar], ssh, "podman", label="gpu-a")
    assert all(a.text for a in answers), [a.error for a in answers]
    [target] = live_targets(host, "gpu-a", TargetRequest())
    assert target.kind == "container" and target.unit is None  # `auto`
    reads = host_reads([target], HostContainers("gpu-a", "podman", answers, [name, sidecar]), CollectOptions(ssh))
    assert [(r.unit, r.snapshot.launcher.engine if r.snapshot else r.error) for r in reads] == [(name, "sglang")]


def test_restore_over_an_inventory_plans_units_only(tmp_path):
    """An inventory's containers and workloads are never planned as drop-ins (their fix is a patch of
    their manifest); an inventory of nothing else says so in one line."""
    from driftwatch.run.restore import RestoreRequest, _restore_targets
    inventory = _inventory(tmp_path, {"gpu1": {"units": ["sglang.service"], "containers": ["vllm-a"],
                                               "baseline": "b"},
                                      "k8s": {"kubernetes": {"namespace": "llm"}, "baseline": "b"}})
    planned = _restore_targets(RestoreRequest(inventory=inventory))
    assert [(t.kind, t.host, t.unit) for t in planned] == [("ssh", "gpu1", "sglang.service")]
    only = _inventory(tmp_path, {"k8s": {"kubernetes": {"namespace": "llm"}, "baseline": "b"}})
    with pytest.raises(InputError, match="patch of their manifest"):
        _restore_targets(RestoreRequest(inventory=only))


def test_one_unit_commands_name_one_container_of_an_inventory_entry(tmp_path):
    from driftwatch.run.targets import one_of
    inventory = _inventory(tmp_path, {"gpu1": {"containers": ["vllm-a"]},
                                      "gpu2": {"units": ["sglang.service"], "containers": ["vllm-a"]},
                                      "gpu3": {"containers": "auto"}, "k8s": {"kubernetes": {"namespace": "llm"}}})
    one = one_of(TargetRequest(hosts=("gpu1",), config_inventory=inventory))
    assert one is not None and (one.kind, one.host, one.unit) == ("container", "gpu1", "vllm-a")
    with pytest.raises(InputError, match=r"needs --unit \(or --container\).*sglang.service, container vllm-a"):
        one_of(TargetRequest(hosts=("gpu2",), config_inventory=inventory))
    for host, what in (("gpu3", "containers: auto"), ("k8s", "Kubernetes workloads")):
        with pytest.raises(InputError, match=what):
            one_of(TargetRequest(hosts=(host,), config_inventory=inventory))


def test_ansible_inventories_name_containers_and_kubernetes(tmp_path):
    path = tmp_path / "hosts.ini"
    path.write_text("[gpu]\ngpu1 ansible_host=10.0.0.1 driftwatch_containers='[\"vllm-a\"]' driftwatch_baseline=b\n"
                    "[k8s]\nprod driftwatch_kubernetes=\"{'namespace': 'llm', 'selector': 'app=vllm'}\"\n"
                    "[gpu:vars]\ndriftwatch_units=sglang.service\n")
    gpu1, prod = load_inventory(str(path))
    assert (gpu1.containers, gpu1.units) == (["vllm-a"], ["sglang.service"])
    assert prod.kubernetes is not None and (prod.kubernetes.namespace, prod.kubernetes.selector) == ("llm", "app=vllm")
    got = [(t.kind, t.host, t.unit) for t in resolve_targets(TargetRequest(inventory=str(path)))]
    assert got == [("ssh", "gpu1", "sglang.service"), ("container", "gpu1", "vllm-a"), ("kubernetes", "prod", None)]
