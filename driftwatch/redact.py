"""Keep secrets on the host: a value is stored or shown in clear only when driftwatch knows it is not secret.

The policy (README, "Secrets"):

- a **typed engine flag** is shown in clear unless it is a credential (a string-valued flag whose
  field says so: ``api_key``, ``admin_api_key``, ``hf_token``, ``ssl_keyfile_password``);
- an **environment variable** is shown in clear when its name is on the allowlist of operational
  names (`PUBLIC_ENV`, `PUBLIC_ENV_PREFIXES`, and ``public_env:`` in ``.driftwatch.yaml``) and does
  not itself look secret, or when its value is plainly public: a number, a boolean, a path without
  userinfo, a device list, an address, a URL without credentials, option words;
- a **unit key** is shown in clear unless it carries secrets by design (``SetCredential=``,
  ``LoadCredential=`` contents, ``LogExtraFields=``; the arguments of ``ExecStartPre=`` and the
  other ``Exec*=`` hooks in the stored unit text), or is a vendor ``X-`` key whose value is not
  plainly public; comments in the stored unit text are fingerprinted;
- words of a command line that no engine types: values of options whose name looks secret (or
  abbreviates an engine's credential flag), ``NAME=VALUE`` words as environment variables;
- **everything else** is fingerprinted before it is stored anywhere (raw unit text included), and
  credentials inside values shown in clear are cut out: URL userinfo (``https://u:PASS@``,
  ``hf://TOKEN@``), secret query parameters (``?token=``, ``&sig=``), JSON values under secret
  keys, ``Authorization:`` and other secret headers in shell text, well-known token shapes.

A redacted value becomes ``<redacted:XXXXXXXXXXXX>``, a short SHA-256 fingerprint, so two snapshots
can still tell "unchanged" from "changed" without either holding the secret. Reports never show the
fingerprint: they say "(redacted)" or "changed (redacted)".
"""
from __future__ import annotations

import fnmatch
import functools
import hashlib
import hmac
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Iterable

REDACTED_PREFIX = "<redacted:"
CONFIG_FILE = ".driftwatch.yaml"

# Operational environment variables: what they hold is configuration, never a credential (a name
# that looks secret, such as VLLM_API_KEY, is still redacted).
PUBLIC_ENV = frozenset({
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_LAUNCH_BLOCKING", "PATH", "LD_LIBRARY_PATH",
    "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV",
    "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM",
    "TMPDIR", "HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE",
    "HF_HUB_ENABLE_HF_TRANSFER", "HF_HUB_DISABLE_TELEMETRY", "HF_ENDPOINT", "TRANSFORMERS_CACHE",
    "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "MALLOC_ARENA_MAX", "MASTER_ADDR", "MASTER_PORT",
    "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "DOCKER_HOST", "NO_PROXY", "no_proxy",
})
PUBLIC_ENV_PREFIXES = ("NCCL_", "CUDA_", "CUBLAS_", "CUDNN_", "NVTE_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_",
                       "OMP_", "MKL_", "KMP_", "GOMP_", "SGLANG_", "SGL_", "VLLM_", "FLASHINFER_", "TRITON_",
                       "HSA_", "ROCM_", "HIP_", "MIOPEN_", "UCX_", "GLOO_", "NVSHMEM_", "XDG_", "LC_")

_SECRET_ENV_PARTS = {"TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "PWD", "KEY", "APIKEY",
                     "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "PAT", "COOKIE", "SIG", "SIGNATURE",
                     "PRIVATE", "BEARER", "JWT", "DSN", "PASSPHRASE", "OTP", "SESSION"}
_SECRET_ENV_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIAL", "CREDENTIALS")
_NOT_SECRET_ENV = {"PWD", "OLDPWD", "KEYBOARD", "SSH_AUTH_SOCK"}
_SECRET_FIELD_PARTS = {"key", "secret", "password", "passwd", "credential", "credentials", "apikey", "passphrase"}
# `*_token` fields that hold credentials (hf_token, api_token); not counts like `…_per_token`.
_TOKEN_OWNERS = {"hf", "api", "auth", "access", "bearer", "github", "gh", "wandb", "hub", "admin", "session",
                 "refresh", "id", "secret", "bot", "service", "client", "deploy", "private", "personal", "oauth"}
# Substrings of an option name (dashes and underscores removed) that mark its value a secret in a
# command line no engine types (`--requirepass`, `--db-password`, `--apikey`).
_SECRET_OPTION_WORDS = ("apikey", "secret", "password", "passwd", "passphrase", "credential", "requirepass",
                        "authtoken", "accesstoken", "apitoken", "hftoken", "bearer", "privatekey", "accesskey",
                        "secretkey", "sessionkey", "signingkey", "clientsecret", "cookie")
_SECRET_QUERY = {"token", "access_token", "auth", "auth_token", "sig", "signature", "key", "apikey", "api_key",
                 "password", "pass", "pwd", "secret", "client_secret", "code", "session", "jwt", "x-amz-signature",
                 "x-amz-credential", "x-amz-security-token", "x-goog-signature", "x-goog-credential", "hf_token",
                 "private_token", "refresh_token", "id_token"}
# words before a colon that are not HTTP headers naming a secret (log lines: "key: …" of a table)
_NOT_HEADERS = {"tokens", "keys"}
_SECRET_UNIT_KEYS = {"SetCredential", "SetCredentialEncrypted", "LoadCredential", "LoadCredentialEncrypted",
                     "LogExtraFields"}
EXEC_HOOKS = ("ExecStartPre", "ExecStartPost", "ExecCondition", "ExecReload", "ExecStop", "ExecStopPost")


# --------------------------------------------------------------------------- names


