"""Kubernetes manifests read as the kubelet starts their containers (parse/kubernetes.py), the real
public manifests of SGLang, LeaderWorkerSet and KServe typed by the engines' own parsers, and the
documents checked against `kubectl`'s own reading where kubectl is installed."""
from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from kube_lab import KUBECTL, KUBECTL_MISSING

from driftwatch.engines.images import table_command
from driftwatch.errors import DriftwatchError, InputError
from driftwatch.fileio import load_yaml_text
from driftwatch.parse.containers import Origin
from driftwatch.parse.kubernetes import container_spec, expand, read_objects
from driftwatch.run.manifest import ManifestRequest, read_manifests, snapshot_from_manifests, split_documents
from driftwatch.snapshots.container import choose_container, snapshot_from_container

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manifests"


def origin(name: str = "c") -> Origin:
    return Origin("test.yaml", 0, "Pod", "p", None, name)


def spec_of(container: dict, images=table_command):
    return container_spec(container, origin(container.get("name", "c")), images=images)


def read(tmp_path: Path, text: str, container: str | None = None):
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(text))
    return snapshot_from_manifests(ManifestRequest((str(path),), container, environ={}, use_podman=False))


# ------------------------------------------------------------------ $(VAR): the kubelet's expansion
@pytest.mark.parametrize("text,expected", [
    ("$(A)", "1"),
    ("x$(A)y$(A)", "x1y1"),
    ("$(UNDEFINED)", "$(UNDEFINED)"),          # an undefined reference stays as written
    ("$$(A)", "$(A)"),                          # $$ is a literal $: the reference is not expanded
    ("$$$(A)", "$1"),
    ("$$", "$"),
    ("a$", "a$"),                               # a trailing $ stays
    ("$A", "$A"),                               # only $(NAME) is a reference: $A is the shell's business
    ("$(A", "$(A"),                             # unclosed: kept
    ("$(A)$(B)", "1$(B)"),
])
def test_expand_follows_the_kubelets_rules(text, expected):
    assert expand(text, {"A": "1"}.get) == expected


def test_env_value_expands_only_variables_defined_earlier():
    spec = spec_of({"name": "c", "image": "i", "command": ["x"], "env": [
        {"name": "LATE_REF", "value": "$(B)"},   # B is defined after: stays literal
        {"name": "B", "value": "b"},
        {"name": "EARLY_REF", "value": "$(B)-x"},
        {"name": "ESCAPED", "value": "$$(B)"},
    ]})
    env = spec.environment()
    assert env["LATE_REF"] == "$(B)"
    assert env["EARLY_REF"] == "b-x"
    assert env["ESCAPED"] == "$(B)"


def test_command_and_args_expand_from_the_whole_environment():
    # The kubelet expands command/args with every variable of the container (not only earlier ones).
    spec = spec_of({"name": "c", "image": "i", "command": ["python3", "-m", "sglang.launch_server"],
                    "args": ["--tp", "$(TP)", "--port", "$$(PORT)", "--model-path", "$(NOPE)"],
                    "env": [{"name": "TP", "value": "2"}]})
    assert spec.argv == ("python3", "-m", "sglang.launch_server", "--tp", "2", "--port", "$(PORT)",
                         "--model-path", "$(NOPE)")


# -------------------------------------------------------------- command/args vs ENTRYPOINT/CMD
def test_args_alone_keep_the_images_entrypoint():
    spec = spec_of({"name": "c", "image": "vllm/vllm-openai:v0.15.1", "args": ["--model", "m"]})
    assert spec.argv == ("vllm", "serve", "--model", "m")


def test_args_alone_on_an_older_vllm_image_run_its_api_server_module():
    spec = spec_of({"name": "c", "image": "docker.io/vllm/vllm-openai:v0.8.5", "args": ["--model", "m"]})
    assert spec.argv == ("python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m")


