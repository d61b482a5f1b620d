"""Live containers read with `podman inspect` over SSH (collect/containers.py, parse/inspect.py):
containers made with `podman create` (never started) on this machine, read through the lab's real
OpenSSH server, typed by the engine's parser like a unit's `docker run`."""
from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from driftwatch.collect.containers import inspect_containers
from driftwatch.collect.inventory import HostTarget
from driftwatch.errors import InputError
from driftwatch.parse.inspect import read_inspect
from driftwatch.snapshots.container import snapshot_from_container

PODMAN = shutil.which("podman")


def target(server) -> HostTarget:
    return HostTarget(name=server.address, address=server.address, user="root", port=server.port, units=())


def sglang_image(tmp_path_factory) -> str:
    """A local image tagged as SGLang 0.5.12 with SGLang's ENTRYPOINT, imported from an empty tar (nothing
    pulled, nothing can run); the test is skipped where podman is missing or cannot import. The caller
    removes it (`podman rmi -f`)."""
    if PODMAN is None:
        pytest.skip("podman is not installed")
    image = f"localhost/lmsysorg/sglang:v0.5.12-dwtest{uuid.uuid4().hex[:8]}"  # the tag names SGLang 0.5.12
    tar = Path(tmp_path_factory.mktemp("img")) / "empty.tar"
    subprocess.run(["tar", "cf", str(tar), "-T", "/dev/null"], check=True)
    made = subprocess.run([PODMAN, "import", "--change", 'ENTRYPOINT ["python3", "-m", "sglang.launch_server"]',
                           str(tar), image], capture_output=True, text=True, timeout=120)
    if made.returncode != 0:
        pytest.skip(f"podman cannot import an image here: {made.stderr.strip()[-200:]}")
    return image


@pytest.fixture(scope="module")
def engine_container(tmp_path_factory):
    """`podman create` of an SGLang launch in a local image (an empty tar with ENTRYPOINT and CMD:
    nothing pulled, nothing started); removed afterwards."""
    image = sglang_image(tmp_path_factory)
    name = f"dw-sglang-{uuid.uuid4().hex[:8]}"
    created = subprocess.run([PODMAN, "create", "--name", name, "-e", "NCCL_DEBUG=INFO",
                              "-e", "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123",
                              image, "--model-path", "/models/Qwen3.6-27B", "--tp-size", "2",
                              "--speculative-num-steps", "3"], capture_output=True, text=True, timeout=120)
    if created.returncode != 0:
        subprocess.run([PODMAN, "rmi", "-f", image], capture_output=True, timeout=120)
        pytest.skip(f"podman cannot create a container here: {created.stderr.strip()[-200:]}")
    yield name, image
    subprocess.run([PODMAN, "rm", "-f", name], capture_output=True, timeout=120)
    subprocess.run([PODMAN, "rmi", "-f", image], capture_output=True, timeout=120)


def test_podman_container_read_over_ssh(loopback, known_hosts, options, engine_container):
    name, image = engine_container
    [answer] = inspect_containers(target(loopback), [name], options(known_hosts(loopback)), "podman")
    assert answer.status == "ok", answer.error
    [spec] = read_inspect(answer.text or "", answer.host, "podman")
    assert spec.argv == ("python3", "-m", "sglang.launch_server", "--model-path", "/models/Qwen3.6-27B",
                         "--tp-size", "2", "--speculative-num-steps", "3")
    assert spec.image == image and spec.environment()["NCCL_DEBUG"] == "INFO"
    snap = snapshot_from_container(spec)
    assert snap.launcher.engine == "sglang" and snap.launcher.wrappers == ["podman"]
    assert {k: v.value for k, v in snap.engine.explicit().items()}["speculative_num_steps"] == 3
    assert snap.engine.version == "0.5.12"  # the image tag names the release
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in str(snap.environment) + str(snap.launcher.env)


def test_a_missing_container_is_said_not_raised(loopback, known_hosts, options, engine_container):
    [answer] = inspect_containers(target(loopback), ["dw-no-such-container"], options(known_hosts(loopback)))
    assert answer.text is None and answer.status == "container not found", answer


def test_a_bad_name_is_refused_before_anything_is_sent(loopback, known_hosts, options):
    with pytest.raises(InputError, match="not a container name"):
        inspect_containers(target(loopback), ["x; reboot"], options(known_hosts(loopback)))


def test_show_and_compare_a_running_container_from_the_command_line(lab, loopback, known_hosts, engine_container,
                                                                     tmp_path):
    import json
    import sys
    name, _ = engine_container
    dw = str(Path(sys.executable).with_name("driftwatch"))
    ssh = ["--host", f"root@{loopback.address}:{loopback.port}", "--container", name,
           "--known-hosts", known_hosts(loopback), "-i", lab.client_key, "--ssh-config", "none"]
    shown = subprocess.run([dw, "show", *ssh, "--format", "json"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["container"]["argv"][:3] == ["python3", "-m", "sglang.launch_server"]
    assert doc["host"] == f"{loopback.address}:{loopback.port}"
    base = Path(__file__).resolve().parents[1] / "fixtures" / "manifests" / "seed-000" / "base" / "deployment.yaml"
    saved = subprocess.run([dw, "baseline", "save", "template", "--manifest", str(base), "--baselines-dir",
                            str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert saved.returncode == 0, saved.stderr
    compared = subprocess.run([dw, "compare", "--baseline", "template", "--baselines-dir", str(tmp_path), *ssh,
                               "--format", "json"], capture_output=True, text=True, timeout=120)
    assert compared.returncode == 1, compared.stderr  # the Deployment's flags against the podman container's
    keys = [f["key"] for f in json.loads(compared.stdout)["findings"]]
    assert "model_path" in keys and "speculative_num_steps" not in keys  # 3 steps on both sides
    missing = subprocess.run([dw, "show", *ssh[:2], "--container", "dw-no-such-container", *ssh[4:]],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no such container" in missing.stderr and "Traceback" not in missing.stderr