# Words that mark a name secret wherever they appear in it (case-insensitive, inside glued names too:
# SGLANG_S3SECRETKEY, VLLM_PRIVATEKEY, NCCL_DBPASS, apiToken, X-Auth-Key, AccountKey).
SECRET_WORDS = ("secret", "token", "pass", "pwd", "key", "auth", "cred", "private", "cookie", "session",
                "signature", "webhook", "dsn", "bearer", "jwt", "sasl", "apikey", "certpw")
# Short secret words, counted only as a whole word of the name ("pw", "pin", "sig", "pat", "otp", "sas").
SECRET_SHORT_WORDS = frozenset({"pw", "pin", "sig", "pat", "otp", "sas", "psk", "mfa", "totp", "hmac", "salt"})
# Whole words that contain a secret word but name something else (counts, tokenizers, keyboards).
_HARMLESS_WORDS = frozenset({"tokens", "tokenizer", "tokenizers", "tokenize", "tokenized", "tokenization",
                             "keyboard", "bypass", "passthrough", "passive", "compass", "monkey", "keys",
                             "keyframe", "keyframes", "keyword", "keywords", "author", "authors", "passes",
                             "sessions", "credits", "dskey"})
# Names whose value is known not to be a credential (`known_type`): operational variables of common
# software, and fields of engine JSON flags. The engines' own tables are in data/engine_env_types.json.
_KNOWN_TYPES = {
    "TOKENIZERS_PARALLELISM": "bool", "MODEL_NAME": "text", "MODEL": "text", "MODEL_ID": "text",
    "MODEL_PATH": "text", "MODEL_DIR": "text", "SERVED_MODEL_NAME": "text", "LOG_LEVEL": "text",
    "LOGLEVEL": "text", "LOG_FORMAT": "text", "LOG_DIR": "text", "APP_ENV": "text", "ENVIRONMENT": "text",
    "DEPLOYMENT": "text", "REGION": "text", "PORT": "int", "HOST": "text", "HOSTNAME": "text",
    "PWD": "text", "OLDPWD": "text", "SSH_AUTH_SOCK": "text", "KEYBOARD": "text",
    # fields inside engine JSON flags (--kv-transfer-config, --hicache-storage-backend-extra-config …)
    "key_prefix": "text", "key_suffix": "text", "key_separator": "text", "cache_key_prefix": "text",
    "key_type": "text", "kv_role": "text", "tokenizer": "text", "tokenizer_mode": "text",
}
_NUMERIC_KINDS = {"bool", "int", "float"}
_BOOL_WORDS = {"0", "1", "true", "false", "yes", "no", "on", "off", "y", "n", "t", "f", ""}