def test_command_replaces_the_entrypoint_and_drops_the_cmd():
    def image(_):
        from driftwatch.parse.containers import ImageCommand
        return ImageCommand(("vllm", "serve"), ("--model", "default"), "test")
    assert spec_of({"name": "c", "image": "x", "command": ["python3", "-m", "sglang.launch_server"]},
                   image).argv == ("python3", "-m", "sglang.launch_server")
    assert spec_of({"name": "c", "image": "x", "args": ["--model", "m"]},
                   image).argv == ("vllm", "serve", "--model", "m")
    assert spec_of({"name": "c", "image": "x"}, image).argv == ("vllm", "serve", "--model", "default")


def test_an_unknown_images_entrypoint_is_said_not_guessed():
    spec = spec_of({"name": "c", "image": "example.org/private:1", "args": ["--x"]})
    assert spec.argv == ("--x",)
    assert any("ENTRYPOINT is not known" in n for n in spec.notes)


def test_a_number_in_args_is_refused_as_kubernetes_refuses_it():
    with pytest.raises(InputError, match=r"args\[1\] is a number, not a string \(quote it\)"):
        spec_of({"name": "c", "image": "i", "args": ["--port", 8000]})


# ----------------------------------------------------------------------- env values not in the file
def test_secret_and_configmap_references_are_value_unknown(tmp_path):
    snap = read(tmp_path, """
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
          - name: vllm
            image: vllm/vllm-openai:v0.15.1
            args: ["--model", "m", "--api-key", "$(PLAIN_NAME)"]
            env:
            - name: PLAIN_NAME
              valueFrom: {secretKeyRef: {name: creds, key: api}}
            - name: MAX_LEN
              valueFrom: {configMapKeyRef: {name: cfg, key: len}}
            envFrom:
            - configMapRef: {name: more}
        """)
    record = snap.runtime["container"]
    assert record["argv"][:4] == ["vllm", "serve", "--model", "m"]
    # never a value: the secret's source only, and the name of a secretKeyRef is redacted like a secret
    assert "creds" not in json.dumps(snap.environment["PLAIN_NAME"])
    assert snap.environment["MAX_LEN"] != ""
    assert any("envFrom configMapRef more" in w for w in snap.warnings)


def test_gpu_limit_is_a_host_fact(tmp_path):
    snap = read(tmp_path, """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec:
          template:
            spec:
              containers:
              - name: sglang
                image: lmsysorg/sglang:v0.5.12
                command: [python3, -m, sglang.launch_server, --model-path, m, --tp-size, "4"]
                resources: {limits: {nvidia.com/gpu: "4"}}
        """)
    assert len(snap.runtime["gpus"]) == 4
    assert snap.runtime["container"]["gpus"] == 4


# ------------------------------------------------------------------- which container is the server
def test_init_containers_and_sidecars_are_read_never_chosen():
    path = FIXTURES / "seed-000" / "base" / "deployment.yaml"
    got = read_manifests(ManifestRequest((str(path),), environ={}, use_podman=False))
    names = {c.name: c for c in got.containers}
    assert set(names) == {"fetch-model", "sglang", "metrics-exporter"}
    assert names["fetch-model"].init
    assert choose_container(got.containers, None).name == "sglang"
    with pytest.raises(InputError, match="init container"):
        choose_container(got.containers, "fetch-model")


def test_several_engine_containers_need_container_naming_them():
    path = str(FIXTURES / "lws-sglang.yaml")
    got = read_manifests(ManifestRequest((path,), environ={}, use_podman=False))
    with pytest.raises(InputError, match=r"several engine containers: LeaderWorkerSet/sglang/leader/sglang-leader, "
                                         r"LeaderWorkerSet/sglang/worker/sglang-worker; choose one with --container"):
        choose_container(got.containers, None)
    assert choose_container(got.containers, "sglang-worker").origin.role == "worker"
    with pytest.raises(InputError, match="no container nope"):
        choose_container(got.containers, "nope")


def test_a_manifest_without_an_engine_says_which_containers_it_has(tmp_path):
    with pytest.raises(DriftwatchError, match=r"no container runs an inference engine .*Pod/p/web"):
        read(tmp_path, """
            apiVersion: v1
            kind: Pod
            metadata: {name: p}
            spec: {containers: [{name: web, image: nginx, command: [nginx, -g, "daemon off;"]}]}
            """)


