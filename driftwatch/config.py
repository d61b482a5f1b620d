"""The config file of every command: its keys, where it is found, how it is read, and `report`'s
settings (config file + environment, merged under the command line). cli/config.py feeds
COMMAND_KEYS to every command's options; docs/config.md is the reference. Above notify/ (it knows
the SMTP words, notify/smtp_words.py) and below run/, which reads report's settings here.

Precedence: command line > environment > config file > defaults.

Config file (YAML, read with safe_load): ``--config FILE``, else the first that exists of
``$XDG_CONFIG_HOME/driftwatch/config.yaml`` (default ``~/.config/driftwatch/config.yaml``) and
``/etc/driftwatch/config.yaml``. A missing default file is fine; a missing ``--config`` file is an
InputError. Example::

    email: [ops@example.com, oncall@example.com]   # or "a@x, b@y"
    from: driftwatch@gpu-admin.example.com
    subject_prefix: "[driftwatch]"
    inventory: inventory.yaml          # relative paths are relative to this file's directory
    baseline: 70toks                   # a name, or a path (contains "/")
    baselines_dir: baselines           # where names are looked up [default: baselines/ next to this file]
    state: /var/lib/driftwatch/state.json
    only_changes: true
    smtp:
      host: smtp.example.com
      port: 587
      user: alerts
      security: starttls               # starttls | ssl | plain
      password_file: smtp-password     # mode 0600; never put the password itself here
      ca_file: /etc/ssl/private-ca.pem
      timeout: 30

Baseline names (`resolve_baselines_dir`) are looked up in ``--baselines-dir`` or
``$DRIFTWATCH_BASELINES`` when given (only there); else in the config file's ``baselines_dir``
(default: ``baselines/`` next to the config file); and only when no config file was read, in
``./baselines`` of the working directory (with a note on stderr, since cron's working directory is
the user's home). An unknown name is an error naming every directory searched.

Environment: DRIFTWATCH_SMTP_HOST, DRIFTWATCH_SMTP_PORT, DRIFTWATCH_SMTP_USER,
DRIFTWATCH_SMTP_PASSWORD, DRIFTWATCH_SMTP_SECURITY, DRIFTWATCH_EMAIL (comma-separated),
DRIFTWATCH_FROM. Empty variables count as unset.

The settings dict uses flat keys (the CLI's option names): email, sender, subject_prefix,
inventory, baseline, state, only_changes, smtp_host, smtp_port, smtp_user, smtp_security,
smtp_password_file, smtp_ca_file, smtp_timeout; plus config_file (the file read, or None). The
password itself is never stored in it: `notify.deliver.smtp_settings()` reads it at the last moment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from driftwatch.errors import InputError
from driftwatch.fileio import read_yaml
from driftwatch.notify.smtp_words import PASSWORD_ENV, SECURITY_MODES

DEFAULTS: dict[str, Any] = {
    "email": [],
    "sender": None,
    "subject_prefix": "[driftwatch]",
    "inventory": None,
    "baseline": None,
    "state": None,
    "baselines_dir": None,
    "only_changes": False,
    "smtp_host": "localhost",
    "smtp_port": None,
    "smtp_user": None,
    "smtp_security": "starttls",
    "smtp_password_file": None,
    "smtp_ca_file": None,
    "smtp_timeout": 30.0,
}

_TOP_KEYS = {"email": "email", "from": "sender", "subject_prefix": "subject_prefix", "inventory": "inventory",
             "baseline": "baseline", "baselines_dir": "baselines_dir", "state": "state", "only_changes": "only_changes",
             "smtp": None}
REPORT_KEYS = frozenset(_TOP_KEYS)  # report's own keys (smtp a mapping of its own)
_SMTP_KEYS = {"host": "smtp_host", "port": "smtp_port", "user": "smtp_user", "security": "smtp_security",
              "password_file": "smtp_password_file", "ca_file": "smtp_ca_file", "timeout": "smtp_timeout"}
# The keys of the other commands' options (cli/config.py feeds them to the options of the same name;
# docs/config.md): known here so that one file serves every command, skipped by report's settings.
COMMAND_KEYS = frozenset({
    "store", "known_hosts", "accept_new", "identity", "ssh_config", "connect_timeout", "command_timeout", "probe",
    "parallel", "concurrency", "rules", "ignore", "ignore_file", "engine_version", "catalog_dir", "engine_config",
    "limit", "shard", "prometheus", "always", "no_store", "color", "fingerprint_key_file"})
# Keys whose values are paths: a relative one is relative to the config file's directory.
COMMAND_PATH_KEYS = frozenset({"store", "known_hosts", "identity", "ssh_config", "rules", "ignore_file", "catalog_dir",
                               "engine_config", "prometheus", "fingerprint_key_file"})
_PATH_KEYS = ("inventory", "state", "baselines_dir", "smtp_password_file", "smtp_ca_file")
# Words a path key's option reads as something other than a file: kept as written, never made
# relative to the config file (`ssh_config: none` is `--ssh-config none`: no ssh config at all).
PATH_SENTINELS: dict[str, frozenset[str]] = {"ssh_config": frozenset({"none", ""})}
ANY_PATH_SENTINELS = frozenset({"-"})  # standard input or output, never a file beside the config


def is_path_sentinel(key: str, value: Any) -> bool:
    """Whether `value` of the path key `key` is a sentinel word (compared ignoring case), not a path."""
    if not isinstance(value, str):
        return False
    word = value.strip().lower()
    return word in ANY_PATH_SENTINELS or word in PATH_SENTINELS.get(key, ())


def parse_boolean(value: Any, where: str) -> bool:
    """A yes/no value read as click reads a flag's environment variable (true/false, yes/no, on/off,
    1/0, y/n, t/f, any case; `where` names the key), so `always: "yes"` in the file is `--always`, as
    DRIFTWATCH_ALWAYS=yes is."""
    import click
    if isinstance(value, int) and not isinstance(value, bool):  # YAML's 1 and 0: the variable's "1" and "0"
        value = str(value)
    try:
        if not isinstance(value, (bool, str)):
            raise click.BadParameter(repr(value))
        return click.BOOL.convert(value, None, None)
    except click.BadParameter:
        raise InputError(f"{where} must be true or false (yes/no, on/off, 1/0), not {value!r}") from None
_ENV = {"DRIFTWATCH_SMTP_HOST": "smtp_host", "DRIFTWATCH_SMTP_PORT": "smtp_port",
        "DRIFTWATCH_SMTP_USER": "smtp_user", "DRIFTWATCH_SMTP_SECURITY": "smtp_security",
        "DRIFTWATCH_EMAIL": "email", "DRIFTWATCH_FROM": "sender"}
MAX_CONFIG_BYTES = 1024 * 1024


def default_config_paths(env: Mapping[str, str]) -> list[str]:
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [os.path.join(xdg, "driftwatch", "config.yaml"), "/etc/driftwatch/config.yaml"]


# --------------------------------------------------------------------------- value checks


def _split_emails(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise InputError(f"{where}: email must be an address or a list of addresses")
    out = []
    for item in items:
        if not isinstance(item, str):
            raise InputError(f"{where}: email address {item!r} is not a string")
        for part in item.split(","):
            part = part.strip()
            if part:
                if any(c in part for c in "\r\n\0"):
                    raise InputError(f"{where}: invalid e-mail address {part!r}")
                out.append(part)
    return out


def _port(value: Any, where: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        port = int(value)
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
    except (TypeError, ValueError):
        raise InputError(f"{where}: SMTP port must be a number, not {value!r}") from None
    if not 0 < port < 65536:
        raise InputError(f"{where}: SMTP port must be between 1 and 65535, not {port}")
    return port


def _timeout(value: Any, where: str) -> float:
    try:
        t = float(value)
        if isinstance(value, bool):
            raise ValueError
    except (TypeError, ValueError):
        raise InputError(f"{where}: SMTP timeout must be a number of seconds, not {value!r}") from None
    if not 0 < t <= 3600:  # nan and inf too: a socket timeout must be finite
        raise InputError(f"{where}: SMTP timeout must be positive and at most 3600 seconds, not {value!r}")
    return t


def _security(value: Any, where: str) -> str:
    v = str(value).strip().lower() if value is not None else ""
    if v not in SECURITY_MODES:
        raise InputError(f"{where}: SMTP security must be one of {', '.join(SECURITY_MODES)}, not {value!r}")
    return v


def _string(value: Any, where: str, key: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError(f"{where}: {key} must be a string, not {type(value).__name__}")
    return str(value)


def _normalize(key: str, value: Any, where: str) -> Any:
    if key == "email":
        return _split_emails(value, where)
    if key == "smtp_port":
        return _port(value, where)
    if key == "smtp_timeout":
        return _timeout(value, where)
    if key == "smtp_security":
        return _security(value, where)
    if key == "only_changes":
        return parse_boolean(value, where)
    return _string(value, where, key)


# --------------------------------------------------------------------------- config file


def read_config(path: str) -> dict:
    """The config file's mapping (an empty file: {}); bad YAML or not a mapping is an InputError."""
    doc = read_yaml(path, "config file", limit=MAX_CONFIG_BYTES)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise InputError(f"{path}: the config file must be a mapping of settings, not a {type(doc).__name__}")
    return doc