def split_name(name: str) -> list[str]:
    """The words of a name, lowercase: ``SGLANG_S3SECRETKEY`` -> [sglang, s3secretkey], ``apiToken`` ->
    [api, token], ``X-Auth-Key`` -> [x, auth, key]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


@functools.lru_cache(maxsize=16384)
def is_secret_name(name: str) -> bool:
    """A name that contains a secret word anywhere (see SECRET_WORDS), or is one of the short ones as a
    word of its own; words such as "tokens" or "tokenizer" do not count."""
    words = [w for w in split_name(name) if w not in _HARMLESS_WORDS]
    if any(w in SECRET_SHORT_WORDS for w in words):
        return True
    squashed = "".join(words)
    return any(w in squashed for w in SECRET_WORDS)


_ENV_TYPES: dict[str, str] | None = None


def engine_env_types() -> dict[str, str]:
    """{variable: type} from the engines' own tables (data/engine_env_types.json, generated by
    tools/gen_env_types.py from the real releases)."""
    global _ENV_TYPES
    if _ENV_TYPES is None:
        try:
            path = os.path.join(os.path.dirname(__file__), "data", "engine_env_types.json")
            with open(path, encoding="utf-8") as f:
                _ENV_TYPES = dict(json.load(f).get("types", {}))
        except (OSError, ValueError):
            _ENV_TYPES = {}
    return _ENV_TYPES


def known_type(name: str) -> str | None:
    """What a known name holds: ``bool``/``int``/``float``/``choice`` (never a credential), ``text``
    (known not to be a credential: shown with credentials cut), ``str`` (an engine's text variable:
    known, but a credential when its name says so, e.g. VLLM_API_KEY), or None (unknown)."""
    name = str(name)
    return _KNOWN_TYPES.get(name) or engine_env_types().get(name)


def parses_as(kind: str, value: str) -> bool:
    text = str(value).strip()
    if kind == "bool":
        return text.lower() in _BOOL_WORDS
    if kind == "int":
        return re.fullmatch(r"[+-]?\d{1,40}", text) is not None
    if kind == "float":
        return re.fullmatch(r"[+-]?(?:\d{1,40}(?:\.\d{0,40})?|\.\d{1,40})(?:[eE][+-]?\d{1,4})?|[+-]?(?i:inf|nan)",
                            text) is not None
    if kind == "choice":
        return re.fullmatch(r"[A-Za-z0-9_.+-]{0,64}", text) is not None
    return True


def name_value_secret(name: str, value: Any) -> bool:
    """Whether `value`, given under `name` (an environment variable, a JSON or query key, a
    connection-string part), is a secret by its name: a known non-text name is public while its value
    is of its type; a known text name is public; otherwise a name holding a secret word is secret."""
    kind = known_type(name)
    if kind in _NUMERIC_KINDS or kind == "choice":
        return not parses_as(kind, value)
    if kind == "text":
        return False
    return is_secret_name(name)


def is_secret_env(name: str) -> bool:
    """HF_TOKEN, OPENAI_API_KEY, DB_PASS, GH_PAT, SGLANG_S3SECRETKEY, NCCL_DBPASS: yes (a secret word
    anywhere in the name). TOKENIZERS_PARALLELISM, PWD, SGLANG_INIT_NEW_TOKEN_RATIO (a known variable of a
    non-text type): no."""
    kind = known_type(name)
    if kind is not None and kind != "str":
        return False
    return is_secret_name(name)


def is_secret_field(name: str) -> bool:
    """api_key, admin_api_key, hf_token, ssl_keyfile_password: yes; max_total_tokens, tokenizer_path: no."""
    parts = str(name).lower().replace("-", "_").strip("_").split("_")
    if _SECRET_FIELD_PARTS.intersection(parts):
        return True
    return parts[-1] == "token" and (len(parts) == 1 or parts[-2] in _TOKEN_OWNERS)


@functools.lru_cache(maxsize=8192)
def _secret_option_cached(option: str, credential_options: tuple[str, ...]) -> bool:
    return _is_secret_option(option, credential_options)


def is_secret_option(option: str, credential_options: Iterable[str] = ()) -> bool:
    """Whether the value of `option` (``--api-key``, ``--api-k``, ``--requirepass``, ``-p``…) is a secret
    in a command line no engine types (see `_is_secret_option`)."""
    options = credential_options if isinstance(credential_options, tuple) else tuple(credential_options)
    if len(option) > 200:
        return _is_secret_option(option, options)
    return _secret_option_cached(option, options)


def _is_secret_option(option: str, credential_options: tuple[str, ...] = ()) -> bool:
    """Whether the value of `option` (``--api-key``, ``--api-k``, ``--requirepass``, ``-p``…) is a secret
    in a command line no engine types. `credential_options` are the engines' credential flags: any
    abbreviation of one (argparse accepts unique prefixes) counts."""
    name = option.split("=", 1)[0]
    bare = name.lstrip("-")
    if not bare or not name.startswith("-"):
        return False
    if is_secret_field(bare):
        return True
    squashed = bare.lower().replace("-", "").replace("_", "")
    if any(w in squashed for w in _SECRET_OPTION_WORDS) or squashed.endswith(("token", "pass", "pwd")):
        return not squashed.endswith(("tokens", "tokenizer"))
    if name.startswith("--") and len(bare) > 2 and is_secret_name(bare) and known_type(bare.replace("-", "_")) is None:
        return True  # --masterauth, --authkey, --db-passfile-contents: a secret word anywhere
    if name.startswith("--") and len(name) >= 5:
        return any(c.startswith(name) for c in credential_options)
    return False


def is_public_env_name(name: str, extra: Iterable[str] = ()) -> bool:
    """On the allowlist (shipped, or `public_env:` patterns) and not itself secret-looking."""
    if is_secret_env(name):
        return False
    if name in PUBLIC_ENV or name.startswith(PUBLIC_ENV_PREFIXES):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in extra)


# --------------------------------------------------------------------------- values


# --------------------------------------------------------------------------- the fingerprint key

KEY_ENV = "DRIFTWATCH_FINGERPRINT_KEY"  # the key itself (several runners sharing baselines)
KEY_FILE_ENV = "DRIFTWATCH_FINGERPRINT_KEY_FILE"  # a file holding it
_KEY_BYTES = 32
_key_cache: dict[str, tuple[bytes, str]] = {}
key_problem: list[str] = []  # why the installation key could not be kept (then a key for this run only)


def default_key_path(env: dict | None = None) -> str:
    """``$XDG_CONFIG_HOME/driftwatch/fingerprint.key`` (default ``~/.config/…``), beside the config file."""
    env = os.environ if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return os.path.join(xdg, "driftwatch", "fingerprint.key")


def _read_key_file(path: str) -> bytes:
    from .errors import InputError
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the fingerprint key: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        data = os.read(fd, 4097)
    finally:
        os.close(fd)
    if st.st_mode & 0o077 and os.name == "posix":
        raise InputError(f"{path}: the fingerprint key is readable by others (mode {st.st_mode & 0o777:o}); "
                         f"chmod 600 {path}")
    key = data.strip()
    if len(key) < 16 or len(data) > 4096:
        raise InputError(f"{path}: not a fingerprint key (16 to 4096 bytes of text expected)")
    return key


def _create_key_file(path: str) -> bytes:
    """Create the installation's key atomically (0600, written to a temp file, linked into place: two
    processes starting at once end with the same key)."""
    import secrets
    import tempfile
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".fingerprint.key.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (secrets.token_hex(_KEY_BYTES) + "\n").encode("ascii"))
        os.fsync(fd)
        os.close(fd)
        fd = -1
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process was first: use its key
    finally:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return _read_key_file(path)


def fingerprint_key() -> tuple[bytes, str]:
    """(the key, its id): ``$DRIFTWATCH_FINGERPRINT_KEY``, else the file ``$DRIFTWATCH_FINGERPRINT_KEY_FILE``,
    else the installation's key file (created on first use). The id (6 hex digits, itself a keyed
    hash) travels in every fingerprint, so fingerprints made with another key are told apart."""
    given, given_file = os.environ.get(KEY_ENV), os.environ.get(KEY_FILE_ENV)
    cache_key = f"{given!r}|{given_file!r}|{default_key_path()}"
    hit = _key_cache.get(cache_key)
    if hit is not None:
        return hit
    from .errors import InputError
    if given is not None:
        key = given.strip().encode("utf-8", "surrogatepass")
        if len(key) < 16:
            raise InputError(f"${KEY_ENV} is too short for a fingerprint key (16 characters at least)")
    elif given_file:
        key = _read_key_file(given_file)
    else:
        path = default_key_path()
        try:
            key = _read_key_file(path) if os.path.lexists(path) else _create_key_file(path)
        except OSError as exc:
            import secrets
            key = secrets.token_hex(_KEY_BYTES).encode("ascii")
            key_problem.append(f"{path}: cannot keep the fingerprint key ({exc.strerror or exc}); secrets are "
                               f"fingerprinted with a key for this run only (set ${KEY_FILE_ENV})")
    ident = hmac.new(key, b"driftwatch fingerprint key id", hashlib.sha256).hexdigest()[:6]
    _key_cache.clear()
    _key_cache[cache_key] = (key, ident)
    return key, ident


def fingerprint(value: Any) -> str:
    """``<redacted:KEYID.DIGEST>``: HMAC-SHA256 of the value under the installation's key (64 bits
    shown), so equal values compare equal and nobody without the key can test guesses."""
    key, ident = fingerprint_key()
    digest = hmac.new(key, str(value).encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"{REDACTED_PREFIX}{ident}.{digest[:16]}>"


def fingerprint_schemes(value: Any) -> set[str]:
    """The key ids of the fingerprints inside `value` ("" for the unkeyed ones of older releases)."""
    if isinstance(value, str):
        if REDACTED_PREFIX not in value:
            return set()
        return {m.group(1) or "" for m in _FINGERPRINT_PARTS.finditer(value)}
    if isinstance(value, dict):
        return set().union(*(fingerprint_schemes(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(fingerprint_schemes(v) for v in value)) if value else set()
    return set()


def comparable_fingerprints(baseline: Any, current: Any) -> bool:
    """False when the two sides hold fingerprints made with different keys (or one side with the
    unkeyed fingerprints of older releases): then whether a secret changed cannot be known."""
    b, c = fingerprint_schemes(baseline), fingerprint_schemes(current)
    return not (b and c and b != c)


UNKNOWN_FINGERPRINT = ("fingerprinted with another key (or by an older release): whether the secret "
                       "changed is unknown; re-save the baseline, or share the fingerprint key")


def mask_for_show(value: Any) -> Any:
    """`show`: every fingerprint as ``<redacted>`` (through lists and dicts)."""
    if isinstance(value, str):
        return _FINGERPRINT.sub("<redacted>", value) if REDACTED_PREFIX in value else value
    if isinstance(value, dict):
        return {k: mask_for_show(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_for_show(v) for v in value]
    return value


def is_redacted(value) -> bool:
    return isinstance(value, str) and value.startswith(REDACTED_PREFIX) and value.endswith(">")


def redact_value(value):
    if value is None or is_redacted(value):
        return value
    return fingerprint(value)


_FINGERPRINT = re.compile(r"<redacted:(?:[0-9a-f]{6}\.)?[0-9a-f]*>")
_FINGERPRINT_PARTS = re.compile(r"<redacted:(?:([0-9a-f]{6})\.)?[0-9a-f]*>")


def mask_fingerprints(text: str) -> str:
    """Reports say "(redacted)", never the fingerprint (short hashes of weak secrets can be guessed)."""
    return _FINGERPRINT.sub("(redacted)", text)


CHANGED_FINGERPRINT = "changed (redacted)"


def has_fingerprint(value: Any) -> bool:
    """Whether a value (a string, or a list/dict holding strings) contains a redaction fingerprint."""
    if isinstance(value, str):
        return REDACTED_PREFIX in value and _FINGERPRINT.search(value) is not None
    if isinstance(value, dict):
        return any(has_fingerprint(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_fingerprint(v) for v in value)
    return False


def mask_tree(value: Any) -> Any:
    """`mask_fingerprints` through lists and dicts (for JSON documents)."""
    if isinstance(value, str):
        return mask_fingerprints(value)
    if isinstance(value, dict):
        return {k: mask_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_tree(v) for v in value]
    return value


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


_KEY_MATERIAL = re.compile(r"(?i)(?:\.(?:key|pem|p12|pfx|jks|keystore|kdbx|gpg|asc)$|(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)"
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


# --------------------------------------------------------------------------- the secret detector

_DETECTOR: list | None = None
_SKIPPED_PLUGINS = {"IPPublicDetector"}  # an address is not a secret here


def _detector_regexes() -> list:
    """detect-secrets' token-format plugins (AWS, Azure storage keys, GitHub, GitLab, Slack, Discord,
    Telegram, Stripe, Twilio, SendGrid, npm, PyPI, OpenAI, JWT, private keys, basic auth …): their
    own regular expressions, run on free text."""
    global _DETECTOR
    if _DETECTOR is None:
        regexes = []
        try:
            from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
            from detect_secrets.plugins.base import RegexBasedDetector
            for cls in get_mapping_from_secret_type_to_class().values():
                if issubclass(cls, RegexBasedDetector) and cls.__name__ not in _SKIPPED_PLUGINS:
                    regexes.extend(cls.denylist)
        except ImportError:  # pragma: no cover - a dependency; the own rules below still apply
            pass
        _DETECTOR = regexes
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
    if len(core) < 20:
        return len(re.findall(r"\d", core)) >= 2 and _entropy(core) >= 3.5
    limit = 4.0 if len(core) <= 40 else 4.5
    return _entropy(core) >= limit


def detect_secrets_in(text: str) -> list[str]:
    """Secrets a maintained detector finds in free text: detect-secrets' token formats and keyword
    plugin, high-entropy words, long hex words standing alone."""
    if not text or len(text) < 8:
        return []
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

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://)([^/\s@?#\"']{1,512})@")
_QUERY = re.compile(r"([?&;#])([A-Za-z0-9_.\[\]-]{1,64})=([^&#\s\"'<>;]{1,4096})")
_URL_PATH = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://[^/\s\"'?#]{1,255})(/[^\s\"'?#<>]{0,4096})")
# a connection-string part or a NAME=value word: AccountKey=…; Password=…; SharedAccessSignature=…
_PART = re.compile(r"(?<![A-Za-z0-9_.-])([A-Za-z][A-Za-z0-9_. -]{0,63}?)\s{0,4}=\s{0,4}([^;\s\"'&,]{1,4096})")
_HEADER = re.compile(r"(?i)(?<![A-Za-z0-9_-])([A-Za-z][A-Za-z0-9_-]{0,60})\s{0,8}:\s{0,8}"
                     r"((?:(?:bearer|basic|token|digest|apikey|negotiate|ntlm)\s{1,8})?)([^\s\"'\\,;]{1,4096})")
_JSON_KEY = re.compile(r"([\"'])([A-Za-z0-9_. -]{1,64})\1\s{0,8}:\s{0,8}([\"'])((?:\\.|(?!\3)[^\\]){0,4096})(?:\3|$)")
_JSON_SCALAR = re.compile(r"([\"'])([A-Za-z0-9_. -]{1,64})\1\s{0,8}:\s{0,8}(-?[0-9][0-9.eE+-]{0,40}|true|false)")
_OPTION_TEXT = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9_-]{0,80})(=|[ \t]{1,8})"
                          r"(\"[^\"]{0,4096}\"|'[^']{0,4096}'|[^\s\"';&|]{1,4096})")
_ASSIGN_TEXT = re.compile(r"(?<![\w./$-])([A-Za-z_][A-Za-z0-9_]{0,80})="
                          r"(\"[^\"]{0,4096}\"|'[^']{0,4096}'|[^\s\"';&|]{1,4096})")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def _secret_query_key(name: str, value: str = "") -> bool:
    lower = name.lower()
    if lower in _SECRET_QUERY or lower.startswith(("x-amz-sig", "x-amz-cred")):
        return True
    return name_value_secret(name, value)


_SEGMENT = re.compile(r"[^/]+")


def _url_path(path: str, keep) -> str:
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


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def visible(text: Any) -> str:
    """`text` with every control character (terminal escapes, C1 bytes, bidi overrides, undecodable
    bytes) as a visible escape: for error lines that carry text from a host."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), str(text))


