"""Issue 36 item 5: a baseline saved from any target kind judges any other kind. The same seed-000
server written four ways — a systemd unit (examples/sglang-qwen-70toks.service), a Deployment
(tests/fixtures/manifests/seed-000), a Compose file and a podman-created container read with
`podman inspect` through the lab's sshd — each saved as a baseline (written and read back as a file)
and compared with every other, both ways: the engine flags compare (no flag differs), where it runs
is at most one launcher finding, and the values change (MTP 3 steps -> 1) on any kind is the one
flag finding against a baseline of any other kind."""
from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from test_collect_containers import PODMAN, sglang_image, target

from driftwatch.collect.containers import inspect_containers
from driftwatch.findings.judging import load_judging
from driftwatch.parse.inspect import read_inspect
from driftwatch.run.manifest import ManifestRequest, snapshot_from_manifests
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import load_baseline, save_baseline
from driftwatch.snapshots.container import snapshot_from_container

REPO = Path(__file__).resolve().parents[2]
UNITS = {"3": REPO / "examples" / "sglang-qwen-70toks.service"}
DEPLOYMENT = REPO / "tests" / "fixtures" / "manifests" / "seed-000" / "base" / "deployment.yaml"


def _argv(steps: str) -> list[str]:
    """The seed-000 server's flags as its unit file gives them (the Deployment's, MODEL_DIR expanded)."""
    return ["--model-path", "/root/models/Qwen3.6-27B", "--port", "30000", "--host", "0.0.0.0", "--tp-size", "2",
            "--mem-fraction-static", "0.88", "--context-length", "131072", "--max-running-requests", "16",
            "--mamba-full-memory-ratio", "0.5", "--mamba-scheduler-strategy", "extra_buffer", "--reasoning-parser",
            "qwen3", "--tool-call-parser", "qwen3_coder", "--speculative-algorithm", "NEXTN",
            "--speculative-num-steps", steps, "--speculative-eagle-topk", "1"]


def _unit(tmp: Path, steps: str):
    text = UNITS["3"].read_text().replace("--speculative-num-steps 3", f"--speculative-num-steps {steps}")
    path = tmp / f"sglang-qwen-{steps}.service"
    path.write_text(text)
    return snapshot_from_unit_file(str(path))


def _deployment(tmp: Path, steps: str, image: str):
    path = tmp / f"deployment-{steps}.yaml"
    path.write_text(DEPLOYMENT.read_text().replace('- --speculative-num-steps\n            - "3"',
                                                   f'- --speculative-num-steps\n            - "{steps}"')
                    .replace("image: lmsysorg/sglang:v0.5.12", f"image: {image}"))
    return snapshot_from_manifests(ManifestRequest((str(path),), use_podman=False))


def _compose(tmp: Path, steps: str, image: str):
    import json
    path = tmp / f"compose-{steps}.yaml"
    path.write_text(f"services:\n  sglang:\n    image: {image}\n"
                    '    entrypoint: ["python3", "-m", "sglang.launch_server"]\n'
                    f"    command: {json.dumps(_argv(steps))}\n")
    return snapshot_from_manifests(ManifestRequest((str(path),), environ={}, use_podman=False))


@pytest.fixture(scope="module")
def podman_image(tmp_path_factory):
    """A local image tagged as SGLang's release (an empty tar: nothing pulled, nothing runs)."""
    image = sglang_image(tmp_path_factory)
    names: list[str] = []
    yield image, names
    for name in names:
        subprocess.run([PODMAN, "rm", "-f", name], capture_output=True, timeout=120)
    subprocess.run([PODMAN, "rmi", "-f", image], capture_output=True, timeout=120)


@pytest.fixture
def kinds(tmp_path, podman_image, loopback, known_hosts, options):
    """steps -> {kind: Snapshot} for the four kinds."""
    image, names = podman_image
    ssh = options(known_hosts(loopback))

    def container(steps: str):
        name = f"dw-xk-{uuid.uuid4().hex[:8]}"
        names.append(name)
        made = subprocess.run([PODMAN, "create", "--name", name, image, *_argv(steps)], capture_output=True,
                              text=True, timeout=120)
        assert made.returncode == 0, made.stderr
        [answer] = inspect_containers(target(loopback), [name], ssh, "podman")
        assert answer.text, answer.error
        return snapshot_from_container(read_inspect(answer.text, answer.host, "podman")[0])

    return {steps: {"unit": _unit(tmp_path, steps), "deployment": _deployment(tmp_path, steps, image),
                    "compose": _compose(tmp_path, steps, image), "container": container(steps)} for steps in ("3", "1")}


def _flag_keys(result) -> list[str]:
    return [f.difference.key for f in result.findings
            if not f.difference.key.startswith(("launcher.", "env.", "runtime.", "unit."))]


def test_baselines_from_every_kind_judge_every_other_kind_both_ways(kinds, tmp_path):
    judging = load_judging()
    saved = {}
    for kind, snap in kinds["3"].items():  # saved and read back, as `baseline save` and `compare` do
        save_baseline(tmp_path, f"from-{kind}", snap, {}, None, force=False)
        saved[kind] = load_baseline(f"from-{kind}", tmp_path)
    assert {s.snapshot.launcher.engine for s in saved.values()} == {"sglang"}
    pairs = 0
    for base_kind, base in saved.items():
        for kind in kinds["3"]:
            same = judging.compare(base, kinds["3"][kind])
            assert _flag_keys(same) == [], (base_kind, kind)  # the engine flags compare across kinds
            launcher = [f.difference.key for f in same.findings if f.difference.key.startswith("launcher.")]
            assert len(launcher) <= 1, (base_kind, kind, launcher)  # where it runs: at most one finding
            if kind != base_kind and {kind, base_kind} & {"unit"}:
                assert launcher == ["launcher.runtime"], (base_kind, kind)  # a venv against an image
            changed = judging.compare(base, kinds["1"][kind])
            steps = [(f.difference.baseline, f.difference.current) for f in changed.findings
                     if f.difference.key == "speculative_num_steps"]
            assert _flag_keys(changed) == ["speculative_num_steps"] and steps == [(3, 1)], (base_kind, kind)
            pairs += 1
    assert pairs == 16


def test_docker_hub_names_are_one_image_other_registries_differ(tmp_path):
    """`podman inspect` names a pulled image `docker.io/lmsysorg/sglang:…`; a manifest `lmsysorg/sglang:…`."""
    from driftwatch.snapshots.baseline import Baseline
    judging = load_judging()
    base = Baseline("hub", _compose(tmp_path, "3", "lmsysorg/sglang:v0.5.12"))
    (tmp_path / "b").mkdir()
    same = judging.compare(base, _compose(tmp_path / "b", "3", "docker.io/lmsysorg/sglang:v0.5.12"))
    assert [f.difference.key for f in same.findings] == []
    (tmp_path / "c").mkdir()
    other = judging.compare(base, _compose(tmp_path / "c", "3", "ghcr.io/lmsysorg/sglang:v0.5.12"))
    assert [f.difference.key for f in other.findings] == ["launcher.image"]
