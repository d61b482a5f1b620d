"""Keep secrets on the host: redact API keys and secret-looking environment values before any output.

A redacted value becomes `<redacted:XXXXXXXXXXXX>`, a short SHA-256 fingerprint, so two snapshots can
still tell "unchanged" from "changed" without either holding the secret. Reports never show the
fingerprint: they say "(redacted)" or "changed (redacted)".
"""
from __future__ import annotations

import hashlib
import re

REDACTED_PREFIX = "<redacted:"
_SECRET_ENV_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL")
_SECRET_FIELD_PARTS = {"key", "secret", "password", "passwd", "credential", "credentials"}
# `*_token` fields that hold credentials (hf_token, api_token); not counts like `…_per_token`.
_TOKEN_OWNERS = {"hf", "api", "auth", "access", "bearer", "github", "gh", "wandb", "hub", "admin", "session",
                 "refresh", "id", "secret", "bot", "service", "client"}


def is_secret_env(name: str) -> bool:
    """HF_TOKEN, OPENAI_API_KEY, DB_PASSWORD: yes. TOKENIZERS_PARALLELISM: no (TOKEN must be a word)."""
    upper = name.upper()
    if any(word in upper for word in _SECRET_ENV_WORDS if word != "TOKEN"):
        return True
    return any(part in ("TOKEN", "AUTH") or part.endswith("TOKEN") for part in upper.split("_"))


def is_secret_field(name: str) -> bool:
    """api_key, admin_api_key, hf_token, ssl_keyfile_password: yes; max_total_tokens, tokenizer_path: no."""
    parts = name.lower().replace("-", "_").strip("_").split("_")
    if _SECRET_FIELD_PARTS.intersection(parts):
        return True
    return parts[-1] == "token" and (len(parts) == 1 or parts[-2] in _TOKEN_OWNERS)


def is_secret_option(option: str) -> bool:
    return is_secret_field(option.split("=", 1)[0].lstrip("-"))


def fingerprint(value: str) -> str:
    digest = hashlib.sha256(b"driftwatch-redact:" + str(value).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{REDACTED_PREFIX}{digest[:12]}>"


def is_redacted(value) -> bool:
    return isinstance(value, str) and value.startswith(REDACTED_PREFIX) and value.endswith(">")


def redact_value(value):
    if value is None or is_redacted(value):
        return value
    return fingerprint(value)


def redact_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """argv with secret option values replaced, plus the clear-text secrets found (to scrub raw text)."""
    out: list[str] = []
    secrets: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word.startswith("--") and is_secret_option(word):
            if "=" in word:
                name, value = word.split("=", 1)
                if value and not is_redacted(value):
                    secrets.append(value)
                    word = f"{name}={fingerprint(value)}"
                out.append(word)
            else:
                out.append(word)
                if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                    value = argv[i + 1]
                    if not is_redacted(value):
                        secrets.append(value)
                        value = fingerprint(value)
                    out.append(value)
                    i += 1
        else:
            out.append(word)
        i += 1
    return out, secrets


_INLINE_SECRET = re.compile(r"(--[A-Za-z0-9-]*(?:api-key|token|secret|password|passwd|credential)[A-Za-z0-9-]*)"
                            r"(=|\s+)(\"[^\"]*\"|'[^']*'|[^\s\"']+)", re.IGNORECASE)
_ENV_SECRET = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL)[A-Za-z0-9_]*)"
                         r"=(\"[^\"]*\"|'[^']*'|[^\s\"']+)", re.IGNORECASE)


def scrub_text(text: str, secrets: list[str]) -> str:
    """Remove secrets from raw unit text: known values first, then anything that looks like one."""
    text = scrub(text, sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True))

    def flag(m: re.Match) -> str:
        if not is_secret_option(m.group(1)) or is_redacted(m.group(3).strip("'\"")):
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{fingerprint(m.group(3).strip(chr(34) + chr(39)))}"

    def env(m: re.Match) -> str:
        value = m.group(2).strip("'\"")
        if is_redacted(value) or not is_secret_env(m.group(1)):
            return m.group(0)
        return f"{m.group(1)}={fingerprint(value)}"

    text = _INLINE_SECRET.sub(flag, text)
    return _ENV_SECRET.sub(env, text)


_FINGERPRINT = re.compile(r"<redacted:[0-9a-f]*>")


def mask_fingerprints(text: str) -> str:
    """Reports say "(redacted)", never the fingerprint (short hashes of weak secrets can be guessed)."""
    return _FINGERPRINT.sub("(redacted)", text)


_QUOTED_ENV_SECRET = re.compile(r"([\"'])([A-Za-z_][A-Za-z0-9_]*)=(.*?)\1")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


_URL_USERINFO = re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:([^/\s@]+)@", re.IGNORECASE)


def find_secrets(argvs: list[list[str]], environments: list[dict[str, str]], texts: list[str],
                 secret_flag_values: list[str]) -> list[str]:
    """Every clear-text secret we can see, so it can be replaced wherever it appears.

    Sources: values of secret flags (however spelled, found by the typed parse), NAME=VALUE argv
    words and environment entries with secret-looking names, and assignments in the raw unit text
    (including ones a drop-in overrides later)."""
    found = [str(v) for v in secret_flag_values if v not in (None, "")]
    for argv in argvs:
        found += redact_argv(argv)[1]
        for word in argv:
            m = _ASSIGN.match(word)
            if m and is_secret_env(m.group(1)):
                found.append(m.group(2))
    for env in environments:
        found += [v for k, v in env.items() if is_secret_env(k)]
        found += [m.group(1) for v in env.values() for m in _URL_USERINFO.finditer(v)]  # scheme://u:PASS@
    for argv in argvs:
        found += [m.group(1) for w in argv for m in _URL_USERINFO.finditer(w)]
    for text in texts:
        found += [m.group(1) for m in _URL_USERINFO.finditer(text)]
        for m in _QUOTED_ENV_SECRET.finditer(text):
            if is_secret_env(m.group(2)):
                found.append(m.group(3))
        for m in _ENV_SECRET.finditer(text):
            if is_secret_env(m.group(1)):
                found.append(m.group(2).strip("'\""))
    return sorted({s for s in found if s and not is_redacted(s) and len(s) >= 3}, key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    """Replace every known secret (longest first) by its fingerprint."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, fingerprint(secret))
    return text
