"""`--manifest` and `--container` on show, check and compare, through the installed entry point:
the seed story as a Deployment (a kustomize overlay turning MTP 3 steps into 1) compared with the
unit's baseline, standard input, and the one-line errors."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from cli_helpers import BASELINES, EXAMPLES, REPO, assert_one_line_error
from kube_lab import KUBECTL, KUBECTL_MISSING

MANIFESTS = REPO / "tests" / "fixtures" / "manifests"
OVERLAY = MANIFESTS / "seed-000" / "overlay-40toks"
BASE = MANIFESTS / "seed-000" / "base" / "deployment.yaml"
PODMAN_COMPOSE = shutil.which("podman-compose") or shutil.which("podman-compose", path=os.path.dirname(sys.executable))
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason=KUBECTL_MISSING)


def test_show_json_is_the_units_document_plus_the_container(dw):
    unit = dw("show", "--unit-file", EXAMPLES / "sglang-qwen-70toks.service", "--engine-version", "0.5.12",
              "--format", "json").json()  # the release the Deployment's image tag names
    got = dw("show", "--manifest", BASE, "--format", "json").json()
    assert set(unit) <= set(got) and set(got) - set(unit) == {"container"}
    assert got["container"]["argv"][:3] == ["python3", "-m", "sglang.launch_server"]
    assert got["container"]["origin"] == {"file": str(BASE), "document": "1", "kind": "Deployment",
                                          "name": "sglang-qwen", "namespace": "inference", "container": "sglang"}
    assert got["launcher"]["engine"] == "sglang" and got["launcher"]["wrappers"] == ["kubernetes"]
    # the same typed flags as the unit the Deployment was written from
    assert got["engine"]["flags"] == unit["engine"]["flags"]
    assert got["engine"]["version"] == "0.5.12"  # named by the image tag


def test_check_says_whether_the_engine_would_start(dw, tmp_path):
    ok = dw("check", "--manifest", BASE)
    assert ok.code == 0 and "accepts every flag" in ok.stdout, ok
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE.read_text().replace("--mem-fraction-static", "--mem-fraction-statik"))
    refused = dw("check", "--manifest", bad)
    assert refused.code == 1 and "--mem-fraction-statik" in refused.stdout, refused


@needs_kubectl
def test_seed_story_as_a_deployment_has_the_units_top_finding(dw):
    as_unit = dw("compare", "--baseline", BASELINES / "70toks.yaml", "--unit-file",
                 EXAMPLES / "sglang-qwen-40toks.service", "--format", "json")
    as_deployment = dw("compare", "--baseline", BASELINES / "70toks.yaml", "--manifest", OVERLAY, "--format", "json")
    assert as_unit.code == 1 and as_deployment.code == 1, as_deployment
    top_unit, top_deployment = as_unit.json()["findings"][0], as_deployment.json()["findings"][0]
    assert top_deployment["key"] == top_unit["key"] == "speculative_num_steps"
    assert (top_deployment["baseline"], top_deployment["current"]) == (3, 1)
    keys = [f["key"] for f in as_deployment.json()["findings"]]
    assert not [k for k in keys if k.startswith("unit.")]  # a container has no unit keys to compare
    assert "launcher.runtime" in keys  # where it runs changed: one finding


def test_manifest_on_standard_input(tmp_path):
    from cli_helpers import DRIFTWATCH
    done = subprocess.run([str(DRIFTWATCH), "show", "--manifest", "-", "--format", "json"], input=BASE.read_text(),
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"file": "standard input"' in done.stdout


def test_helm_template_output_with_several_workloads_needs_container(dw):
    run = dw("show", "--manifest", MANIFESTS / "lws-sglang.yaml")
    assert_one_line_error(run, "several engine containers", "--container")
    chosen = dw("show", "--manifest", MANIFESTS / "lws-sglang.yaml", "--container", "sglang-worker", "--format", "json")
    assert chosen.code == 0 and chosen.json()["container"]["origin"]["role"] == "worker"


@pytest.mark.parametrize("args,needle", [
    (["--container", "x", "--unit-file", str(EXAMPLES / "sglang-qwen-70toks.service")], "--container names"),
    (["--manifest", str(BASE), "--unit-file", str(EXAMPLES / "sglang-qwen-70toks.service")], "give one of"),
    (["--manifest", str(BASE), "--unit", "x.service"], "--container NAME"),
    (["--manifest", "/nonexistent.yaml"], "no such file"),
    (["--manifest", str(BASE), "--container", "nope"], "no container nope"),
])
def test_errors_are_one_line(dw, args, needle):
    assert_one_line_error(dw("show", *args), needle)


def test_a_file_that_is_neither_is_one_line(dw, tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("just: a mapping\n")
    assert_one_line_error(dw("show", "--manifest", f), "not a Kubernetes object")


@needs_kubectl
def test_baseline_saved_from_a_deployment_judges_its_overlay_and_a_unit(dw, tmp_path):
    saved = dw("baseline", "save", "dep70", "--manifest", BASE, "--metric", "throughput=70",
               "--baselines-dir", tmp_path)
    assert saved.code == 0, saved
    overlay = dw("compare", "--baseline", "dep70", "--baselines-dir", tmp_path, "--manifest", OVERLAY,
                 "--format", "json")
    assert [f["key"] for f in overlay.json()["findings"]] == ["speculative_num_steps"]  # the values change alone
    same = dw("compare", "--baseline", "dep70", "--baselines-dir", tmp_path, "--manifest", BASE)
    assert same.code == 0, same
    unit = dw("compare", "--baseline", "dep70", "--baselines-dir", tmp_path, "--unit-file",
              EXAMPLES / "sglang-qwen-70toks.service", "--format", "json")
    keys = [f["key"] for f in unit.json()["findings"]]
    assert "launcher.runtime" in keys and not [k for k in keys if k.startswith(("unit.", "speculative"))]


# ------------------------------------------------------------------------------ restore as a patch
@needs_kubectl
def test_seed_story_restores_as_a_patch_with_no_drift_left(dw, tmp_path):
    run = dw("restore", "--baseline", BASELINES / "70toks.yaml", "--manifest", OVERLAY, "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    assert doc["patch_kind"] == "strategic-merge" and doc["undoes"] == ["--speculative-num-steps"]
    assert doc["still_differs"] == [] and doc["checked_with"] == "kubectl kustomize"
    assert "$(MODEL_DIR)/Qwen3.6-27B" in doc["patch"]  # written as the manifest writes it, not expanded
    assert {left["reason"] for left in doc["left"]} == {"launcher", "referenced", "set-at-start"}
    # Lay it over the overlay as a user would (a kustomize overlay of the overlay), and compare again.
    layer = tmp_path / "restored"
    layer.mkdir()
    (layer / "patch.yaml").write_text(doc["patch"])
    overlay = os.path.relpath(OVERLAY, layer)  # kustomize takes a directory by a relative path
    (layer / "kustomization.yaml").write_text(f"resources:\n  - {overlay}\npatches:\n  - path: patch.yaml\n")
    after = dw("compare", "--baseline", BASELINES / "70toks.yaml", "--manifest", layer, "--format", "json")
    assert "speculative_num_steps" not in [f["key"] for f in after.json()["findings"]], after


@needs_kubectl
def test_a_custom_resource_gets_the_smallest_json6902_patch(dw, tmp_path):
    assert dw("baseline", "save", "lws", "--manifest", MANIFESTS / "lws-sglang.yaml", "--container", "sglang-leader",
              "--baselines-dir", tmp_path).code == 0
    drifted = tmp_path / "lws4.yaml"
    drifted.write_text((MANIFESTS / "lws-sglang.yaml").read_text().replace('- "2" # Size', '- "4" # Size', 1))
    run = dw("restore", "--baseline", "lws", "--baselines-dir", tmp_path, "--manifest", drifted, "--container",
             "sglang-leader", "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    assert doc["patch_kind"] == "json6902" and doc["still_differs"] == []
    assert doc["patch"] == ("- op: replace\n  path: /spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/"
                            "command/6\n  value: '2'\n")


def test_compose_restores_as_an_override_file(dw, tmp_path):
    assert dw("baseline", "save", "comp", "--manifest", MANIFESTS / "sglang-compose.yaml",
              "--baselines-dir", tmp_path).code == 0
    drifted = tmp_path / "compose.yaml"
    drifted.write_text((MANIFESTS / "sglang-compose.yaml").read_text().replace(
        "--port 30000", "--port 30000 --max-running-requests 8"))
    run = dw("restore", "--baseline", "comp", "--baselines-dir", tmp_path, "--manifest", drifted,
             "--write", tmp_path / "out")
    assert run.code == 1, run
    written = (tmp_path / "out" / "compose.override.yaml").read_text()
    assert "entrypoint" not in written and "--max-running-requests" not in written and "sglang:" in written
    assert "no drift left" in run.stdout
    again = dw("restore", "--baseline", "comp", "--baselines-dir", tmp_path, "--manifest", drifted,
               "--write", tmp_path / "out")
    assert_one_line_error(again, "already exists")
    assert_one_line_error(dw("restore", "--baseline", "comp", "--baselines-dir", tmp_path, "--manifest", drifted,
                             "--apply"), "--apply is not offered for --manifest")


def test_nothing_to_restore_exits_0(dw):
    run = dw("restore", "--baseline", BASELINES / "70toks.yaml", "--manifest", BASE)
    assert run.code == 0 and "nothing to restore" in run.stdout, run


# ------------------------------------------------------------------ the template against its live Pod
def _live_pods(tmp_path, steps: str) -> str:
    """`kubectl get pods -o json` as an API server answers for the Deployment's running Pod (a List
    of Pods with owner, node and status), made with `kubectl label --local` where no API server runs."""
    import json

    import yaml
    deployment = yaml.safe_load(BASE.read_text())
    spec = json.loads(json.dumps(deployment["spec"]["template"]["spec"]))
    args = spec["containers"][0]["args"]
    args[args.index("--speculative-num-steps") + 1] = steps
    spec["nodeName"] = "gpu-node-1"
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "sglang-qwen-6f7c9d8b5-x2x7k", "namespace": "inference",
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                             "name": "sglang-qwen-6f7c9d8b5", "uid": "0", "controller": True}]},
           "spec": spec, "status": {"phase": "Running"}}
    source = tmp_path / f"pod-{steps}.yaml"
    source.write_text(yaml.safe_dump(pod))
    done = subprocess.run([KUBECTL, "label", "--local", "-f", str(source), "driftwatch-test=1",
                           "-o", "json"], capture_output=True, text=True, timeout=60, check=True)
    out = tmp_path / f"pods-{steps}.json"
    out.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [json.loads(done.stdout)]}))
    return str(out)


@needs_kubectl
def test_a_workloads_template_against_its_live_pod(dw, tmp_path):
    assert dw("baseline", "save", "template", "--manifest", BASE, "--baselines-dir", tmp_path).code == 0
    same = dw("compare", "--baseline", "template", "--baselines-dir", tmp_path, "--manifest", _live_pods(tmp_path, "3"))
    assert same.code == 0, same
    older = dw("compare", "--baseline", "template", "--baselines-dir", tmp_path, "--manifest",
               _live_pods(tmp_path, "1"), "--format", "json")
    assert older.code == 1 and [f["key"] for f in older.json()["findings"]] == ["speculative_num_steps"], older


@pytest.mark.parametrize("text", [
    "kind: Pod\nspec: {containers: 5}\n",
    "kind: Pod\nspec: {containers: [{name: a, command: [python3, -m, sglang.launch_server, --tp, null]}]}\n",
    "kind: LeaderWorkerSet\nspec: {leaderWorkerTemplate: 5}\n",
    "kind: InferenceService\nspec: {predictor: {containers: 5}}\n",
    "kind: InferenceService\nmetadata: {name: x}\nspec: {predictor: {model: {modelFormat: 5, args: 5}}}\n---\n"
    "kind: ServingRuntime\nmetadata: {name: r}\nspec: {supportedModelFormats: 5, containers: 5}\n",
    "kind: CronJob\nspec: {jobTemplate: 5}\n",
    "services: {a: {command: [python3, -m, sglang.launch_server], deploy: {resources: {reservations: "
    "{devices: [5, {capabilities: 5}]}}}, gpus: [5]}}\n",
    "services: {a: {command: \"python3 ${X\"}}\n",
    "- a\n- b\n",
    "kind: List\nitems: 5\n",
])
def test_a_malformed_manifest_is_one_line_never_a_crash(dw, tmp_path, text):
    f = tmp_path / "m.yaml"
    f.write_text(text)
    run = dw("show", "--manifest", f)
    assert_one_line_error(run)
    assert "internal error" not in run.stderr


@pytest.mark.skipif(PODMAN_COMPOSE is None, reason="podman-compose is not installed (pip install podman-compose)")
def test_compose_override_merged_by_podman_compose_leaves_no_drift(dw, tmp_path):
    """The override restore writes, merged over the drifted file by a real Compose implementation
    (`podman-compose -f compose.yaml -f compose.override.yaml config`), is the baseline's service."""
    assert dw("baseline", "save", "comp", "--manifest", MANIFESTS / "sglang-compose.yaml",
              "--baselines-dir", tmp_path).code == 0
    project = tmp_path / "project"
    project.mkdir()
    (project / "compose.yaml").write_text((MANIFESTS / "sglang-compose.yaml").read_text().replace(
        "--port 30000", "--port 30000 --max-running-requests 8 --tp 2"))
    assert dw("compare", "--baseline", "comp", "--baselines-dir", tmp_path, "--manifest",
              project / "compose.yaml").code == 1
    assert dw("restore", "--baseline", "comp", "--baselines-dir", tmp_path, "--manifest", project / "compose.yaml",
              "--write", tmp_path / "out").code == 1
    shutil.copy(tmp_path / "out" / "compose.override.yaml", project / "compose.override.yaml")
    merged = subprocess.run([PODMAN_COMPOSE, "-f", "compose.yaml", "-f", "compose.override.yaml", "config"],
                            cwd=project, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "HOME": str(tmp_path)})
    assert merged.returncode == 0, merged.stderr
    (project / "merged.yaml").write_text(merged.stdout)
    run = dw("compare", "--baseline", "comp", "--baselines-dir", tmp_path, "--manifest", project / "merged.yaml")
    assert run.code == 0, run
