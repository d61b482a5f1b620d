"""One config file for every command: its keys become the defaults of the options of the same name.

Precedence: command line > environment (DRIFTWATCH_<KEY>) > config file > defaults. click gives
exactly that order when the file's values are a command's `default_map` and each option has its
environment variable, so that is all this module does (docs/config.md is the reference):

- which file: `--config FILE` after the command, else before it, else $DRIFTWATCH_CONFIG, else the
  first that exists of ~/.config/driftwatch/config.yaml and /etc/driftwatch/config.yaml. A missing
  file given by option or variable is bad input (exit 2);
- a key is an option's long name with underscores (`--ssh-config` -> `ssh_config`); only settings
  are keys (config.COMMAND_KEYS and report's own), never what one run names or does
  (--host, --unit, --output, --apply, --yes …): an unknown key is an error naming the known ones;
- relative paths are relative to the file's directory;
- report's own keys (email, from, smtp, state, …) stay driftwatch/config.py's: report reads them there;
- the file's `inventory`, `limit` and `baseline` are never merged into what was typed: each command
  hands both to run/targets.py (`resolve_targets`), where the file's inventory only describes the
  hosts named and is the target set only when nothing is named (`typed` tells them apart).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ..errors import InputError

CONFIG_ENV = "DRIFTWATCH_CONFIG"
_ARGS = "driftwatch.args"  # ctx.meta: the words after the command's name (--config may be among them)
_FILE = "driftwatch.config"  # ctx.meta: the config file read, or None

# report's keys that every other command reads too (the rest of report's are its own: mail, state)
SHARED_REPORT_KEYS = frozenset({"inventory", "baseline", "baselines_dir"})
# Commands that read no config: cron-example writes a job for another machine from its own options.
_NOT_CONFIGURED = frozenset({"cron-example"})
# Environment variables that keep the name they had before the config file served every command.
_OLD_ENV = {"baselines_dir": "DRIFTWATCH_BASELINES"}


def key_of(option: click.Option) -> str:
    """The config key of an option: its first long name with underscores."""
    longs = [o for o in option.opts if o.startswith("--")]
    return (longs[0] if longs else option.opts[0]).lstrip("-").replace("-", "_")


def env_of(key: str) -> str:
    return _OLD_ENV.get(key, f"DRIFTWATCH_{key.upper()}")


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in group.commands.items():
        if name in _NOT_CONFIGURED:
            continue
        if isinstance(command, click.Group):
            yield from _commands(command, path + (name,))
        else:
            yield path + (name,), command


def _fed_keys(command_name: str) -> frozenset[str]:
    """The config keys a command takes as option defaults (report reads its own through settings)."""
    from ..config import COMMAND_KEYS
    return COMMAND_KEYS if command_name == "report" else COMMAND_KEYS | SHARED_REPORT_KEYS


def _keyed_options(command_name: str, command: click.Command) -> Iterator[tuple[str, click.Option]]:
    fed = _fed_keys(command_name)
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden and key_of(param) in fed:
            yield key_of(param), param


_CONFIG_HELP = ("Config file [default: ~/.config/driftwatch/config.yaml, /etc/driftwatch/config.yaml; "
                "also $DRIFTWATCH_CONFIG]; its keys are the options' names (docs/config.md).")


def prepare(group: click.Group) -> None:
    """Give every command a `--config` option and each keyed option its DRIFTWATCH_<KEY> variable."""
    for path, command in _commands(group):
        if not any(isinstance(p, click.Option) and "--config" in p.opts for p in command.params):
            command.params.append(click.Option(["--config"], "config_path", expose_value=False, help=_CONFIG_HELP))
        for key, option in _keyed_options(path[-1], command):
            if option.envvar is None and not (path[-1] == "report" and key == "baseline"):
                option.envvar = env_of(key)


def remember_args(ctx: click.Context, args: list[str]) -> None:
    """The group's resolve_command hands over the words after the command (where --config may be)."""
    ctx.meta[_ARGS] = list(args)


def _config_after_command(args: list[str]) -> str | None:
    found = None
    for i, word in enumerate(args):
        if word == "--":
            break
        if word == "--config" and i + 1 < len(args):
            found = args[i + 1]
        elif word.startswith("--config="):
            found = word.split("=", 1)[1]
    return found


def chosen_file(ctx: click.Context, before: str | None) -> tuple[str | None, str]:
    """(the config file to read or None, where its name came from)."""
    from ..config import default_config_paths
    after = _config_after_command(ctx.meta.get(_ARGS, []))
    if after:
        return after, "--config"
    if before:
        return before, "--config"
    if os.environ.get(CONFIG_ENV, "").strip():
        return os.environ[CONFIG_ENV].strip(), f"${CONFIG_ENV}"
    for candidate in default_config_paths(os.environ):
        if os.path.exists(candidate):
            return candidate, "default"
    return None, "none"


def typed(name: str) -> bool:
    """Whether the current command's option `name` was given on its command line (not taken from
    the environment, the config file or a default)."""
    from click.core import ParameterSource
    return click.get_current_context().get_parameter_source(name) == ParameterSource.COMMANDLINE


def config_file(ctx: click.Context | None = None) -> str | None:
    """The config file this run read (for report's settings), or None."""
    ctx = ctx or click.get_current_context()
    return ctx.meta.get(_FILE)


def _resolve_path(value: str, base: Path) -> str:
    if "://" in value:  # a database URL (store), not a file
        return value
    path = Path(os.path.expanduser(value))
    return str(path if path.is_absolute() else base / path)