def shown(value: Any, limit: int = 120) -> str:
    """A value for a message: itself when plainly public, else only its length ("(12 characters, not shown)")."""
    text = str(value)
    if is_plain_public(text) and len(text) <= limit:
        return text
    return f"({len(text)} characters, not shown)"


# --------------------------------------------------------------------------- public_env: in .driftwatch.yaml

_PATTERN = re.compile(r"^[A-Za-z_*?][A-Za-z0-9_*?\[\]]*$")
_PUBLIC_ENV_CACHE: dict[tuple, tuple[str, ...]] = {}


def load_public_env(path: str | os.PathLike | None = None) -> tuple[str, ...]:
    """Names (or glob patterns: ``MY_APP_*``) users declare not secret, from ``public_env:`` in
    ``.driftwatch.yaml`` (the working directory's, or `path`). A malformed list is an InputError
    naming the file and the entry."""
    from .errors import InputError

    target = os.fspath(path) if path is not None else CONFIG_FILE
    try:
        st = os.stat(target)
    except OSError:
        return ()
    key = (os.path.abspath(target), st.st_mtime_ns, st.st_size)
    if key in _PUBLIC_ENV_CACHE:
        return _PUBLIC_ENV_CACHE[key]
    from .fileio import read_yaml
    data = read_yaml(target, "driftwatch config")
    names: list[str] = []
    raw = data.get("public_env") if isinstance(data, dict) else None
    if raw is not None:
        if not isinstance(raw, list):
            raise InputError(f"{target}: public_env must be a list of environment variable names")
        for i, entry in enumerate(raw, start=1):
            if not isinstance(entry, str) or not _PATTERN.match(entry):
                raise InputError(f"{target}: public_env entry {i} is not an environment variable name "
                                 f"(letters, digits, '_', and the globs '*' '?')")
            if is_secret_env(entry.replace("*", "").replace("?", "")):
                raise InputError(f"{target}: public_env entry {i} ({entry}) looks like a secret's name; "
                                 "secret-looking names are always redacted")
            names.append(entry)
    _PUBLIC_ENV_CACHE[key] = tuple(names)
    return tuple(names)