def _flatten_config(doc: dict, path: str) -> dict:
    out: dict[str, Any] = {}
    unknown = [str(k) for k in doc if k not in _TOP_KEYS and k not in COMMAND_KEYS]
    if unknown:
        raise InputError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(set(_TOP_KEYS) | COMMAND_KEYS))}; docs/config.md)")
    for k, v in doc.items():
        if k in COMMAND_KEYS:
            continue  # another command's option (cli/config.py)
        if k == "smtp":
            if v is None:
                continue
            if not isinstance(v, dict):
                raise InputError(f"{path}: smtp must be a mapping (host, port, user, security, password_file, ca_file)")
            if "password" in v:
                raise InputError(f"{path}: smtp.password is not allowed in a config file; put the password in a "
                                 f"file readable only by you (smtp.password_file) or in {PASSWORD_ENV}")
            bad = [str(x) for x in v if x not in _SMTP_KEYS]
            if bad:
                raise InputError(f"{path}: unknown smtp setting(s) {', '.join(sorted(bad))} "
                                 f"(known: {', '.join(sorted(_SMTP_KEYS))})")
            for sk, sv in v.items():
                if sv is not None:
                    key = _SMTP_KEYS[sk]
                    out[key] = _normalize(key, sv, f"{path}: smtp.{sk}")
        elif v is not None:
            flat = _TOP_KEYS[k] or k  # only smtp maps to None, handled above
            out[flat] = _normalize(flat, v, f"{path}: {k}")
    base = Path(path).resolve().parent
    for key in _PATH_KEYS:
        if out.get(key) and not is_path_sentinel(key, out[key]):
            p = Path(os.path.expanduser(out[key]))
            out[key] = str(p if p.is_absolute() else base / p)
    b = out.get("baseline")
    if b and ("/" in b or b.startswith("~")):
        p = Path(os.path.expanduser(b))
        out["baseline"] = str(p if p.is_absolute() else base / p)
    return out


