"""The name and value rules of docs/secrets.md, one by one (no CLI)."""
from __future__ import annotations

import json

import pytest

from driftwatch.redact import (
    Redactor,
    cut_credentials,
    detect_secrets_in,
    is_plain_public,
    is_secret_env,
    is_secret_name,
    is_secret_option,
    known_type,
    split_name,
)


@pytest.mark.parametrize("name", ["SGLANG_S3SECRETKEY", "VLLM_PRIVATEKEY", "NCCL_DBPASS", "apiToken", "X-Auth-Key",
                                  "AccountKey", "pw", "GH_PAT", "SLACK_WEBHOOK", "SENTRY_DSN", "SESSIONID",
                                  "my.cookie", "Authorization", "PRIVATE-TOKEN"])
def test_a_secret_word_anywhere_makes_a_name_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["max_new_tokens", "tokenizer_path", "KEYBOARD_LAYOUT", "MODEL_NAME", "LOG_LEVEL",
                                  "CUDA_VISIBLE_DEVICES", "NCCL_IB_HCA", "author"])
def test_names_that_only_look_alike_are_not(name):
    assert not is_secret_name(name)


def test_known_names_of_a_non_secret_type_win_over_their_words():
    assert known_type("SGLANG_INIT_NEW_TOKEN_RATIO") == "float"
    assert known_type("VLLM_MULTI_STREAM_GEMM_TOKEN_THRESHOLD") == "int"
    assert known_type("VLLM_API_KEY") == "str" and is_secret_env("VLLM_API_KEY")
    assert not is_secret_env("SGLANG_INIT_NEW_TOKEN_RATIO") and not is_secret_env("TOKENIZERS_PARALLELISM")
    r = Redactor()
    assert r.env_value("SGLANG_INIT_NEW_TOKEN_RATIO", "0.35") == "0.35"
    assert r.env_value("SGLANG_INIT_NEW_TOKEN_RATIO", "hunter2").startswith("<redacted:")
    assert r.env_value("NCCL_DBPASS", "1").startswith("<redacted:")  # an allowlisted prefix does not help


def test_options_of_other_programs():
    assert is_secret_option("--masterauth") and is_secret_option("--authkey")
    assert not is_secret_option("--max-total-tokens") and not is_secret_option("--port")
    r = Redactor()
    assert r.words(["redis-cli", "-a", "pw1", "ping"])[2].startswith("<redacted:")
    assert r.words(["mysql", "-pS3cr3t", "db"])[1].startswith("-p<redacted:")
    assert r.words(["curl", "-u", "bob:pw1", "http://x"])[2].startswith("bob:<redacted:")
    assert r.words(["x", "--api-key", "-Xy"])[2].startswith("<redacted:")


@pytest.mark.parametrize("text, secret, kept", [
    ("https://hooks.slack.com/services/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", "q8Wm3Zr7Xk2Lp9Vn4Tb6Yc1d",
     "hooks.slack.com/services/"),
    ("https://x.example/api?apiToken=S3cretValue&model=qwen", "S3cretValue", "model=qwen"),
    ("https://app.example/cb#access_token=S3cretValue&state=1", "S3cretValue", "state=1"),
    ('{"Authorization": "Bearer S3cretValue", "model": "q"}', "S3cretValue", '"model": "q"'),
    ('{"pw": "S3cretValue"}', "S3cretValue", '"pw"'),
    ('{"password": "S3cretValue', "S3cretValue", '"password"'),
    ("AccountName=acc;AccountKey=S3cretValue==;EndpointSuffix=core", "S3cretValue", "AccountName=acc"),
    ('-H "PRIVATE-TOKEN: S3cretValue"', "S3cretValue", "PRIVATE-TOKEN"),
    ('{"key_prefix": "kvprod", "max_tokens": 5}', None, '"key_prefix": "kvprod"'),
])
def test_credentials_in_free_text(text, secret, kept):
    out, _ = cut_credentials(text)
    assert kept in out
    if secret:
        assert secret not in out
    else:
        assert out == text


def test_the_detector():
    assert detect_secrets_in("aws AKIAIOSFODNN7EXAMPLE x")
    assert detect_secrets_in("echo Zq9xPLANTEDv8kW3 > /run/x") == ["Zq9xPLANTEDv8kW3"]
    assert not detect_secrets_in("/root/models/Qwen3-30B-A3B-Instruct-2507-FP8 Qwen3ForCausalLM --tp 2")
    assert not is_plain_public("/x8Kj2mQ9vLp4Rt7Ws1Yz6Nb3Hc5Fd0Ga=") and not is_plain_public("/etc/ssl/server.key")
    assert is_plain_public("/data/hf/models--Qwen--Qwen3-8B/snapshots/9c925d64d72725edaf899c6cb9c377fd0709d9c5")


def test_the_env_tables_are_current():
    from tools import gen_env_types
    assert gen_env_types.main(["--check"]) == 0


