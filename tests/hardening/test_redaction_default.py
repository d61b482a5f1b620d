"""Redaction by default: a value is stored in clear only when driftwatch knows it is not secret."""
from __future__ import annotations

import json

import pytest

from driftwatch.collect.raw import RawUnit
from driftwatch.errors import InputError, UnitError
from driftwatch.fileio import dump_yaml
from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.redact import (
    cut_credentials,
    is_plain_public,
    is_public_env_name,
    is_secret_option,
    load_public_env,
)
from driftwatch.report.data import comparison_to_dict
from driftwatch.snapshots.baseline import Baseline
from driftwatch.snapshots.snapshot import build_snapshot, snapshot_to_dict

PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/Qwen3.6-27B --tp-size 2"
SECRET = "Zq9xPLANTEDv8kW3"


def snap(body: str, **raw):
    text = f"[Unit]\nDescription=t\n\n[Service]\n{body}\n"
    return build_snapshot(RawUnit(host="h", unit="t.service", text=text, source="file", **raw))


def stored(s) -> str:
    return dump_yaml(snapshot_to_dict(s))


@pytest.mark.parametrize("name", ["DB_PASS", "GH_PAT", "MY_CONN", "SERVICE_WORD", "WEIRD"])
def test_environment_not_on_the_allowlist_is_fingerprinted(name):
    s = snap(f"Environment={name}={SECRET}\nExecStart={PY}")
    assert s.environment[name].startswith("<redacted:")
    assert SECRET not in stored(s)


@pytest.mark.parametrize("name, value", [
    ("CUDA_VISIBLE_DEVICES", "0,2"), ("NCCL_DEBUG", "INFO"), ("NCCL_SOCKET_IFNAME", "eth0"), ("PATH", "/usr/bin:/bin"),
    ("HF_HOME", "/data/hf"), ("OMP_NUM_THREADS", "8"), ("SGLANG_LOG_LEVEL", "debug"),
    ("MY_THREADS", "16"), ("MY_DIR", "/opt/models"), ("MY_GPUS", "0,1,2,3"), ("MY_FLAG", "true"),
    ("MY_OPTS", '"--tp 2 --port 30000"'), ("MY_URL", "http://10.0.0.1:8000/v1"),
])
def test_operational_names_and_plainly_public_values_stay_readable(name, value):
    s = snap(f"Environment={name}={value}\nExecStart={PY}")
    assert s.environment[name] == value.strip('"')


def test_secret_looking_names_are_redacted_even_under_an_allowed_prefix():
    assert not is_public_env_name("VLLM_API_KEY")
    assert not is_public_env_name("NCCL_SECRET")
    s = snap(f"Environment=VLLM_API_KEY=short\nExecStart={PY}")
    assert s.environment["VLLM_API_KEY"].startswith("<redacted:")


def test_public_env_in_driftwatch_yaml_extends_the_allowlist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # a plain word is shown under any name without a secret word; a value that is not one (punctuation)
    # is shown only under an allowlisted name
    s = snap(f"Environment=MODE=prod#eu\nExecStart={PY}")
    assert s.environment["MODE"].startswith("<redacted:")
    (tmp_path / ".driftwatch.yaml").write_text("public_env: [MODE, APP_*]\n")
    s = snap(f"Environment=MODE=prod#eu APP_COLOR=blue#1 OTHER=x1#y2\nExecStart={PY}")
    assert s.environment["MODE"] == "prod#eu" and s.environment["APP_COLOR"] == "blue#1"
    assert s.environment["OTHER"].startswith("<redacted:")


@pytest.mark.parametrize("text, problem", [
    ("public_env: MODE\n", "must be a list"),
    ("public_env: [MODE, 3]\n", "entry 2"),
    ("public_env: [DB_PASSWORD]\n", "looks like a secret"),
])
def test_public_env_mistakes_name_the_file_and_entry(tmp_path, text, problem):
    path = tmp_path / ".driftwatch.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=problem) as exc:
        load_public_env(path)
    assert str(path) in str(exc.value)


