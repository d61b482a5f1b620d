"""The installation's fingerprint key and the fingerprints made with it: the one place with state.

A secret becomes ``<redacted:KEYID.DIGEST>``, an HMAC-SHA256 under the installation's key, so equal
values compare equal and nobody without the key can test guesses. The on-disk key (created on first
use), its per-process cache and the config file's key file are kept here and nowhere else; reports say
"(redacted)" and `show` says ``<redacted>`` (`mask_fingerprints`, `mask_for_show`).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from typing import Any

from ..errors import InputError

REDACTED_PREFIX = "<redacted:"

# --------------------------------------------------------------------------- the fingerprint key

KEY_ENV = "DRIFTWATCH_FINGERPRINT_KEY"  # the key itself (several runners sharing baselines)
KEY_FILE_ENV = "DRIFTWATCH_FINGERPRINT_KEY_FILE"  # a file holding it
_KEY_BYTES = 32
_key_cache: dict[str, tuple[bytes, str]] = {}
key_problem: list[str] = []  # why the installation key could not be kept (then a key for this run only)
_config_key_file: list[str] = []  # the config file's fingerprint_key_file (cli/config.py); the environment beats it


def use_config_key_file(path: str | None) -> None:
    """The config file's ``fingerprint_key_file``: read like ``$DRIFTWATCH_FINGERPRINT_KEY_FILE``, below
    both environment variables (command line > environment > config file)."""
    _config_key_file[:] = [path] if path else []


def default_key_path(env: Mapping[str, str] | None = None) -> str:
    """``$XDG_CONFIG_HOME/driftwatch/fingerprint.key`` (default ``~/.config/…``), beside the config file."""
    environ = os.environ if env is None else env
    home = environ.get("HOME") or os.path.expanduser("~")
    xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return os.path.join(xdg, "driftwatch", "fingerprint.key")


def _read_key_file(path: str) -> bytes:
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
    anchor = os.path.dirname(os.path.dirname(directory))  # the home (or what holds $XDG_CONFIG_HOME)
    if not os.path.isdir(anchor):
        raise FileNotFoundError(2, "no such directory", anchor)  # never create a home directory
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
    """(the key, its id): ``$DRIFTWATCH_FINGERPRINT_KEY``, else the file ``$DRIFTWATCH_FINGERPRINT_KEY_FILE``
    (else the config file's ``fingerprint_key_file``), else the installation's key file (created on first
    use). The id (6 hex digits, itself a keyed hash) travels in every fingerprint, so fingerprints made with
    another key are told apart."""
    given, given_file = os.environ.get(KEY_ENV), os.environ.get(KEY_FILE_ENV) or next(iter(_config_key_file), None)
    cache_key = f"{given!r}|{given_file!r}|{default_key_path()}"
    hit = _key_cache.get(cache_key)
    if hit is not None:
        return hit
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


def is_fingerprint_of(word: str, value: str) -> bool:
    """Whether `word` is the fingerprint of the public constant `value` (``serve``), keyed or in the
    unkeyed form of older releases (baselines saved before keyed fingerprints still read)."""
    if not is_redacted(word):
        return False
    legacy = hashlib.sha256(b"driftwatch-redact:" + value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return word == f"{REDACTED_PREFIX}{legacy}>" or word == fingerprint(value)


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


def is_redacted(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(REDACTED_PREFIX) and value.endswith(">")


def redact_value(value: Any) -> Any:
    if value is None or is_redacted(value):
        return value
    return fingerprint(value)


_FINGERPRINT = re.compile(r"<redacted:(?:[0-9a-f]{6}\.)?[0-9a-f]*>")
_FINGERPRINT_PARTS = re.compile(r"<redacted:(?:([0-9a-f]{6})\.)?[0-9a-f]*>")


def mask_fingerprints(text: str) -> str:
    """Reports say "(redacted)", never the fingerprint (short hashes of weak secrets can be guessed)."""
    return _FINGERPRINT.sub("(redacted)", text) if REDACTED_PREFIX in text else text


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