# --------------------------------------------------------------------------- the redactor


def _like_environment(key: str) -> bool:
    """A misspelled ``Environment=`` (``Enviroment=``, ``Envirnoment=``): systemd ignores the line, but
    its values are environment assignments all the same."""
    import difflib
    lower = key.lower()
    return lower.startswith("env") and lower not in ("environment", "environmentfile") and (
        difflib.SequenceMatcher(None, lower, "environment").ratio() >= 0.8)


def _quote_systemd(word: str) -> str:
    """A word as systemd reads it back (double quotes, C escapes for quotes, backslashes, controls)."""
    if word and not re.search(r"[\s\"'\\;]|[\x00-\x1f\x7f]", word):
        return word
    body = "".join("\\" + c if c in "\"\\" else f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c
                   for c in word)
    return f'"{body}"'


# Secrets given to well-known programs in a script: curl -u user:PW, redis-cli -a PW, mysql -pPW,
# sshpass -p PW, htpasswd -b FILE USER PW, psql "password=PW" (by _PART).
_PROGRAM_TEXT = re.compile(
    r"(?:\bcurl\b[^\n;&|]{0,2000}?\s(?:-u|--user|--proxy-user)\s{1,8}['\"]?[^\s:'\"]{0,200}:(?P<v>[^\s'\"]{1,4096})"
    r"|\bredis-cli\b[^\n;&|]{0,2000}?\s(?:-a|--pass|--askpass)\s{1,8}(?P<v2>[^\s;&|]{1,4096})"
    r"|\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n;&|]{0,2000}?\s-p(?P<v3>[^\s;&|]{1,4096})"
    r"|\bsshpass\b[^\n;&|]{0,200}?\s-p\s{0,8}(?P<v4>[^\s;&|]{1,4096}))")
