"""Compose files read as Compose starts their services (parse/compose.py): interpolation, the
entrypoint/command rules checked against podman's own (`podman create` + `podman inspect`), the
environment forms, GPU reservations, and SGLang's published compose.yaml typed by SGLang's parser."""
from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
import uuid
from pathlib import Path

import pytest

from driftwatch.engines.images import table_command
from driftwatch.errors import InputError
from driftwatch.parse.compose import interpolate, read_compose, read_dotenv
from driftwatch.parse.containers import ImageCommand
from driftwatch.run.manifest import ManifestRequest, image_command, read_manifests, snapshot_from_manifests

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manifests"


def interp(value: str, environ=None, dotenv=None):
    out, unset = interpolate({"k": value}, "compose.yaml", environ or {}, dotenv or {})
    return out["k"], unset


# ------------------------------------------------------------------------------- interpolation
@pytest.mark.parametrize("text,environ,expected", [
    ("${A}", {"A": "1"}, "1"),
    ("$A/x", {"A": "1"}, "1/x"),
    ("${A:-d}", {}, "d"),            # unset: the default
    ("${A:-d}", {"A": ""}, "d"),     # empty: the default too (`:-`)
    ("${A-d}", {"A": ""}, ""),       # empty is set: no default (`-`)
    ("${A-d}", {}, "d"),
    ("${A:+alt}", {"A": "1"}, "alt"),
    ("${A:+alt}", {"A": ""}, ""),
    ("${A+alt}", {"A": ""}, "alt"),
    ("$$A", {"A": "1"}, "$A"),       # $$ is a literal $
    ("$${A}", {"A": "1"}, "${A}"),
    ("${A:-${B}}", {"B": "b"}, "b"),  # a default may itself be interpolated
    ("100$", {}, "100$"),
])
def test_interpolation(text, environ, expected):
    assert interp(text, environ)[0] == expected


def test_unset_variable_is_blank_and_said():
    value, unset = interp("--model ${MODEL}", {})
    assert value == "--model " and unset == ["MODEL"]


@pytest.mark.parametrize("text,environ", [("${A?need A}", {}), ("${A:?need A}", {"A": ""})])
def test_required_variable_is_an_error(text, environ):
    with pytest.raises(InputError, match="required variable A is missing a value: need A"):
        interp(text, environ)


def test_set_required_variable_passes():
    assert interp("${A?x}", {"A": ""})[0] == ""   # `?`: only unset is an error
    assert interp("${A:?x}", {"A": "v"})[0] == "v"


def test_process_environment_overrides_the_dotenv_file(tmp_path):
    (tmp_path / ".env").write_text("# comment\nexport STEPS=3\nTAG='v0.5.12'\nPORT=30000 # inline\n")
    compose = tmp_path / "compose.yaml"
    compose.write_text(textwrap.dedent("""
        services:
          s:
            image: lmsysorg/sglang:${TAG}
            command: python3 -m sglang.launch_server --model-path m --speculative-num-steps ${STEPS} --port ${PORT}
        """))
    dotenv = read_dotenv((tmp_path / ".env").read_text())
    assert dotenv == {"STEPS": "3", "TAG": "v0.5.12", "PORT": "30000"}
    [spec] = read_manifests(ManifestRequest((str(compose),), environ={"STEPS": "1"})).containers
    assert spec.image == "lmsysorg/sglang:v0.5.12"
    assert spec.argv[-4:] == ("--speculative-num-steps", "1", "--port", "30000")


# ----------------------------------------------------------------- entrypoint / command / env forms
def services(text: str, images=table_command):
    import yaml
    specs, _ = read_compose(yaml.safe_load(textwrap.dedent(text)), "compose.yaml", {}, {}, images)
    return {s.origin.name: s for s in specs}


def test_string_command_is_split_into_words_not_run_by_a_shell():
    got = services("""
        services:
          s:
            image: lmsysorg/sglang:latest
            command: python3 -m sglang.launch_server --model-path "/models/My Model" --served-model-name 'a b'
        """)["s"]
    assert got.argv == ("python3", "-m", "sglang.launch_server", "--model-path", "/models/My Model",
                        "--served-model-name", "a b")


def test_command_alone_keeps_the_images_entrypoint():
    got = services("""
        services:
          v:
            image: vllm/vllm-openai:v0.15.1
            command: ["--model", "m", "--max-num-seqs", "64"]
        """)["v"]
    assert got.argv == ("vllm", "serve", "--model", "m", "--max-num-seqs", "64")


def test_entrypoint_drops_the_images_cmd():
    def image(_):
        return ImageCommand(("vllm", "serve"), ("--model", "default"), "test")
    got = services("""
        services:
          a: {image: x, entrypoint: [python3, -m, vllm.entrypoints.openai.api_server]}
          b: {image: x, command: [--model, m]}
          c: {image: x}
        """, image)
    assert got["a"].argv == ("python3", "-m", "vllm.entrypoints.openai.api_server")
    assert got["b"].argv == ("vllm", "serve", "--model", "m")
    assert got["c"].argv == ("vllm", "serve", "--model", "default")