# --------------------------------------------------------------------------- baselines


def _looks_like_path(spec: str) -> bool:
    """As `baseline.load_baseline` decides: a path, not a name to look up in a directory."""
    return os.sep in spec or spec.endswith((".yaml", ".yml", ".service")) or Path(spec).exists()


def baseline_search_dirs(option: str | None, env: Mapping[str, str],
                         settings: Mapping[str, Any]) -> list[tuple[Path, str]]:
    """[(directory, where it came from)] in the order baseline names are looked up (module doc)."""
    if option:
        why = "$DRIFTWATCH_BASELINES" if env.get("DRIFTWATCH_BASELINES") == option else "--baselines-dir"
        return [(Path(os.path.abspath(os.path.expanduser(option))), why)]
    config = settings.get("config_file")
    if settings.get("baselines_dir"):
        return [(Path(os.path.abspath(settings["baselines_dir"])), f"baselines_dir in {config}")]
    if config:
        return [(Path(config).resolve().parent / "baselines", f"next to the config file {config}")]
    return [(Path(os.path.abspath("baselines")), "the working directory: no --baselines-dir, no config file")]


def resolve_baselines_dir(spec: str, option: str | None, env: Mapping[str, str], settings: Mapping[str, Any],
                          note: Callable[[str], Any] | None = None) -> Path:
    """The directory in which `baseline.load_baseline(spec, ...)` should look for the name `spec`.
    A path `spec` needs none (the first candidate is returned). An unknown name is a BaselineError
    naming every directory searched and the names each holds. `note(message)` is called when the
    name was found in the working directory's ./baselines (fine at a terminal, a trap under cron)."""
    from driftwatch.errors import BaselineError
    dirs = baseline_search_dirs(option, env, settings)
    if _looks_like_path(spec):
        return dirs[0][0]
    for directory, why in dirs:
        if (directory / f"{spec}.yaml").is_file():
            if note and why.startswith("the working directory"):
                note(f"baseline {spec} is {directory}/{spec}.yaml in the working directory; give "
                     f"--baselines-dir (or DRIFTWATCH_BASELINES, or a config file) so cron finds the same one")
            return directory
    searched = []
    for directory, why in dirs:
        known = sorted(p.stem for p in directory.glob("*.yaml") if p.is_file() and not p.name.startswith(".")) \
            if directory.is_dir() else None
        held = "missing" if known is None else f"has {', '.join(known) or 'no baselines'}"
        searched.append(f"{directory}/ ({why}; {held})")
    raise BaselineError(f"unknown baseline {spec!r}: searched {'; '.join(searched)}. Give --baselines-dir DIR, "
                        f"set DRIFTWATCH_BASELINES, or put baselines_dir in the config file")


