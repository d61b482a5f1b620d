"""What a secret is by shape: detect-secrets' plugins, entropy, key material, credentials in URLs.

`detect_secrets_in` finds secrets in free text (the plugins' own regular expressions, high-entropy and
long hex words); `cut_credentials` fingerprints credentials inside a value (URL userinfo and query,
JSON keys, headers, connection-string parts, well-known token shapes); `is_plain_public` says when a
value's kind is plainly not a credential (a number, a path naming no key material, an address…).
"""
from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from typing import Any

from .fingerprints import fingerprint, is_redacted
from .policy import is_secret_name, is_secret_option, known_type, name_value_secret

_UNITS = r"(?:[kKMGTP]i?[bB]?|[kKMGT]iB|ms|us|ns|s|m|min|h|d|%)?"
_PLAIN = [
    re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?" + _UNITS),  # 4, 0.85, 1e400, 512M, 30s
    re.compile(r"(?i:true|false|yes|no|on|off|none|null|auto|all|void|default)"),
    re.compile(r"(?:(?:\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9A-Za-z/-]+),)*(?:\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9A-Za-z/-]+)"),
    re.compile(r"(?:\d+-\d+,)*\d+-\d+"),  # CPU ranges 0-15,32-47
    re.compile(r"(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?(?::\d{1,5})?|localhost(?::\d{1,5})?|:\d{1,5}"
               r"|\[[0-9a-fA-F:.]*\](?::\d{1,5})?|::"),
    re.compile(r"(?:(?:~|\.{1,2})?/[^\s:?#\x00-\x1f\x7f]*)(?::(?:~|\.{1,2})?/[^\s:?#\x00-\x1f\x7f]*)*"),
    re.compile(r"%[A-Za-z%]"),
]
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s\"']*")
_SHAPES = re.compile(  # well-known credential shapes, wherever they appear
    r"(?<![A-Za-z0-9])(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
    r"|-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,20000}?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|\Z)")


_KEY_MATERIAL = re.compile(r"(?i)(?:\.(?:key|pem|p12|pfx|jks|keystore|kdbx|gpg|asc)$"
                           r"|(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)"
                           r"|(?:^|[/._-])(?:secrets?|tokens?|passwords?|passwd|credentials?|private)(?:$|[/._-]))")


def names_key_material(path: str) -> bool:
    """A path whose words name key material (``…/server.key``, ``~/.ssh/id_rsa``, ``/run/secrets/…``),
    or with a segment that looks random (a base64 secret starting with "/")."""
    return _KEY_MATERIAL.search(path) is not None or any(looks_random(seg) for seg in path.split("/") if seg)


def is_plain_public(value: Any) -> bool:
    """A value whose kind is plainly not a credential: a number, a boolean, a path without userinfo,
    a device or CPU list, an address, a URL without credentials, a specifier, option words
    (``--tp 2 --port 30000``). Fingerprints are public too."""
    if not isinstance(value, str):
        return isinstance(value, (int, float, bool)) or value is None
    text = value.strip()
    if text == "" or is_redacted(text):
        return True
    if len(text) > 4096:
        return False
    if any(p.fullmatch(text) for p in _PLAIN):
        if _PLAIN[5].fullmatch(text) and not _PLAIN[0].fullmatch(text) and names_key_material(text):
            return False  # "/x8Kj2mQ9…=" is base64 that starts with "/", not a path; …/id_rsa is a key
        return True
    if _URL.fullmatch(text):
        return cut_credentials(text)[0] == text
    words = text.split()
    if len(words) > 1 or text.startswith("-"):
        expect_secret = False
        for w in words:
            if w.startswith("-") and len(w) > 1 and not _PLAIN[0].fullmatch(w):
                name, eq, val = w.partition("=")
                if is_secret_option(name):
                    return False
                if eq and not is_plain_public(val):
                    return False
                continue
            if expect_secret or not (is_redacted(w) or any(p.fullmatch(w) for p in _PLAIN)
                                     or (_URL.fullmatch(w) and cut_credentials(w)[0] == w)):
                return False
        return not expect_secret
    return False


# --------------------------------------------------------------------------- plain words and references