def test_environment_as_map_and_list():
    got = services("""
        services:
          a: {image: x, command: [x], environment: {A: 1, B: "two", C: true}}
          b: {image: x, command: [x], environment: [A=1, "B=two words", NOT_SET_ANYWHERE]}
        """)
    assert got["a"].environment() == {"A": "1", "B": "two", "C": "true"}
    assert got["b"].environment() == {"A": "1", "B": "two words"}  # a bare name unset where Compose runs: unset


def test_gpu_reservations():
    got = services("""
        services:
          ids: {image: x, command: [x], deploy: {resources: {reservations: {devices:
                [{driver: nvidia, device_ids: ['0', '3'], capabilities: [gpu]}]}}}}
          count: {image: x, command: [x], deploy: {resources: {reservations: {devices:
                [{driver: nvidia, count: 4, capabilities: [gpu]}]}}}}
          all: {image: x, command: [x], deploy: {resources: {reservations: {devices:
                [{driver: nvidia, count: all, capabilities: [gpu]}]}}}}
          none: {image: x, command: [x]}
        """)
    assert (got["ids"].gpus, got["count"].gpus, got["all"].gpus, got["all"].gpus_note, got["none"].gpus) == \
        (2, 4, None, "all", None)


def test_sglang_published_compose_file():
    snap = snapshot_from_manifests(ManifestRequest((str(FIXTURES / "sglang-compose.yaml"),), environ={},
                                                   use_podman=False))
    assert snap.launcher.engine == "sglang" and snap.launcher.wrappers == ["compose"]
    assert {k: v.value for k, v in snap.engine.explicit().items()} == {
        "model_path": "meta-llama/Meta-Llama-3.1-8B-Instruct", "host": "0.0.0.0", "port": 30000}
    assert snap.environment["HF_TOKEN"].startswith("<redacted")
    assert len(snap.runtime["gpus"]) == 1
    assert any("HOME variable is not set" in w for w in snap.warnings)


# ------------------------------------------------------ the ENTRYPOINT/CMD rules against podman's own
PODMAN = shutil.which("podman")


@pytest.fixture(scope="module")
def podman_image():
    """A local image with ENTRYPOINT ["vllm","serve"] and CMD ["--model","default"], built from an
    empty tar (nothing is pulled); removed afterwards."""
    if PODMAN is None:
        pytest.skip("podman is not installed")
    name = f"localhost/driftwatch-test-{uuid.uuid4().hex[:8]}:1"
    tar = Path(__file__).parent / ".empty-image.tar"
    subprocess.run(["tar", "cf", str(tar), "-T", "/dev/null"], check=True)
    try:
        done = subprocess.run([PODMAN, "import", "--change", 'ENTRYPOINT ["vllm","serve"]', "--change",
                               'CMD ["--model","default"]', str(tar), name],
                              capture_output=True, text=True, timeout=120)
    finally:
        tar.unlink()
    if done.returncode != 0:
        pytest.skip(f"podman cannot import an image here: {done.stderr.strip()[-200:]}")
    yield name
    subprocess.run([PODMAN, "rmi", "-f", name], capture_output=True, timeout=120)


def podman_argv(image: str, entrypoint: list[str] | None, command: list[str] | None) -> tuple[str, ...]:
    """What podman will run for `docker run [--entrypoint E] IMAGE [CMD…]` (Compose's own mapping)."""
    name = f"driftwatch-test-{uuid.uuid4().hex[:8]}"
    args = [PODMAN, "create", "--name", name]
    if entrypoint is not None:
        args += ["--entrypoint", json.dumps(entrypoint)]
    subprocess.run(args + [image] + (command or []), capture_output=True, text=True, timeout=120, check=True)
    try:
        out = subprocess.run([PODMAN, "inspect", name], capture_output=True, text=True, timeout=120, check=True)
    finally:
        subprocess.run([PODMAN, "rm", "-f", name], capture_output=True, timeout=120)
    data = json.loads(out.stdout)[0]
    args = data.get("Args") or []
    # Path + Args is what podman execs; podman 4 shows Args [Path] for a command of one word
    return (data["Path"],) if args == [data["Path"]] else (data["Path"], *args)


@pytest.mark.parametrize("entrypoint,command", [
    (None, None),
    (None, ["--model", "m", "--max-num-seqs", "8"]),
    (["python3", "-m", "vllm.entrypoints.openai.api_server"], None),
    (["python3", "-m", "vllm.entrypoints.openai.api_server"], ["--model", "m"]),
])
def test_entrypoint_and_command_as_podman_runs_them(podman_image, entrypoint, command):
    known = image_command(podman_image)  # the image's own ENTRYPOINT/CMD, read with podman
    assert known == ImageCommand(("vllm", "serve"), ("--model", "default"), "podman image inspect")
    service = {"image": podman_image}
    if entrypoint is not None:
        service["entrypoint"] = entrypoint
    if command is not None:
        service["command"] = command
    specs, _ = read_compose({"services": {"s": service}}, "compose.yaml", {}, {},
                            images=image_command)
    assert specs[0].argv == podman_argv(podman_image, entrypoint, command)
