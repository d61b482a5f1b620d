"""`--manifest` and `--container` on show, check and compare, through the installed entry point:
the seed story as a Deployment (a kustomize overlay turning MTP 3 steps into 1) compared with the
unit's baseline, standard input, and the one-line errors."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from cli_helpers import BASELINES, EXAMPLES, REPO, assert_one_line_error

MANIFESTS = REPO / "tests" / "fixtures" / "manifests"
OVERLAY = MANIFESTS / "seed-000" / "overlay-40toks"
BASE = MANIFESTS / "seed-000" / "base" / "deployment.yaml"
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def test_show_json_is_the_units_document_plus_the_container(dw):
    unit = dw("show", "--unit-file", EXAMPLES / "sglang-qwen-70toks.service", "--format", "json").json()
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
    (["--container", "x", "--unit-file", str(EXAMPLES / "sglang-qwen-70toks.service")], "--container chooses"),
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