# `${NAME}` (any name) or `$NAME` (capitals): a reference to another variable, not a value of its own
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]{0,80}\}|\$[A-Z_][A-Z0-9_]{0,80}(?![a-z])")
_BRACED_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]{0,80}\}")
_BETWEEN_REFERENCES = re.compile(r"[\s/:,._@+-]*")
# a word or an identifier: a backend, a dtype, a stage, a region, an image name, a list of words, a path
_WORD = re.compile(r"[A-Za-z0-9_%~./][A-Za-z0-9_.+:/@%,~<>=-]{0,1023}")
_PUNCTUATION = re.compile(r"[^A-Za-z0-9\s]{1,3}")  # a stray `\`, `;`, `&&`: nothing to hide
_WORD_PIECES = re.compile(r"[^/:,._@+~%<>=-]+")
_MIXED = (re.compile(r"[a-z]"), re.compile(r"[A-Z]"), re.compile(r"[0-9]"))


def is_reference(value: str, braced_only: bool = False) -> bool:
    """A value made only of references to other variables (``${VLLM_USE_FLASHINFER_MOE_FP8}``,
    ``${HOME}/models``): it names where a value comes from and holds none. `braced_only`: ``${NAME}``
    only (under a secret name, a password such as ``$ECRET`` must not pass for a reference)."""
    if not isinstance(value, str) or "$" not in value:
        return False
    pattern = _BRACED_REFERENCE if braced_only else _REFERENCE
    rest = pattern.sub("", value)
    if rest == value or _BETWEEN_REFERENCES.fullmatch(rest) is None:
        return False
    # a name of a random or a password's shape (`${Zq4xPLANTEDv8kW3}`) is a secret written like a reference
    names = (m.group(0).strip("${}") for m in pattern.finditer(value))
    return not any(looks_random(n) or _password_like(p) for n in names for p in n.split("_"))


_LETTERS_DIGITS = re.compile(r"(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")


def _password_like(piece: str) -> bool:
    """A piece of 8 characters or more mixing lower case, capitals and digits with no separator
    (``P4ssw0rd9``, ``Summer2024``), or of 10 or more where letters and digits alternate four times or
    more (``x7k2m9p4q8w1``, a generated password too short for the entropy test): the shape of a
    password, not of a setting's word (``fp8_e5m2``, ``Qwen3``, ``llama3instruct`` are none)."""
    if len(piece) < 8:
        return False
    if all(p.search(piece) for p in _MIXED):
        return True
    return len(piece) >= 10 and len(_LETTERS_DIGITS.findall(piece)) >= 4