def _resolve(key: str, value: Any, base: Path, path: str = "") -> Any:
    """A path key's value made absolute against the config file's directory (`base`), as a relative
    path typed in that directory would be; a sentinel word (`ssh_config: none`, `-`) is kept as the
    option reads it; true/false where a path is wanted is refused (`ssh_config: no` is YAML's false)."""
    from ..config import COMMAND_PATH_KEYS, is_path_sentinel
    path_key = key in COMMAND_PATH_KEYS or key in ("inventory", "baselines_dir", "engine_config")
    if path_key and any(isinstance(v, bool) for v in (value if isinstance(value, list) else [value])):
        raise InputError(f"{path}: {key} takes a path, not true/false (YAML reads yes/no/on/off as booleans; "
                         "quote the word if it is a file name)")
    if path_key and is_path_sentinel(key, value):
        return value
    if key == "engine_config":  # [PATH=]FILE: PATH names a file on the server, FILE one here
        def one(item: str) -> str:
            server, sep, local = item.rpartition("=")
            return f"{server}{sep}{_resolve_path(local, base)}"
        return [one(str(v)) for v in value] if isinstance(value, list) else one(str(value))
    if key in COMMAND_PATH_KEYS or key in ("inventory", "baselines_dir"):
        if isinstance(value, list):
            return [_resolve_path(str(v), base) for v in value]
        return _resolve_path(str(value), base)
    if key == "baseline" and isinstance(value, str) and ("/" in value or value.startswith("~")
                                                         or value.endswith((".yaml", ".yml", ".service"))):
        return _resolve_path(value, base)
    return value


def _checked(key: str, value: Any, options: list[click.Option], path: str) -> Any:
    """The value as the option would take it; a bad one is one line naming the file and the key."""
    option = options[0]
    if option.multiple and not isinstance(value, list):
        value = [value]
    if option.is_flag:  # a yes/no word as the option's environment variable takes it
        from ..config import parse_boolean
        return parse_boolean(value, f"{path}: {key}")
    if any(isinstance(item, bool) for item in (value if option.multiple else [value])):
        if isinstance(option.type, click.types._NumberParamTypeBase):  # int(True) is 1: not a number here
            raise InputError(f"{path}: {key} must be a number, not {value!r}")
        raise InputError(f"{path}: {key} takes a value, not true/false (YAML reads yes/no/on/off as booleans; "
                         "quote the word if you meant it)")
    if any(isinstance(item, (dict, list)) for item in (value if option.multiple else [value])):
        what = "a value or a list of values" if option.multiple else "a single value"
        raise InputError(f"{path}: {key} must be {what}, not {type(value).__name__} {value!r}")
    try:
        with click.Context(click.Command(key)) as ctx:
            for item in (value if option.multiple else [value]):
                option.type.convert(item, option, ctx)
    except click.BadParameter as exc:
        raise InputError(f"{path}: {key}: {exc.message}") from None
    except (OverflowError, ValueError, TypeError):  # YAML's .inf for a whole number: int() overflows
        raise InputError(f"{path}: {key}: {value!r} is not a finite number") from None
    return value


def _use_key_file(path: str | None) -> None:
    """The config file's fingerprint key file for redact.py; with none, redact.py (its patterns
    cost ~0.04 s to compile) is not imported only to be told so: it starts with none."""
    import sys
    if path or "driftwatch.redact" in sys.modules:
        from ..redact import use_config_key_file
        use_config_key_file(path)


def load(ctx: click.Context, group: click.Group, before: str | None) -> dict[str, Any]:
    """Read the chosen config file, check its keys and values, and set `ctx.default_map` so each
    command's options default to it. Returns the file's settings for the group itself (flat keys)."""
    from ..config import COMMAND_KEYS, REPORT_KEYS, read_config
    path, source = chosen_file(ctx, before)
    ctx.meta[_FILE] = None
    _use_key_file(None)
    if path is None or any(word in ("--help", "-h") for word in ctx.meta.get(_ARGS, [])):
        return {}  # help is shown whatever the file holds
    path = os.path.expanduser(path)
    if source != "default" and not os.path.exists(path):
        raise InputError(f"{source} {path}: no such config file")
    doc = read_config(path)
    ctx.meta[_FILE] = path
    unknown = sorted(str(k) for k in doc if k not in COMMAND_KEYS and k not in REPORT_KEYS)
    if unknown:
        known = ", ".join(sorted(COMMAND_KEYS | REPORT_KEYS))
        raise InputError(f"{path}: unknown setting(s) {', '.join(unknown)} (known: {known}; docs/config.md)")
    base = Path(path).resolve().parent
    values = {k: _resolve(k, v, base, path) for k, v in doc.items() if v is not None}
    options: dict[str, list[click.Option]] = {}
    for command_path, command in _commands(group):
        for key, option in _keyed_options(command_path[-1], command):
            options.setdefault(key, []).append(option)
    for key in list(values):
        if key in options and key not in REPORT_KEYS - SHARED_REPORT_KEYS:
            values[key] = _checked(key, values[key], options[key], path)
    default_map: dict[str, Any] = {}
    for command_path, command in _commands(group):
        fed = {option.name: values[key] for key, option in _keyed_options(command_path[-1], command)
               if key in values}
        if fed:
            node = default_map
            for name in command_path[:-1]:
                node = node.setdefault(name, {})
            node[command_path[-1]] = fed
    ctx.default_map = default_map
    _use_key_file(values.get("fingerprint_key_file"))
    return values