# ------------------------------------------------------------------------- the real public files
def flags(snap) -> dict:
    return {k: v.value for k, v in snap.engine.explicit().items()}


def test_sglang_k8s_service_deployment():
    snap = snapshot_from_manifests(ManifestRequest((str(FIXTURES / "sglang-k8s-service.yaml"),), environ={},
                                                   use_podman=False))
    assert snap.launcher.engine == "sglang"
    assert snap.runtime["container"]["origin"]["document"] == "2"  # after the RuntimeClass
    assert flags(snap) == {"model_path": "meta-llama/Meta-Llama-3.1-8B-Instruct", "host": "0.0.0.0", "port": 30000}
    assert snap.environment["HF_TOKEN"].startswith("<redacted")
    assert len(snap.runtime["gpus"]) == 1


def test_sglang_statefulset_bash_script_with_line_continuations():
    snap = snapshot_from_manifests(ManifestRequest((str(FIXTURES / "sglang-k8s-distributed-sts.yaml"),),
                                                   environ={}, use_podman=False))
    got = flags(snap)
    assert got["tp_size"] == 16 and got["nnodes"] == 2 and got["ep_size"] == 16
    assert got["dist_init_addr"] == "sglang-master-pod:5000"
    assert got["node_rank"] == "$(POD_INDEX)"  # the downward API's pod index: set when the pod starts
    assert not [i for i in snap.issues if i.severity == "error"]
    assert any("--node-rank" in w and "pod starts" in w for w in snap.warnings)


def test_lws_sglang_leader_reads_the_controllers_variables_as_set_at_start():
    snap = snapshot_from_manifests(ManifestRequest((str(FIXTURES / "lws-sglang.yaml"),), "sglang-leader",
                                                   environ={}, use_podman=False))
    got = flags(snap)
    assert got["tp_size"] == 2 and got["port"] == 40000 and got["trust_remote_code"] is True
    assert got["dist_init_addr"] == "$(LWS_LEADER_ADDRESS):20000"
    assert not [i for i in snap.issues if i.severity == "error"]


def test_lws_vllm_leader_runs_the_api_server_after_a_ray_script():
    snap = snapshot_from_manifests(ManifestRequest((str(FIXTURES / "lws-vllm-gpu.yaml"),), "vllm-leader",
                                                   environ={}, use_podman=False))
    assert snap.launcher.engine == "vllm"
    assert snap.launcher.wrappers == ["kubernetes", "sh -c"]
    assert flags(snap)["tensor_parallel_size"] == 8
    assert flags(snap)["pipeline_parallel_size"] == 2  # `--pipeline_parallel_size`: vLLM's parser takes _ too
    assert len(snap.runtime["gpus"]) == 8


def test_lws_vllm_worker_runs_no_engine_of_its_own():
    got = read_manifests(ManifestRequest((str(FIXTURES / "lws-vllm-gpu.yaml"),), environ={}, use_podman=False))
    assert choose_container(got.containers, None).name == "vllm-leader"  # the worker only joins the Ray cluster


def test_kserve_vllm_serving_runtime():
    snap = snapshot_from_manifests(ManifestRequest((str(FIXTURES / "kserve-vllmserver.yaml"),), environ={},
                                                   use_podman=False))
    assert snap.launcher.entry == "python -m vllm.entrypoints.openai.api_server"
    assert flags(snap)["model"] == "/mnt/models" and flags(snap)["port"] == 8080


def test_kserve_inference_service_needs_its_runtime():
    with pytest.raises(InputError, match="runtime for model format huggingface, which is not among"):
        read_manifests(ManifestRequest((str(FIXTURES / "kserve-isvc-llama.yaml"),), environ={}, use_podman=False))


