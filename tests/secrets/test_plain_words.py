"""docs/secrets.md, "The rule in one paragraph": a value is hidden for what it is (its name's secret words,
its shape, its meaning in the engines' tables), and every other value, a plain word included, is shown."""
from __future__ import annotations

import pytest
from secrets_corpus import leaked

from driftwatch.collect.raw import RawUnit
from driftwatch.redact import Redactor, is_plain_word, is_reference
from driftwatch.snapshots.snapshot import build_snapshot

PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/Qwen3.6-27B --tp-size 2"


def snap(body: str):
    text = f"[Unit]\nDescription=t\n\n[Service]\n{body}\n"
    return build_snapshot(RawUnit(host="h", unit="t.service", text=text, source="file"))


@pytest.mark.parametrize("value", [
    "flashinfer", "fp8_e5m2", "info", "staging", "eu-west-1", "all,video", "cuda>=12.4", "H100", "main",
    "vllm/vllm-openai:v0.11.0", "Qwen/Qwen3-8B", "/srv/tiktoken-cache", "ops@example.com", "\\", "on-failure",
    "${HOME}/models", "hunter2", "two words", "llama3instruct", "9c925d6", "release-20240101",
])
def test_plain_words(value):
    assert is_plain_word(value)


@pytest.mark.parametrize("value", [
    "Summer2024!", "P4ssw0rd9", "Summer2024", "Zq9xPLANTEDv8kW3", "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",
    "AKIAJ7Q3EXAMPLEZ2XYQ", "my-secret", "/etc/ssl/private/server.key", "--api-key x", "'quoted'",
    "https://u:pw@host/x", "https://h/x?token=abc", "9c925d64d72725edaf899c6cb9c377fd0709d9c5",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcHMifQ.Qk3vT9xR2mLp8sNw4ZyH6jDcFa1uBe7oGi5KtXqWr0s",
    "${Zq40xPLANTEDv8kW3}", "${BASE}Zq40xPLANTEDv8kW3", "<redacted:abcdef.0123456789abcdef>",
    "x7k2m9p4q8w1", "a3f9c2e1b7d4e5f6",
])
def test_not_plain_words(value):
    assert not is_plain_word(value)


def test_references_name_where_a_value_comes_from():
    assert is_reference("${VLLM_USE_FLASHINFER_MOE_FP8}") and is_reference("$HOME") and is_reference("${A}:${B}")
    assert not is_reference("${HOME}/models")  # a reference and a path: a plain word, judged as one
    assert not is_reference("$ECRET99", braced_only=True) and is_reference("${HF_TOKEN}", braced_only=True)
    assert not is_reference("${PREFIX}hunter3") and not is_reference("${Zq40xPLANTEDv8kW3}")


@pytest.mark.parametrize("name, value", [
    ("ATTENTION_BACKEND", "flashinfer"), ("KV_CACHE_DTYPE", "fp8_e5m2"), ("TRANSFORMERS_VERBOSITY", "info"),
    ("TIKTOKEN_CACHE_DIR", "/srv/tiktoken"), ("NVIDIA_DRIVER_CAPABILITIES", "all,video"), ("DEPLOY_ENV", "staging"),
    ("FOO", "hunter2"), ("VLLM_USE_FLASHINFER_MOE_FP8", "${VLLM_USE_FLASHINFER_MOE_FP8}"), ("HF_TOKEN", "${HF_TOKEN}"),
])
def test_shown_under_a_name_without_a_secret_word(name, value):
    assert snap(f"Environment={name}={value}\nExecStart={PY}").environment[name] == value


@pytest.mark.parametrize("name, value", [
    ("DB_PASS", "hunter2"), ("MYSQL_PWD", "letmein1"), ("REDISPASSWORD", "swordfish"), ("DB_PASSWORD", "$ECRET99"),
    ("DB_PASS", "${PREFIX}hunter3"), ("LOGIN", "Summer2024!"), ("DB_LOGIN", "P4ssw0rd9"),
    ("VLLM_USE_FLASHINFER_MOE_FP8", "hunter2"),  # a typed bool: a word is not one
    ("TIKTOKEN_CACHE_DIR", "Zq9xPLANTEDv8kW3"),  # a curated name, key material all the same
])
def test_hidden_by_name_shape_or_type(name, value):
    env = snap(f"Environment={name}={value}\nExecStart={PY}").environment
    assert env[name].startswith("<redacted:"), env


def test_a_swallowed_directive_is_read_by_its_name():
    """`ExecStart=… \\` followed by `Restart=on-failure`: systemd reads the directive as an argument; its
    name decides, so a swallowed DB_PASS=… stays hidden."""
    s = snap(f"ExecStart={PY} \\\nRestart=on-failure")
    assert "Restart=on-failure" in s.argv
    s = snap(f"ExecStart={PY} \\\nDB_PASS=hunter2")
    assert any(w.startswith("DB_PASS=<redacted:") for w in s.argv) and "hunter2" not in str(s.argv)


def test_a_stray_backslash_is_shown():
    s = snap(f"ExecStart={PY} \\ \n  --port 30000")
    assert s.argv[-1] == "\\"


def test_load_credential_source_shown_unless_it_looks_like_a_key():
    policy = Redactor()
    assert policy.unit_value("Service", "LoadCredential", "hf:/etc/credstore/hf-token") == "hf:/etc/credstore/hf-token"
    assert policy.unit_value("Service", "LoadCredential", "hf:hf-token") == "hf:hf-token"
    assert "<redacted:" in policy.unit_value("Service", "LoadCredential", "hf:/etc/c/Zq9xPLANTEDv8kW3")
    assert "<redacted:" in policy.unit_value("Service", "LoadCredential", "hf:Zq9xPLANTEDv8kW3")


def test_a_vendor_key_shows_a_word_unless_its_name_says_secret():
    policy = Redactor()
    assert policy.unit_value("Service", "X-Deploy-Env", "canary") == "canary"
    assert policy.unit_value("Service", "X-Deploy-Secret", "canary").startswith("<redacted:")
    assert policy.unit_value("Service", "X-Deploy-Env", "Summer2024!").startswith("<redacted:")


def test_cache_key_in_an_engine_json_flag_is_shown_and_a_secret_beside_it_is_not():
    vllm = "/opt/venv/bin/vllm serve Qwen/Qwen3-8B"
    s = snap(f"ExecStart={vllm} --kv-transfer-config '{{\"kv_connector\": \"LMCacheConnectorV1\", "
             f"\"kv_connector_extra_config\": {{\"cache_key\": \"sha256\", \"api_key\": \"hunter5\"}}}}'")
    flat = str(s.argv)
    assert '"cache_key": "sha256"' in flat or '\\"cache_key\\": \\"sha256\\"' in flat, flat
    assert "hunter5" not in flat


def test_the_leak_check_sees_a_short_secret_shown_as_a_word():
    """The harness itself (tools/secret_outputs.leaked): a secret under 8 characters leaks where it
    stands as a word, not inside a longer one."""
    assert leaked("FOO=hunter2\n", "hunter2") and leaked('"hunter2"', "hunter2")
    assert not leaked("hunter22 xhunter2", "hunter2")
