"""Keep secrets on the host: a value is stored or shown in clear unless it is a secret by meaning or shape.

The policy is documented in one place, docs/secrets.md. The package's modules, each with one reason
to change:

- `policy`: what a secret is by meaning (the name's secret words, the engines' tables, the curated
  table of known names, the allowlist ``public_env:``);
- `scanners`: what a secret is by shape (detect-secrets' plugins, entropy, key material, credentials
  in URLs, connection strings, headers and JSON) and what is plainly public;
- `fingerprints`: the installation's key and the ``<redacted:KEYID.DIGEST>`` fingerprints (the only
  module with on-disk and process-wide state);
- `text`: the `Redactor`, which applies both to a unit's values, command lines and free text.

Callers import from here; the names below are the package's interface.
"""
from __future__ import annotations

from .fingerprints import (
    CHANGED_FINGERPRINT,
    KEY_ENV,
    KEY_FILE_ENV,
    REDACTED_PREFIX,
    UNKNOWN_FINGERPRINT,
    comparable_fingerprints,
    default_key_path,
    fingerprint,
    fingerprint_key,
    fingerprint_schemes,
    has_fingerprint,
    is_fingerprint_of,
    is_redacted,
    key_problem,
    mask_fingerprints,
    mask_for_show,
    mask_tree,
    redact_value,
    use_config_key_file,
)
from .policy import (
    CONFIG_FILE,
    EXEC_HOOKS,
    PUBLIC_ENV,
    PUBLIC_ENV_PREFIXES,
    SECRET_SHORT_WORDS,
    SECRET_WORDS,
    credential_kind,
    engine_env_types,
    is_public_env_name,
    is_secret_env,
    is_secret_field,
    is_secret_name,
    is_secret_option,
    known_type,
    load_public_env,
    name_value_secret,
    parses_as,
    split_name,
)
from .scanners import (
    ASSIGNMENT,
    cut_credentials,
    detect_secrets_in,
    is_plain_public,
    is_plain_word,
    is_reference,
    looks_random,
    names_key_material,
)
from .text import Redactor, shown, visible

__all__ = [
    "ASSIGNMENT", "CHANGED_FINGERPRINT", "CONFIG_FILE", "EXEC_HOOKS", "KEY_ENV", "KEY_FILE_ENV", "PUBLIC_ENV",
    "PUBLIC_ENV_PREFIXES", "REDACTED_PREFIX", "SECRET_SHORT_WORDS", "SECRET_WORDS", "UNKNOWN_FINGERPRINT",
    "Redactor", "comparable_fingerprints", "credential_kind", "cut_credentials", "default_key_path",
    "detect_secrets_in", "engine_env_types", "fingerprint", "fingerprint_key", "fingerprint_schemes",
    "has_fingerprint", "is_fingerprint_of", "is_plain_public", "is_plain_word", "is_public_env_name", "is_redacted",
    "is_reference", "is_secret_env", "is_secret_field", "is_secret_name", "is_secret_option", "key_problem",
    "known_type", "load_public_env", "looks_random", "mask_fingerprints", "mask_for_show", "mask_tree",
    "name_value_secret", "names_key_material", "parses_as", "redact_value", "shown", "split_name",
    "use_config_key_file", "visible"
]