def test_kserve_inference_service_merged_with_its_runtime(tmp_path):
    isvc = tmp_path / "isvc.yaml"
    isvc.write_text(textwrap.dedent("""
        apiVersion: serving.kserve.io/v1beta1
        kind: InferenceService
        metadata: {name: llama}
        spec:
          predictor:
            model:
              modelFormat: {name: vLLM}
              args: [--max-model-len=1024, --tensor-parallel-size=2]
              env: [{name: HF_HOME, value: /cache}]
              resources: {limits: {nvidia.com/gpu: "2"}}
        """))
    got = read_manifests(ManifestRequest((str(FIXTURES / "kserve-vllmserver.yaml"), str(isvc)), environ={},
                                         use_podman=False))
    merged = [c for c in got.containers if c.origin.kind == "InferenceService"]
    assert len(merged) == 1
    c = merged[0]
    # KServe's MergeRuntimeContainers: runtime args then the InferenceService's; env merged by name
    assert c.argv == ("python", "-m", "vllm.entrypoints.openai.api_server", "--port=8080",
                      "--served-model-name=llama", "--model=/mnt/models", "--max-model-len=1024",
                      "--tensor-parallel-size=2")
    assert c.environment()["HF_HOME"] == "/cache" and c.environment()["VLLM_CONFIG_ROOT"] == "/tmp"
    assert c.gpus == 2
    snap = snapshot_from_container(c)
    assert flags(snap)["max_model_len"] == 1024 and flags(snap)["tensor_parallel_size"] == 2


def test_documents_split_keep_the_files_line_numbers(tmp_path):
    text = "a: 1\n---\nb: [\n---\nc: 3\n"
    docs = split_documents(text)
    assert [d[0] for d in docs] == [0, 2, 4]
    with pytest.raises(InputError, match=r"^m.yaml:4: invalid YAML"):
        load_yaml_text(docs[1][1], "m.yaml", "manifest")


# --------------------------------------------------------------------- against kubectl's own reading
ANY_KUBECTL = shutil.which("kubectl")  # decoding a file needs no kustomize: any kubectl will do
K8S_FIXTURES = ["sglang-k8s-service.yaml", "sglang-k8s-distributed-sts.yaml", "lws-sglang.yaml", "lws-vllm-gpu.yaml",
                "kserve-vllmserver.yaml", "seed-000/base/deployment.yaml"]


@pytest.mark.skipif(ANY_KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("name", K8S_FIXTURES)
def test_the_objects_kubectl_reads_give_the_same_containers(name):
    """`kubectl label --local -o json` decodes the file with Kubernetes' own YAML reader, offline: the
    containers read from its JSON are the ones read from the YAML here."""
    path = FIXTURES / name
    done = subprocess.run([ANY_KUBECTL, "label", "--local", "-f", str(path), "driftwatch-test=1", "-o", "json"],
                          capture_output=True, text=True, timeout=60, check=True)
    objects, decoder, text, at = [], json.JSONDecoder(), done.stdout, 0
    while text[at:].strip():  # one JSON document per object, one after another
        data, end = decoder.raw_decode(text, len(text) - len(text[at:].lstrip()))
        objects.extend(data["items"] if data.get("kind") == "List" else [data])
        at = end
    theirs = read_objects([(str(path), None, o) for o in objects], table_command)
    ours = read_manifests(ManifestRequest((str(path),), environ={}, use_podman=False)).containers
    key = [(c.origin.kind, c.origin.name, c.name, c.argv, c.environment(), c.gpus) for c in ours]
    assert [(c.origin.kind, c.origin.name, c.name, c.argv, c.environment(), c.gpus) for c in theirs] == key


@pytest.mark.skipif(KUBECTL is None, reason=KUBECTL_MISSING)
def test_a_kustomize_overlay_is_rendered_by_kubectl():
    snap = snapshot_from_manifests(ManifestRequest((str(FIXTURES / "seed-000" / "overlay-40toks"),), environ={},
                                                   use_podman=False))
    assert flags(snap)["speculative_num_steps"] == 1
    assert snap.runtime["container"]["origin"]["namespace"] == "inference"


def test_a_directory_without_kustomization_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="without a kustomization.yaml"):
        read_manifests(ManifestRequest((str(tmp_path),), environ={}))