@pytest.mark.parametrize("value, kept, cut", [
    (f"https://user:{SECRET}@mirror.example/x", "https://user:", SECRET),
    (f"https://{SECRET}@github.com/org/repo", "@github.com/org/repo", SECRET),
    (f"hf://{SECRET}@org/model", "@org/model", SECRET),
    (f"https://m.example/w?rev=main&token={SECRET}", "https://m.example/w?rev=main&token=", SECRET),
    (f"https://a.blob.example/c?sv=2020&sig={SECRET}", "sv=2020", SECRET),
    (f'{{"hf_token": "{SECRET}", "rope": 2}}', '"rope": 2', SECRET),
    (f"{{'secret_key': '{SECRET}'}}", "secret_key", SECRET),
    (f'curl -H "Authorization: Bearer {SECRET}" http://x/', "http://x/", SECRET),
    ("token sk-abcdefghijklmnopqrstuvwx here", "token", "sk-abcdefghijklmnopqrstuvwx"),
])
def test_credentials_inside_public_values_are_cut_the_rest_stays(value, kept, cut):
    out, found = cut_credentials(value)
    assert cut not in out and kept in out and "<redacted:" in out
    assert cut in found


@pytest.mark.parametrize("body", [
    f"ExecStart={PY} --api-key {SECRET}",
    f"ExecStart={PY} --api-key={SECRET}",
    f"ExecStart={PY} --api-k {SECRET}",
    f"ExecStart={PY} --api\\x2dkey {SECRET}",
    f"ExecStart={PY} --api\\x2dkey \\x5a{SECRET[1:]}",
    f"ExecStart={PY} --apikey {SECRET}",  # an unknown flag: its value is not known to be public
    f"Environment=K={SECRET}\nExecStart={PY} --api-key ${{K}}",
    "ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path hf://" + SECRET + "@org/m",
    f"ExecStart={PY} --json-model-override-args '{{\"hf_token\": \"{SECRET}\"}}'",
    f"ExecStart=/bin/bash -c 'curl -H \"Authorization: Bearer {SECRET}\" http://10.0.0.1/; exec {PY}'",
    f"ExecStart=/bin/bash -c 'export DB_PASS={SECRET}; exec {PY}'",
    f"ExecStart=/usr/bin/docker run --env=CUSTOM={SECRET} img python3 -m sglang.launch_server --model-path /m",
    f"SetCredential=hf:{SECRET}\nExecStart={PY}",
    f"LoadCredential=hf:{SECRET}\nExecStart={PY}",
    f"LogExtraFields=DEPLOY={SECRET}\nExecStart={PY}",
    f"ExecStartPre=/usr/bin/curl -H \"X-Api-Key: {SECRET}\" http://10.0.0.1/\nExecStart={PY}",
    f"ExecStart={PY}\nExecStartPost=/bin/sh -c 'echo {SECRET} > /run/x'",
    f"X-Deploy-Note={SECRET}\nExecStart={PY}",
    f"# the old key was {SECRET}\nExecStart={PY}",
    f"ExecStart=/usr/bin/redis-server --port 6379 --requirepass {SECRET}",
    f"Environment=\"DB_PASS={SECRET}\nExecStart={PY}",
    f"Environment=1BAD={SECRET}\nExecStart={PY}",
])
def test_planted_secret_is_stored_nowhere(body):
    s = snap(body)
    text = stored(s) + "\n".join(s.warnings) + "\n".join(i.message for i in s.issues)
    assert SECRET not in text and SECRET[1:] not in text


def test_a_drop_in_with_an_older_abbreviation_is_scrubbed_from_the_unit_text():
    text = (f"# /etc/systemd/system/t.service\n[Service]\nExecStart={PY} --api-key {SECRET}\n\n"
            f"# /etc/systemd/system/t.service.d/override.conf\n[Service]\nExecStart=\nExecStart={PY} --api-ke {SECRET}x\n")
    s = build_snapshot(RawUnit(host="h", unit="t.service", text=text, source="systemctl cat"))
    out = stored(s)
    assert SECRET not in out
    assert "# /etc/systemd/system/t.service.d/override.conf" in s.unit_text  # still reviewable


def test_live_only_sources_are_scrubbed():
    s = snap(f"EnvironmentFile=/etc/e.env\nExecStart={PY}",
             environment_files={"/etc/e.env": f"DB_URL=postgres://app:{SECRET}@db/x\nANY={SECRET}y\n"},
             running_argv=PY.split() + ["--api-k", SECRET + "r"],
             loaded_exec_start=f"{{ path=/x ; argv[]={PY} --api-key {SECRET}l ; ignore_errors=no }}")
    out = stored(s)
    assert SECRET not in out
    assert "postgres://app:<redacted:" in out  # the user and host stay readable


