"""Secrets never leave the host in clear text: compare (every format), show, snapshot files, baselines."""
from __future__ import annotations

import json

import pytest

CLEAR = ("sk-SECRET123", "hf_SECRETXYZ", "abc def", "sk-OTHER456", "hf_OTHERSECRET", "ghi jkl")


def _unit(hf: str, openai: str, api_key: str) -> str:
    return ("[Unit]\nDescription=secret test\n\n[Service]\n"
            f"Environment=HF_TOKEN={hf}\n"
            f'Environment="OPENAI_API_KEY={openai}"\n'
            "ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/Qwen3.6-27B "
            f"--tp-size 2 --api-key {api_key}\n")


@pytest.fixture
def secret_units(tmp_path):
    a = tmp_path / "a.service"
    b = tmp_path / "b.service"
    a.write_text(_unit("hf_SECRETXYZ", "abc def", "sk-SECRET123"))
    b.write_text(_unit("hf_OTHERSECRET", "ghi jkl", "sk-OTHER456"))
    return a, b


def assert_no_clear_secret(text: str) -> None:
    for secret in CLEAR:
        assert secret not in text, f"clear secret {secret!r} leaked"
    for part in ("SECRET123", "SECRETXYZ", "OTHER456", "OTHERSECRET"):
        assert part not in text, f"part of a secret {part!r} leaked"


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_compare_redacts(invoke, secret_units, fmt):
    a, b = secret_units
    run = invoke("compare", "--baseline", a, "--unit-file", b, "--format", fmt)
    assert run.code == 1, run
    assert_no_clear_secret(run.stdout + run.stderr)
    assert "changed (redacted)" in run.stdout
    for name in ("HF_TOKEN", "OPENAI_API_KEY", "--api-key"):
        assert name in run.stdout


def test_compare_json_changed_env_secrets(invoke, secret_units):
    a, b = secret_units
    doc = json.loads(invoke("compare", "--baseline", a, "--unit-file", b, "--format", "json").stdout)
    by_key = {f["key"]: f for f in doc["findings"]}
    for key in ("env.HF_TOKEN", "env.OPENAI_API_KEY"):
        assert by_key[key]["current"] == "changed (redacted)"
        assert by_key[key]["baseline"] == "(redacted)"


def test_compare_json_changed_api_key_reads_changed_redacted(invoke, secret_units):
    a, b = secret_units
    doc = json.loads(invoke("compare", "--baseline", a, "--unit-file", b, "--format", "json").stdout)
    api = next(f for f in doc["findings"] if f["key"] == "api_key")
    assert api["current"] == "changed (redacted)" and api["baseline"] == "(redacted)"


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_compare_reports_show_no_fingerprints(invoke, secret_units, fmt):
    a, b = secret_units
    run = invoke("compare", "--baseline", a, "--unit-file", b, "--format", fmt)
    assert "<redacted:" not in run.stdout


def test_unchanged_secret_is_no_drift(invoke, tmp_path):
    a = tmp_path / "a.service"
    b = tmp_path / "b.service"
    a.write_text(_unit("hf_SECRETXYZ", "abc def", "sk-SECRET123"))
    b.write_text(_unit("hf_SECRETXYZ", "abc def", "sk-SECRET123").replace("--api-key sk-SECRET123",
                                                                         "--api-key=sk-SECRET123"))
    run = invoke("compare", "--baseline", a, "--unit-file", b)
    assert run.code == 0, run
    assert_no_clear_secret(run.stdout)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_show_redacts(invoke, secret_units, fmt):
    a, _ = secret_units
    run = invoke("show", "--unit-file", a, "--format", fmt, "--all")
    assert run.code == 0, run
    assert_no_clear_secret(run.stdout)
    assert "HF_TOKEN" in run.stdout and "OPENAI_API_KEY" in run.stdout


def test_snapshot_files_redacted(invoke, secret_units, tmp_path):
    a, b = secret_units
    store = tmp_path / "store"
    run = invoke("snapshot", "--unit-file", a, "--unit-file", b, "--store", store)
    assert run.code == 0, run
    # the store is a database: what it holds, as `store export` writes it for review
    assert invoke("store", "export", "--store", store, "-o", tmp_path / "exported").code == 0
    files = [p for p in (tmp_path / "exported").rglob("*.yaml") if p.is_file()]
    assert {p.parent.name for p in files} == {"a.service", "b.service"}, files
    assert not [p for p in store.rglob("*.tmp")], "temp files left behind"
    for path in files:
        assert_no_clear_secret(path.read_text())
    assert_no_clear_secret(run.stdout)
    # a saved snapshot still compares: unchanged secrets are equal, changed ones differ
    snap_a = next(p for p in files if p.parent.name == "a.service" and p.name != "latest.yaml")
    assert invoke("compare", "--baseline", snap_a, "--unit-file", a).code == 0
    assert invoke("compare", "--baseline", a, "--snapshot", snap_a).code == 0


def test_baseline_save_redacted(invoke, secret_units, tmp_path):
    a, b = secret_units
    bl = tmp_path / "bl"
    run = invoke("baseline", "save", "sec", "--unit-file", a, "--baselines-dir", bl, "--note", "secret test")
    assert run.code == 0, run
    assert_no_clear_secret((bl / "sec.yaml").read_text())
    shown = invoke("baseline", "show", "sec", "--baselines-dir", bl, "--format", "json")
    assert shown.code == 0 and "sec" in shown.stdout
    assert_no_clear_secret(shown.stdout)
    # compare against the saved baseline: same unit no drift; changed secrets are drift, still redacted
    assert invoke("compare", "--baseline", "sec", "--unit-file", a, "--baselines-dir", bl).code == 0
    changed = invoke("compare", "--baseline", "sec", "--unit-file", b, "--baselines-dir", bl, "--format", "json")
    assert changed.code == 1
    assert_no_clear_secret(changed.stdout)