# In a command line: options whose value is a secret for that program (short options included).
_PROGRAM_OPTIONS = {"redis-cli": {"-a": "next"}, "mysql": {"-p": "glued"}, "mysqldump": {"-p": "glued"},
                    "mysqladmin": {"-p": "glued"}, "mariadb": {"-p": "glued"}, "sshpass": {"-p": "both"},
                    "curl": {"-u": "userinfo", "--user": "userinfo", "--proxy-user": "userinfo"}}


@dataclass
class Redactor:
    """Decides, for one unit, what is stored in clear.

    Used in two passes: `learn_*` and the per-field methods find the clear secrets (typed credential
    flags, non-public environment values, credentials inside values…); `scrub` then replaces each
    of them wherever it appears. Strong secrets (credentials by name or shape) are replaced inside
    any text; weak ones (values merely not known to be public) only as whole words, and never where
    a typed engine flag shows the same value in clear."""

    public_env: tuple[str, ...] = ()
    credential_options: tuple[str, ...] = ()  # every engine's credential flags (--api-key, --hf-token, …)
    strong: set[str] = field(default_factory=set)
    weak: set[str] = field(default_factory=set)
    typed_public: set[str] = field(default_factory=set)

    # -- learning
    def add(self, value: Any, strong: bool = True) -> None:
        if not isinstance(value, str) or not value or is_redacted(value):
            return
        if strong:
            self.strong.add(value)
        else:
            self.weak.add(value)

    def fp(self, value: str, strong: bool = True) -> str:
        self.add(value, strong)
        return value if is_redacted(value) else fingerprint(value)

    def learn_typed(self, flags: dict, is_credential) -> None:
        """Typed engine flags: credential values are strong secrets; other string values are public."""
        for key, value in flags.items():
            credential = is_credential(key, value.value)
            values = value.value if isinstance(value.value, list) else [value.value]
            for v in values:
                if not isinstance(v, str):
                    continue
                if credential:
                    self.add(v)
                else:
                    self.typed_public.add(v)

    # -- one value
    def cut(self, text: str) -> str:
        out, found = cut_credentials(text)
        for s in found:
            self.add(s)
        return out

    def scan(self, text: str) -> str:
        """Free text: credentials cut, then what the secret detector finds fingerprinted."""
        out = self.cut(text)
        if isinstance(out, str) and len(out) >= 8:
            for secret in sorted(set(detect_secrets_in(out)), key=len, reverse=True):
                if secret in out:
                    self.add(secret)
                    out = out.replace(secret, fingerprint(secret))
        return out

    def env_value(self, name: str, value: str) -> str:
        """An environment variable's value as stored: in clear (credentials cut) or a fingerprint.

        Known variables (the engines' own tables, common operational names) are shown while the value
        is of their type; a name with a secret word anywhere is secret; other names are shown when on
        the allowlist or when the value is plainly public (a number, a path naming no key material…)."""
        if not isinstance(value, str):
            value = str(value)
        if is_redacted(value):
            return value
        kind = known_type(name)
        if kind in _NUMERIC_KINDS or kind == "choice":
            return value if parses_as(kind, value) else self.fp(value)
        if is_secret_env(name):
            return self.fp(value)
        if kind in ("text", "str"):
            return self.scan(value)
        cut = self.cut(value)
        if is_public_env_name(name, self.public_env):
            return self.scan(value)
        if is_plain_public(cut):
            return cut
        return self.fp(value, strong=False)

    def unit_value(self, section: str, key: str, value: str) -> str:
        """A unit key's value as stored."""
        if value == "" or is_redacted(value):
            return value
        if key in ("SetCredential", "SetCredentialEncrypted"):
            ident, colon, data = value.partition(":")
            return f"{ident}:{self.fp(data)}" if colon else self.fp(value)
        if key in ("LoadCredential", "LoadCredentialEncrypted"):
            ident, colon, source = value.partition(":")
            if colon and is_plain_public(source) and not _URL.match(source):
                return value
            return f"{ident}:{self.fp(source)}" if colon else value if _PATTERN.match(ident) else self.fp(value)
        if key in ("LogExtraFields", "Environment", "UnsetEnvironment") or _like_environment(key):
            return self.assignments(value, env=key != "LogExtraFields")
        if key in EXEC_HOOKS:
            return self.assignment_value(section, key, value)
        if key.startswith("X-") or section.startswith("X-") or is_secret_field(key) or is_secret_env(key):
            cut = self.cut(value)
            return cut if is_plain_public(cut) and not is_secret_field(key) else self.fp(value, strong=False)
        return self.text(value)

    def assignments(self, value: str, env: bool = True) -> str:
        """`A=1 "B=x y"` (Environment=, LogExtraFields=) with each value redacted; a value that does not
        split (bad quoting) is fingerprinted whole."""
        from .unitwords import LexInvalid, extract_word
        words, i = [], 0
        while True:
            try:
                word, i = extract_word(value, i)
            except LexInvalid:
                words.append(self.fp(value[i:], strong=False))
                break
            if word is None:
                break
            name, eq, val = word.partition("=")
            if not eq:
                words.append(_quote_systemd(word) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", word)
                             else self.fp(word, strong=False))
                continue
            shown_value = self.env_value(name, val) if env else (
                val if is_plain_public(val) else self.fp(val, strong=not val or is_secret_env(name)))
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                words.append(self.fp(word, strong=False))
            else:
                words.append(_quote_systemd(f"{name}={shown_value}"))
        return " ".join(words)

    def text(self, text: str) -> str:
        """Free text (a message, `systemctl show` output, a script): credentials cut, secret options' and
        secret-named assignments' values fingerprinted."""
        if not isinstance(text, str) or not text:
            return text
        text = self.scan(text)

        def program(m: re.Match) -> str:
            group = next(g for g in ("v", "v2", "v3", "v4") if m.group(g) is not None)
            value = m.group(group)
            if not value or is_redacted(value.strip("'\"")):
                return m.group(0)
            return m.group(0)[:m.start(group) - m.start(0)] + self.fp(value.strip("'\""))

        text = _PROGRAM_TEXT.sub(program, text)

        def option(m: re.Match) -> str:
            value = m.group(3)
            bare = value.strip("'\"")
            if not is_secret_option(m.group(1), self.credential_options) or is_redacted(bare) or not bare:
                return m.group(0)
            return f"{m.group(1)}{m.group(2)}{self.fp(bare)}"

        def assign(m: re.Match) -> str:
            value = m.group(2).strip("'\"")
            if is_redacted(value) or not value or not is_secret_env(m.group(1)):
                return m.group(0)
            return f"{m.group(1)}={self.fp(value)}"

        if "-" in text:
            text = _OPTION_TEXT.sub(option, text)
        if "=" in text:
            text = _ASSIGN_TEXT.sub(assign, text)
        return text

    # -- command lines
    def words(self, argv: list[str], typed: dict[str, bool] | None = None) -> list[str]:
        """A command line's words. `typed` maps the option spellings an engine typed to whether each is
        a credential: their values are public (credentials cut) or secret; any other word of a typed
        command line is public only when plainly so or when it is a typed value. Without `typed`
        (wrappers, engine none, other programs), values of secret-named options (a secret word
        anywhere: --masterauth, --authkey), the secret options of well-known programs (redis-cli -a,
        mysql -pPW, curl -u user:PW) and `NAME=VALUE` words follow the name; other words are scanned
        by the secret detector. The word after a secret option is its value, even when it starts
        with "-"."""
        out: list[str] = []
        pending: str | None = None  # what the next value word is: "secret" | "typed" | "other" | "userinfo"
        shell_next = False
        typed_credentials = [t for t, secret in (typed or {}).items() if secret]
        program_options: dict[str, str] = {}
        for index, word in enumerate(argv):
            if not isinstance(word, str):
                word = str(word)
            base = os.path.basename(word)
            if typed is None and base in _PROGRAM_OPTIONS and pending is None:
                program_options = _PROGRAM_OPTIONS[base]
            is_option = word.startswith("-") and len(word) > 1 and not _PLAIN[0].fullmatch(word)
            if pending == "secret" and is_option and not (typed is not None and word.split("=", 1)[0] in typed) \
                    and not (typed is None and re.fullmatch(r"--[a-z][a-z-]*[a-z]", word)):
                is_option = False  # `--api-key -Xy…`: the value of the secret option, whatever it looks like
            if is_option:
                pending, shell_next = None, False
                name, eq, value = word.partition("=")
                glued = next((o for o, how in program_options.items()
                              if how in ("glued", "both") and len(o) == 2 and word.startswith(o) and len(word) > 2),
                             None)
                if glued and not eq:
                    out.append(f"{glued}{self.fp(word[2:])}")
                    continue
                how = program_options.get(name)
                if typed is not None and name in typed:
                    secret = typed[name]
                else:
                    secret = is_secret_option(name, self.credential_options) or any(
                        t.startswith(name) or name.startswith(t) for t in typed_credentials) \
                        or how in ("next", "both")
                if eq:
                    if how == "userinfo":
                        out.append(f"{name}={self._userinfo(value)}")
                    elif secret:
                        out.append(f"{name}={self.fp(value)}")
                    elif typed is not None and name not in typed:
                        out.append(f"{name}={self._typed_word(value)}")
                    elif typed is not None:
                        out.append(f"{name}={self.cut(value)}")
                    else:
                        out.append(f"{name}={self.scan(value)}")
                    continue
                out.append(word)
                pending = ("userinfo" if how == "userinfo" else "secret" if secret
                           else "typed" if typed is not None and name in typed else "other")
                shell_next = typed is None and re.fullmatch(r"-[A-Za-z]*c[A-Za-z]*", word) is not None
                continue
            if pending == "secret":
                out.append(self.fp(word))
            elif pending == "userinfo":
                out.append(self._userinfo(word))
            elif pending == "typed":
                out.append(self.cut(word))
            elif pending == "other" and typed is not None:
                # the value of a flag this release does not know: readable unless the detector objects
                cut = self.cut(word)
                out.append(cut if is_plain_public(cut) or cut in self.typed_public else self.scan(word))
            elif typed is not None:
                out.append(self._typed_word(word))
            elif shell_next:
                out.append(self.script(word))
            else:
                m = ASSIGNMENT.match(word)
                out.append(f"{m.group(1)}={self.env_value(m.group(1), m.group(2))}" if m else self.scan(word))
            pending, shell_next = None, False
        return out

    def _userinfo(self, word: str) -> str:
        """``user:PASSWORD`` (curl -u): the user kept, the password fingerprinted."""
        user, colon, password = word.partition(":")
        if colon and password and not is_redacted(password):
            return f"{user}:{self.fp(password)}"
        return self.scan(word)

    def _typed_word(self, word: str) -> str:
        """A word of a typed command line that no typed option explains: public only when plainly so."""
        cut = self.cut(word)
        if word in self.typed_public or cut in self.typed_public or is_plain_public(cut):
            return cut
        return self.fp(word, strong=False)

    def script(self, script: str) -> str:
        """A `sh -c` script: its words learned like a command line's, then the text scrubbed."""
        try:
            lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            tokens = None
        if tokens is not None and len(tokens) <= 100_000:
            self.words(tokens)
        return self.text(script)

    # -- the last pass
    def scrub(self, value: Any) -> Any:
        """Replace every learned secret in `value` (a string, or lists/dicts of them)."""
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        if isinstance(value, dict):
            return {k: self.scrub(v) for k, v in value.items()}
        if not isinstance(value, str) or not value or not (self.strong or self.weak):
            return value
        if value in self.strong or (value in self.weak and value not in self.typed_public):
            return fingerprint(value)
        subs = self._substrings()
        if len(subs) > 32:  # many secrets (a hostile unit): one scan of the text, not one per secret
            value = self._scan(value)
        else:
            for secret in subs:
                if secret in value:
                    value = value.replace(secret, fingerprint(secret))
        for secret in self._bounded():
            if secret in value:
                value = re.sub(r"(?<![A-Za-z0-9_.-])" + re.escape(secret) + r"(?![A-Za-z0-9_.-])",
                               lambda m: fingerprint(m.group(0)), value)
        return value

    def _scan(self, text: str) -> str:
        """Replace every substring secret (each at least 4 characters) in one pass: candidates are
        looked up by their first 4 characters, longest first."""
        index = self.__dict__.get("_index")
        if index is None or self.__dict__.get("_index_key") != self._sub_key:
            index = {}
            for secret in self._sub:  # longest first
                index.setdefault(secret[:4], []).append(secret)
            self._index, self._index_key = index, self._sub_key
        out, i, last, n = [], 0, 0, len(text)
        while i <= n - 4:
            candidates = index.get(text[i:i + 4])
            if candidates:
                hit = next((c for c in candidates if text.startswith(c, i)), None)
                if hit is not None:
                    out.append(text[last:i])
                    out.append(fingerprint(hit))
                    i += len(hit)
                    last = i
                    continue
            i += 1
        out.append(text[last:])
        return "".join(out)

    def _substrings(self) -> list[str]:
        key = (len(self.strong), len(self.weak))
        if getattr(self, "_sub_key", None) != key:
            self._sub_key = key
            strong = {s for s in self.strong if len(s) >= 4}
            weak = {s for s in self.weak if len(s) >= 8 and s not in self.typed_public}
            self._sub = sorted(strong | weak, key=len, reverse=True)
            self._bnd = sorted({s for s in self.weak if 3 <= len(s) < 8 and s not in self.typed_public}
                               | {s for s in self.strong if len(s) < 4}, key=len, reverse=True)
        return self._sub

    def _bounded(self) -> list[str]:
        self._substrings()
        return self._bnd

    # -- the stored unit text
    def unit_text(self, unit) -> str:
        """The unit as stored: re-rendered from its parsed assignments (one file after another, with the
        `# /path` headers of `systemctl cat`), every value through the policy; comments fingerprinted,
        `Exec*=` hooks keep their executable only."""
        lines: list[str] = []
        files: list[str | None] = []
        for a in unit.assignments:
            if a.path not in files:
                files.append(a.path)
        for p in unit.paths:
            if p not in files:
                files.append(p)
        for path in files:
            if lines:
                lines.append("")
            if path is not None and unit.paths:
                lines.append(f"# {path}")
            section = None
            for a in unit.assignments:
                if a.path != path:
                    continue
                if a.section != section:
                    if section is not None:
                        lines.append("")
                    section = a.section
                    lines.append(f"[{section}]")
                lines.append(f"{a.key}={self.assignment_value(a.section, a.key, a.value)}")
            comments = [c for c in getattr(unit, "comments", ()) if c[0] == path]
            if comments:
                lines.append(f"# {len(comments)} comment line{'s' if len(comments) != 1 else ''}: "
                             f"{fingerprint(chr(10).join(c[1] for c in comments))}")
        return self.scrub("\n".join(lines) + "\n")

    def assignment_value(self, section: str, key: str, value: str) -> str:
        if value == "":
            return ""
        if key == "ExecStart" or key in EXEC_HOOKS:
            from .unitwords import LexInvalid, extract_word
            words, i = [], 0
            try:
                while True:
                    word, i = extract_word(value, i, relax_escape=True)
                    if word is None:
                        break
                    words.append(word)
            except LexInvalid:
                return self.fp(value, strong=False)
            # hooks (ExecStartPre=…) as any command line no engine types: secret options, the
            # secrets of well-known programs and what the detector finds hidden, the rest readable
            shown_words = [_quote_systemd(w) for w in self.words(words)]
            line = " ".join(shown_words)
            if len(line) <= 100:
                return line
            # as people write long command lines: one option per continuation line
            return "".join(("" if i == 0 else " \\\n  " if w.startswith("--") else " ") + w
                           for i, w in enumerate(shown_words))
        return self.unit_value(section, key, value)


def credential_kind(key: str, value: Any) -> bool:
    """A typed flag holds a credential: its field says so and its value is text (not a switch)."""
    if not is_secret_field(key):
        return False
    values = value if isinstance(value, list) else [value]
    return any(isinstance(v, str) for v in values)


__all__ = ["PUBLIC_ENV", "PUBLIC_ENV_PREFIXES", "Redactor", "credential_kind", "cut_credentials", "fingerprint",
           "is_plain_public", "is_public_env_name", "is_redacted", "is_secret_env", "is_secret_field",
           "is_secret_option", "load_public_env", "mask_fingerprints", "redact_value", "shown", "visible"]