@pytest.mark.parametrize("body, where", [
    (f"ExecStart={PY} --api-key \"{SECRET}", "t.service:5: Unbalanced quoting"),
    (f"ExecStart=/bin/x{SECRET}\\a --tp 1", "t.service:5: Executable name contains special characters"),
])
def test_error_messages_name_file_line_and_problem_never_the_value(body, where):
    with pytest.raises(UnitError) as exc:
        snap(body)
    assert where in str(exc.value) and str(exc.value).startswith("h:t.service")
    assert SECRET not in str(exc.value)


def test_drift_in_a_secret_stays_visible_as_a_changed_fingerprint():
    rules = load_rules(None)
    a = snap(f"Environment=DB_PASS={SECRET} MODE=x1#a\nExecStart={PY} --api-key {SECRET}")
    same = snap(f"Environment=DB_PASS={SECRET} MODE=x1#a\nExecStart={PY} --api-key={SECRET}")
    other = snap(f"Environment=DB_PASS={SECRET}2 MODE=x2#a\nExecStart={PY} --api-key {SECRET}2")
    assert not compare(Baseline(name="b", snapshot=a), same, rules).drift
    doc = comparison_to_dict(compare(Baseline(name="b", snapshot=a), other, rules))
    keys = {f["key"]: f for f in doc["findings"]}
    for key in ("env.DB_PASS", "env.MODE", "api_key"):
        assert keys[key]["current"] == "changed (redacted)", keys[key]
    assert SECRET not in json.dumps(doc) and "<redacted:" not in json.dumps(doc)


def test_abbreviations_of_engine_credential_flags_are_secret_names():
    from driftwatch.snapshots.snapshot import credential_options
    options = credential_options()
    assert "--api-key" in options and "--admin-api-key" in options
    assert is_secret_option("--api-k", options) and is_secret_option("--requirepass")
    assert not is_secret_option("--max-total-tokens", options) and not is_secret_option("--tokenizer-path")


@pytest.mark.parametrize("value", ["hunter2", "abc def", "Qwen/Qwen3-8B", "eyJabc", "/tmp/a\x07b"])
def test_words_that_are_not_plainly_public(value):
    assert not is_plain_public(value)


def test_planting_benchmark_finds_no_leak_through_the_api():
    from tools.planted_secrets import CASES, CLEAN, secret_for
    from tools.secret_outputs import api_outputs, leaked
    leaks = []
    for i, case in enumerate(CASES):
        secret = secret_for(i)
        outputs = api_outputs(case.raw, case.unit.replace("{S}", secret), CLEAN, secret)
        leaks += [(case.name, name) for name, out in outputs.items() if leaked(out, secret)]
    assert leaks == []


def test_reports_never_print_a_fingerprint_and_say_what_changed():
    from driftwatch.report import get_format
    rules = load_rules(None)
    a = snap(f"SetCredential=hf:{SECRET}\nX-Note=aaa1\nExecStart=/usr/bin/redis-server --requirepass {SECRET} --port 1")
    b = snap(f"SetCredential=hf:{SECRET}2\nX-Note=bbb2\nExecStart=/usr/bin/redis-server --requirepass {SECRET}2 --port 1")
    doc = comparison_to_dict(compare(Baseline(name="b", snapshot=a), b, rules))
    keys = {f["key"]: f for f in doc["findings"]}
    assert keys["unit.Service.SetCredential"]["current"] == "changed (redacted)"
    assert keys["unit.Service.SetCredential"]["baseline"] == "hf:(redacted)"
    for fmt in ("text", "json", "markdown", "html"):
        out = get_format(fmt).render_comparison(doc)
        assert "<redacted:" not in out and "&lt;redacted:" not in out and SECRET not in out, fmt


def test_vllm_serve_keeps_its_subcommand_and_cuts_secrets_out_of_a_config_file():
    s = snap(f"Environment=VLLM_API_KEY={SECRET}v\nExecStart=/opt/venv/bin/vllm serve --config /etc/vllm/q.yaml "
             f"--api-key {SECRET} --tensor-parallel-size 2",
             engine_files={"/etc/vllm/q.yaml": f"model: Qwen/Qwen3-8B\napi-key: {SECRET}c\nmax-num-seqs: 64\n"})
    assert s.launcher.engine_argv[0] == "serve"
    assert s.engine.flags["max_num_seqs"].value == 64 and s.engine.flags["model"].value == "Qwen/Qwen3-8B"
    out = stored(s)
    assert SECRET not in out and s.environment["VLLM_API_KEY"].startswith("<redacted:")
