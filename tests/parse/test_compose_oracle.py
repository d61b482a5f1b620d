"""Compose files read as a real Compose implementation reads them: every interpolation form, the
`.env` file and its precedence, string and list commands, entrypoints and the environment forms,
each checked against `podman-compose config` (podman-compose 1.x, a Compose implementation of its
own) on the same file. Where podman-compose departs from the Compose specification, the case says
so and which side driftwatch keeps."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from driftwatch.errors import InputError
from driftwatch.run.manifest import ManifestRequest, read_manifests

PODMAN_COMPOSE = shutil.which("podman-compose") or shutil.which("podman-compose", path=os.path.dirname(sys.executable))
pytestmark = pytest.mark.skipif(PODMAN_COMPOSE is None, reason="podman-compose is not installed (pip install podman-compose)")

SCRUBBED = ("A", "B", "MODEL", "STEPS", "PORT", "TAG")


def _env(environ: dict) -> dict:
    """This process's environment without the names the cases use, plus the case's own."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(environ)
    return env


def podman_compose_config(tmp_path: Path, doc: dict, environ: dict) -> dict | str:
    """The service as `podman-compose config` resolves it, or its error text."""
    (tmp_path / "compose.yaml").write_text(yaml.safe_dump(doc))
    done = subprocess.run([PODMAN_COMPOSE, "-f", "compose.yaml", "config"], cwd=tmp_path, capture_output=True,
                          text=True, env=_env(environ), timeout=60)
    if done.returncode != 0:
        return done.stderr
    return yaml.safe_load(done.stdout)["services"]["s"]


def ours(tmp_path: Path, environ: dict):
    [spec] = read_manifests(ManifestRequest((str(tmp_path / "compose.yaml"),), environ=environ,
                                            use_podman=False)).containers
    return spec


INTERPOLATION = [
    ("${A}", {"A": "1"}), ("$A/x", {"A": "1"}), ("${A:-d}", {}), ("${A:-d}", {"A": ""}), ("${A-d}", {"A": ""}),
    ("${A-d}", {}), ("${A:+alt}", {"A": "1"}), ("${A:+alt}", {"A": ""}), ("${A+alt}", {"A": ""}), ("$$A", {"A": "1"}),
    ("$${A}", {"A": "1"}), ("${A:-${B}}", {"B": "b"}), ("100$", {}), ("${A?x}", {"A": ""}), ("${A:?x}", {"A": "v"}),
    ("${A}", {}),
]


@pytest.mark.parametrize("text,environ", INTERPOLATION)
def test_interpolation_matches_podman_compose(tmp_path, text, environ):
    doc = {"services": {"s": {"image": "x", "entrypoint": ["python3", "-m", "sglang.launch_server"],
                              "command": ["--served-model-name", text]}}}
    resolved = podman_compose_config(tmp_path, doc, environ)
    assert isinstance(resolved, dict), resolved
    assert ours(tmp_path, environ).argv == tuple(resolved["entrypoint"] + resolved["command"])


@pytest.mark.parametrize("text,environ", [("${A?need A}", {}), ("${A:?need A}", {"A": ""})])
def test_a_required_variable_fails_both(tmp_path, text, environ):
    doc = {"services": {"s": {"image": "x", "command": ["a", text]}}}
    assert "need A" in podman_compose_config(tmp_path, doc, environ)
    with pytest.raises(InputError, match="need A"):
        ours(tmp_path, environ)


def test_dotenv_file_and_the_process_environment_win_in_the_same_order(tmp_path):
    (tmp_path / ".env").write_text("STEPS=3\nTAG=v0.5.12\nPORT=30000\n")
    doc = {"services": {"s": {"image": "lmsysorg/sglang:${TAG}",
                              "entrypoint": "python3 -m sglang.launch_server",
                              "command": "--model-path m --speculative-num-steps ${STEPS} --port ${PORT}"}}}
    resolved = podman_compose_config(tmp_path, doc, {"STEPS": "1"})
    assert isinstance(resolved, dict), resolved
    spec = ours(tmp_path, {"STEPS": "1"})
    assert spec.image == resolved["image"] == "lmsysorg/sglang:v0.5.12"
    assert spec.argv == tuple(resolved["entrypoint"] + resolved["command"])
    assert spec.argv[-4:] == ("--speculative-num-steps", "1", "--port", "30000")


def test_string_forms_split_into_the_same_words(tmp_path):
    doc = {"services": {"s": {"image": "x", "entrypoint": "python3 -m sglang.launch_server",
                              "command": "--model-path \"/models/My Model\" --served-model-name 'a b' --x=${A}"}}}
    resolved = podman_compose_config(tmp_path, doc, {"A": "1"})
    assert isinstance(resolved, dict), resolved
    assert ours(tmp_path, {"A": "1"}).argv == tuple(resolved["entrypoint"] + resolved["command"])


def test_environment_forms_resolve_to_the_same_values(tmp_path):
    doc = {"services": {"s": {"image": "x", "command": ["x"],
                              "environment": {"N": 1, "W": "two words", "R": "${A}-$$HOME", "T": True}}}}
    resolved = podman_compose_config(tmp_path, doc, {"A": "a"})
    assert isinstance(resolved, dict), resolved
    assert ours(tmp_path, {"A": "a"}).environment() == {k: str(v).lower() if isinstance(v, bool) else str(v)
                                                        for k, v in resolved["environment"].items()}


def test_an_interpolated_empty_word_at_the_end_of_a_string_command(tmp_path):
    """Where podman-compose departs from the specification: the file is interpolated first and a
    string command split into words afterwards with shell rules, so `--f ${E-d}` with E set and
    empty ends in `--f`; podman-compose 1.x keeps an empty last word. driftwatch keeps the spec."""
    doc = {"services": {"s": {"image": "x", "entrypoint": ["python3"], "command": "--f ${E-d}"}}}
    resolved = podman_compose_config(tmp_path, doc, {"E": ""})
    assert isinstance(resolved, dict), resolved
    assert resolved["command"] == ["--f", ""]   # podman-compose's reading: if this changes, revisit
    assert ours(tmp_path, {"E": ""}).argv == ("python3", "--f")