def is_plain_word(value: Any) -> bool:
    """A value made of plain words or identifiers (``flashinfer``, ``fp8_e5m2``, ``all,video``,
    ``staging``, ``vllm/vllm-openai:v0.11.0``, ``${HOME}/models``, a stray ``\\``): shown under a name that
    says nothing secret. Not one: a word the detectors flag (detect-secrets' plugins, a random-looking or
    password-shaped piece, a long hex run), a path or word naming key material (``…/server.key``,
    ``my-secret``), credentials inside (a URL's userinfo or query), an option (``--api-key …``: see
    `is_plain_public`), quotes or other punctuation (``Summer2024!``)."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if not text or len(text) > 4096:
        return not text
    if detect_secrets_in(text) or cut_credentials(text)[0] != text:
        return False
    for token in text.split():
        if _PUNCTUATION.fullmatch(token) and not token.startswith("-"):
            continue
        bare = _REFERENCE.sub(lambda m: "x" if is_reference(m.group(0)) else m.group(0), token)
        if not _WORD.fullmatch(bare) or names_key_material(bare):
            return False
        if any(looks_random(p) or _password_like(p) for p in _WORD_PIECES.findall(bare)):
            return False
    return True


# --------------------------------------------------------------------------- the secret detector

_DETECTOR: list | None = None


def _detector_regexes() -> list:
    """detect-secrets' token-format plugins (AWS, Azure storage keys, GitHub, GitLab, Slack, Discord,
    Telegram, Stripe, Twilio, SendGrid, npm, PyPI, OpenAI, JWT, private keys, basic auth …): their
    own regular expressions, run on free text. Taken from the release by tools/gen_secret_patterns.py
    (data/secret_patterns.json, tested current): importing detect-secrets would cost every command
    ~130 ms."""
    global _DETECTOR
    if _DETECTOR is None:
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "secret_patterns.json")
        with open(path, encoding="utf-8") as fh:
            _DETECTOR = [re.compile(p["pattern"], p["flags"]) for p in json.load(fh)["patterns"]]
    return _DETECTOR


def _entropy(data: str) -> float:
    import math
    counts: dict[str, int] = {}
    for c in data:
        counts[c] = counts.get(c, 0) + 1
    n = len(data)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,4096}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX_RUN = re.compile(r"(?<![A-Za-z0-9/._-])[0-9a-fA-F]{32,512}(?![A-Za-z0-9/._-])")


def looks_random(word: str) -> bool:
    """A word that looks like key material (detect-secrets' high-entropy test, with limits for short
    strings, which cannot reach its 4.5 bits per character): base64 letters with upper case, lower case
    and digits; 16-19 characters need two digits and 3.5 bits, 20-40 characters 4.0 bits, longer 4.5;
    few separators (paths and names are words joined by separators)."""
    core = word.rstrip("=")
    if len(core) < 16 or not (re.search(r"[a-z]", core) and re.search(r"[A-Z]", core) and re.search(r"\d", core)):
        return False
    if core.count("/") + core.count("-") + core.count("_") > max(2, len(core) // 12):
        return False
    if len(core) < 20:  # short: no separators at all (Qwen2-7B-Instruct is a name, not a key)
        return not re.search(r"[-_/]", core) and len(re.findall(r"\d", core)) >= 2 and _entropy(core) >= 3.5
    limit = 4.0 if len(core) <= 40 else 4.5
    return _entropy(core) >= limit


_LONG_WORD = re.compile(r"\S{16}")


def detect_secrets_in(text: str) -> list[str]:
    """Secrets a maintained detector finds in free text: detect-secrets' token formats and keyword
    plugin, high-entropy words, long hex words standing alone."""
    if not text or len(text) < 16 or not _LONG_WORD.search(text):
        return []  # every form below is 16 characters or more without a space
    if len(text) <= _REMEMBERED_TEXT:  # a fleet's hosts share most words and lines: each scanned once
        return list(_detect_remembered(text))
    return _detect(text)


_REMEMBERED_TEXT = 4096  # texts up to this long are remembered (at most 8192 of them: 32 MiB)


@functools.lru_cache(maxsize=8192)
def _detect_remembered(text: str) -> tuple[str, ...]:
    """`_detect`, a pure function of the text, remembered: 1 000 hosts running the same unit scan its
    words once, not 1 000 times (about a fifth of parsing a host's answer)."""
    return tuple(_detect(text))


def _detect(text: str) -> list[str]:
    found: list[str] = []
    sample = text[:1_000_000]
    for regex in _detector_regexes():
        for m in regex.finditer(sample):
            groups = [g for g in m.groups() if g] if m.groups() else []
            secret = max(groups, key=len) if groups else m.group(0)
            if len(secret) >= 6 and not is_redacted(secret):
                found.append(secret)
    for m in _B64_RUN.finditer(sample):
        run = m.group(0)
        if looks_random(run):
            found.append(run)
        elif "/" in run:
            found += [seg for seg in run.split("/") if looks_random(seg)]
    for m in _HEX_RUN.finditer(sample):
        if _entropy(m.group(0)) >= 3.0:
            found.append(m.group(0))
    return found


# --------------------------------------------------------------------------- credentials inside values

_SECRET_QUERY = {"token", "access_token", "auth", "auth_token", "sig", "signature", "key", "apikey", "api_key",
                 "password", "pass", "pwd", "secret", "client_secret", "code", "session", "jwt", "x-amz-signature",
                 "x-amz-credential", "x-amz-security-token", "x-goog-signature", "x-goog-credential", "hf_token",
                 "private_token", "refresh_token", "id_token"}
# words before a colon that are not HTTP headers naming a secret (log lines: "key: …" of a table)
_NOT_HEADERS = {"tokens", "keys"}
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://)([^/\s@?#\"']{1,512})@")
_QUERY = re.compile(r"([?&;#])([A-Za-z0-9_.\[\]-]{1,64})=([^&#\s\"'<>;]{1,4096})")
_URL_PATH = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://[^/\s\"'?#]{1,255})(/[^\s\"'?#<>]{0,4096})")
# a connection-string part or a NAME=value word: AccountKey=…; Password=…; SharedAccessSignature=…
_PART = re.compile(r"(?<![A-Za-z0-9_.-])([A-Za-z][A-Za-z0-9_. -]{0,63}?)\s{0,4}=\s{0,4}([^;\s\"'&,]{1,4096})")
_HEADER = re.compile(r"(?i)(?<![A-Za-z0-9_-])([A-Za-z][A-Za-z0-9_-]{0,60})\s{0,8}:\s{0,8}"
                     r"((?:(?:bearer|basic|token|digest|apikey|negotiate|ntlm)\s{1,8})?)([^\s\"'\\,;]{1,4096})")
_JSON_KEY = re.compile(r"([\"'])([A-Za-z0-9_. -]{1,64})\1\s{0,8}:\s{0,8}([\"'])((?:\\.|(?!\3)[^\\]){0,4096})(?:\3|$)")
_JSON_SCALAR = re.compile(r"([\"'])([A-Za-z0-9_. -]{1,64})\1\s{0,8}:\s{0,8}(-?[0-9][0-9.eE+-]{0,40}|true|false)")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def _secret_query_key(name: str, value: str = "") -> bool:
    lower = name.lower()
    if lower in _SECRET_QUERY or lower.startswith(("x-amz-sig", "x-amz-cred")):
        return True
    return name_value_secret(name, value)


_SEGMENT = re.compile(r"[^/]+")


def _url_path(path: str, keep: Callable[[str], str]) -> str:
    """Tokens in a URL's path: random-looking segments, a bot token (``/bot123:ABC``), and what follows
    a segment named like a secret (``/webhooks/ID/TOKEN``, ``/token/…``, ``/key/…``)."""
    segments = path.split("/")
    after_secret = False
    for i, seg in enumerate(segments):
        if not seg or is_redacted(seg):
            continue
        bot = re.fullmatch(r"(bot)(\d{5,12}:[A-Za-z0-9_-]{20,})", seg)
        if bot:
            segments[i] = bot.group(1) + keep(bot.group(2))
            continue
        if after_secret and not re.fullmatch(r"\d{1,20}", seg):
            segments[i] = keep(seg)
            continue
        if looks_random(seg) or (len(seg) >= 32 and re.fullmatch(r"[0-9a-fA-F]+", seg) and after_secret):
            segments[i] = keep(seg)
            continue
        if is_secret_name(seg) and not re.search(r"\.[a-z]{2,4}$", seg):
            after_secret = True
    return "/".join(segments)


def cut_credentials(text: str) -> tuple[str, list[str]]:
    """(text with every credential inside it fingerprinted, the clear credentials found).

    URL userinfo (``scheme://user:PASS@``: the password; ``scheme://TOKEN@``: all of it), secret query
    parameters, JSON/dict values under secret keys, secret HTTP headers, well-known token shapes."""
    if not isinstance(text, str) or not text:
        return text, []
    found: list[str] = []

    def keep(secret: str) -> str:
        if is_redacted(secret) or not secret:
            return secret
        found.append(secret)
        return fingerprint(secret)

    def userinfo(m: re.Match) -> str:
        info = m.group(2)
        if is_redacted(info):
            return m.group(0)
        user, colon, password = info.partition(":")
        if colon:
            return f"{m.group(1)}{user}:{keep(password)}@" if password and not is_redacted(password) else m.group(0)
        return f"{m.group(1)}{keep(info)}@"

    def query(m: re.Match) -> str:
        if not _secret_query_key(m.group(2), m.group(3)) or is_redacted(m.group(3)):
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}={keep(m.group(3))}"

    def header(m: re.Match) -> str:
        name, scheme, value = m.group(1), m.group(2), m.group(3)
        if is_redacted(value) or not (scheme or (is_secret_name(name) and known_type(name) is None
                                                 and name.lower() not in _NOT_HEADERS)):
            return m.group(0)
        return f"{name}: {scheme}{keep(value)}"

    def json_key(m: re.Match) -> str:
        value = m.group(4)
        if not value or is_redacted(value):
            return m.group(0)
        if not name_value_secret(m.group(2), value):
            return m.group(0)
        closing = m.group(3) if m.group(0).endswith(m.group(3)) and len(m.group(0)) > m.start(4) - m.start(0) \
            + len(value) else ""
        return f"{m.group(1)}{m.group(2)}{m.group(1)}: {m.group(3)}{keep(value)}{closing}"

    def json_scalar(m: re.Match) -> str:
        if not name_value_secret(m.group(2), m.group(3)) or known_type(m.group(2)) is not None:
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{m.group(1)}: {keep(m.group(3))}"

    def part(m: re.Match) -> str:
        name, value = m.group(1).strip(), m.group(2)
        if is_redacted(value) or not name_value_secret(name.replace(" ", "_"), value):
            return m.group(0)
        return m.group(0)[:m.start(2) - m.start(0)] + keep(value)

    def url_path(m: re.Match) -> str:
        return m.group(1) + _url_path(m.group(2), keep)

    if "@" in text:
        text = _USERINFO.sub(userinfo, text)
    if "://" in text:
        text = _URL_PATH.sub(url_path, text)
    if "=" in text:
        text = _QUERY.sub(query, text)
    if ":" in text:
        text = _JSON_KEY.sub(json_key, text)
        text = _JSON_SCALAR.sub(json_scalar, text)
        text = _HEADER.sub(header, text)
    if "=" in text:
        text = _PART.sub(part, text)
    text = _SHAPES.sub(lambda m: keep(m.group(0)), text)
    return text, found