def test_every_shipped_release_has_its_env_table():
    """Each SGLang release with a flag catalog (full or delta) has the table of its own wheel, and each
    vLLM release's envs file (full or rebuilt from its delta chain) feeds the union: a variable a newer
    release added is typed, not judged by its name alone."""
    import os

    from tools import gen_env_types
    sglang = gen_env_types._versions("sglang")
    tables = os.listdir(os.path.join(gen_env_types.ENGINES, "sglang", "envs"))
    assert len(sglang) >= 28 and all(f"envs-{v}.json" in tables for v in sglang)
    vllm = gen_env_types.vllm_tables()
    assert set(vllm) == set(gen_env_types._versions("vllm"))
    union = json.loads(open(gen_env_types.OUT, encoding="utf-8").read())["types"]
    newest = vllm[max(vllm, key=lambda v: tuple(int(x) for x in v.split(".")))]
    assert set(newest) <= set(union)  # the newest release's variables (a delta) are in the union


def test_the_detector_patterns_are_current():
    """data/secret_patterns.json is what the installed detect-secrets' token plugins say, and the
    policy runs those patterns (a GitHub token is found) without importing detect-secrets."""
    import subprocess
    import sys

    from tools import gen_secret_patterns
    assert gen_secret_patterns.main(["--check"]) == 0
    code = ("import sys; from driftwatch.redact import detect_secrets_in; "
            "found = detect_secrets_in('curl -H x ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'); "
            "print(bool(found), any(m.startswith('detect_secrets') for m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["True", "False"], run.stdout + run.stderr


def test_the_secret_word_search_before_the_word_tests_never_changes_an_answer():
    """`_is_secret_option` asks one regular expression before the word tests (4 000 unknown options of a
    hostile unit); on options made of every secret and harmless word, glued, cased and separated every way,
    and of the credential flags' prefixes, it answers as the word tests alone do."""
    import random

    from driftwatch.redact import policy as redact
    rng = random.Random(21)
    words = sorted({*redact.SECRET_WORDS, *redact.SECRET_SHORT_WORDS, *redact._HARMLESS_WORDS,
                    *redact._SECRET_OPTION_WORDS, *redact._SECRET_FIELD_PARTS, "model", "tp", "max", "len", "x",
                    "api", "k", "ey", "pa", "ss", "to", "ken", "p", "w", "hf", "se", "cret", "é", "İ"})
    credential = ("--api-key", "--hf-token", "--ssl-keyfile-password", "--admin-api-key")
    options = [c[:n] for c in credential for n in range(2, len(c) + 1)]
    for _ in range(6000):
        parts = [rng.choice(words) for _ in range(rng.randint(1, 4))]
        parts = [p.upper() if rng.random() < 0.2 else p.capitalize() if rng.random() < 0.2 else p for p in parts]
        glue = rng.choice(["", "-", "_", ".", "--"])
        options.append(rng.choice(["--", "-", "---"]) + glue.join(parts) + rng.choice(["", "=v"]))
    slow_answers = 0
    for option in options:
        name = option.split("=", 1)[0]
        expected = redact._is_secret_option_by_words(name, name.lstrip("-"), credential)
        assert redact._is_secret_option(option, credential) == expected, option
        slow_answers += expected
    assert 1000 < slow_answers < len(options) - 1000  # both answers are well represented


def test_the_secret_word_search_before_the_name_words_never_changes_an_answer():
    """`is_secret_name` answers "no" at once when no secret word is anywhere in the name's letters and
    digits; that holds because every harmless word ("tokens", "keyboard") holds a secret word, so none was
    left out between two halves of one. On names glued, cased and separated every way, it answers as the
    word tests alone do."""
    import random

    from driftwatch.redact import policy as redact
    assert all(any(w in harmless for w in redact.SECRET_WORDS) for harmless in redact._HARMLESS_WORDS)
    rng = random.Random(22)
    words = sorted({*redact.SECRET_WORDS, *redact.SECRET_SHORT_WORDS, *redact._HARMLESS_WORDS, "model", "max", "k0",
                    "pa", "ss", "to", "ken", "p", "w", "se", "cret", "ke", "y", "é", "İ", "3"})
    slow_answers = names = 0
    for _ in range(6000):
        parts = [rng.choice(words) for _ in range(rng.randint(1, 4))]
        parts = [p.upper() if rng.random() < 0.2 else p.capitalize() if rng.random() < 0.2 else p for p in parts]
        name = rng.choice(["", "-", "_", ".", "__", " "]).join(parts)
        expected = redact._is_secret_name_by_words(name)
        assert redact.is_secret_name.__wrapped__(name) == expected, name
        slow_answers += expected
        names += 1
    assert 1000 < slow_answers < names - 1000  # both answers are well represented


@pytest.mark.parametrize("name, words", [
    ("SGLANG_S3SECRETKEY", ["sglang", "s3", "secretkey"]), ("apiToken", ["api", "token"]), ("X-Auth-Key", ["x", "auth", "key"]),
    ("HTTPProxyURL", ["http", "proxy", "url"]), ("num_speculative_tokens", ["num", "speculative", "tokens"]),
    ("k10002", ["k10002"]), ("db.pass-word", ["db", "pass", "word"]), ("__", []), ("123", ["123"]),
    ("mixedCase_and_lower", ["mixed", "case", "and", "lower"]), ("s3Key", ["s3", "key"]),
])
def test_the_words_of_a_name(name, words):
    """Lowercase names (JSON keys: thousands in a hostile value) skip the capital splitting; the words are
    the same either way."""
    assert split_name(name) == words