# --------------------------------------------------------------------------- public API


def load_report_settings(config_path: str | None, env: Mapping[str, str], *,
                         search_paths: Sequence[str] | None = None) -> dict:
    """Defaults, overlaid with the config file, overlaid with the environment (see module doc)."""
    settings = dict(DEFAULTS)
    settings["email"] = []
    settings["config_file"] = None
    path: str | None = None
    doc: dict | None = None
    if config_path:
        path = os.path.expanduser(str(config_path))
        doc = read_config(path)
    else:
        for candidate in (search_paths if search_paths is not None else default_config_paths(env)):
            if os.path.exists(candidate):
                path, doc = candidate, read_config(candidate)
                break
    if doc is not None and path is not None:  # a document is only read from a path
        settings.update(_flatten_config(doc, path))
        settings["config_file"] = path

    for var, key in _ENV.items():
        value = env.get(var)
        if value is None or value.strip() == "":
            continue
        settings[key] = _normalize(key, value.strip(), f"environment variable {var}")
    if env.get(PASSWORD_ENV):
        # env beats the config file: the config's password_file is not used (a CLI one still wins)
        settings["smtp_password_file"] = None
    return settings


def _given(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, (list, tuple)) and not value:
        return False
    return True


def merge(cli: Mapping[str, Any], settings: Mapping[str, Any]) -> dict:
    """Command-line values over `settings`. A CLI value counts when it is not None, not False,
    not an empty list/tuple (so click's defaults for unset options do not override). Unknown CLI
    keys are carried over as they are. CLI values are validated like the config file's."""
    out = dict(settings)
    for key, value in cli.items():
        if not _given(value):
            continue
        if key in DEFAULTS:
            out[key] = _normalize(key, list(value) if isinstance(value, tuple) else value,
                                  f"option --{key.replace('_', '-')}")
        else:
            out[key] = value
    return out


__all__ = ["COMMAND_KEYS", "COMMAND_PATH_KEYS", "PATH_SENTINELS", "is_path_sentinel", "parse_boolean", "REPORT_KEYS",
           "read_config", "DEFAULTS", "baseline_search_dirs", "resolve_baselines_dir", "default_config_paths",
           "load_report_settings", "merge"]
