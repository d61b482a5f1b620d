"""SGLang engine argv -> typed EngineConfig, read with SGLang's own argparse semantics.

We rebuild an argparse parser from a release's catalog (so `--tp 2` is `--tp-size 2`, `=` and space
forms both work and the last occurrence wins) and record, for every value, where it came from.
Problems (unknown, removed, ambiguous, deprecated flags, known start-up crashes) become Issues,
never exceptions.
"""
from __future__ import annotations

import argparse
import functools
import json
import re
from decimal import Decimal
from importlib import resources
from typing import Any

import yaml

from ...model import DEFAULT, EXPLICIT, RUNTIME, EngineConfig, FlagValue, Issue
from ..versions import version_key
from .catalog import Catalog, OptionSpec, available_versions, load_catalog, nearest_version

class _ParseFailure(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting."""

    def error(self, message):  # noqa: D401 - argparse API
        raise _ParseFailure(message)

    def exit(self, status=0, message=None):
        raise _ParseFailure(message or f"exit {status}")


class BadValue(str):
    """A command-line value the release's type converter rejects (kept as text, reported)."""


def _to_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on", "y", "t"):
        return True
    if lowered in ("0", "false", "no", "off", "n", "f"):
        return False
    raise ValueError(text)


def _human_readable_int(text: str) -> int:
    """SGLang's human_readable_int (0.5.12+): 4k = 4000, 1Ki = 1024; plain integers as int()."""
    text = text.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", text)
    if not match:
        return int(text)
    number, suffix = match.groups()
    if suffix.endswith("i"):
        if "." in number:
            raise ValueError(text)
        return int(number) * {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[suffix]
    return int(Decimal(number) * {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[suffix])


def _nullable_str(text: str):
    return None if not text or text == "None" else text


_CONVERTERS = {"int": int, "float": float, "str": str, "json": json.loads, "bool": _to_bool,
               # SGLang's own converters, named by the catalog's type_name
               "human_readable_int": _human_readable_int, "json_list_type": json.loads,
               "nullable_str": _nullable_str}


def _converter(type_name: str | None, custom: str | None = None):
    custom_name = (custom or "").split(" ", 1)[0]
    base = _CONVERTERS.get(custom_name) or _CONVERTERS.get(type_name or "str", str)

    def convert(text: str):
        try:
            return base(text)
        except (ValueError, TypeError, ArithmeticError, json.JSONDecodeError):
            return BadValue(text)

    convert.__name__ = type_name or "str"
    return convert


def _recording(base: type) -> type:
    """Subclass an argparse Action so each use records the spelling the user typed."""

    class Recording(base):  # type: ignore[misc, valid-type]
        def __call__(self, parser, namespace, values, option_string=None):
            namespace.__dict__.setdefault("_dw_spelling", {})[self.dest] = option_string
            super().__call__(parser, namespace, values, option_string)

    Recording.__name__ = f"Recording{base.__name__}"
    return Recording


_ACTIONS = {
    "store": argparse._StoreAction,
    "store_const": argparse._StoreConstAction,
    "store_true": argparse._StoreTrueAction,
    "store_false": argparse._StoreFalseAction,
    "append": argparse._AppendAction,
    "append_const": argparse._AppendConstAction,
    "count": argparse._CountAction,
    "extend": argparse._ExtendAction,
    "boolean_optional": argparse.BooleanOptionalAction,
}
_RECORDING = {name: _recording(cls) for name, cls in _ACTIONS.items()}


def _add_option(parser: argparse.ArgumentParser, spec: OptionSpec) -> None:
    action = spec.action if spec.action in _ACTIONS else "store"
    if spec.extra.get("action_class") == "BooleanOptionalAction":
        action = "boolean_optional"
    kwargs: dict[str, Any] = {"dest": spec.dest, "default": argparse.SUPPRESS, "action": _RECORDING[action]}
    options = list(spec.option_strings)
    if action in ("store", "append", "extend"):
        kwargs["type"] = _converter(spec.type, spec.extra.get("type_name"))
        if spec.nargs is not None:
            kwargs["nargs"] = spec.nargs
        if spec.nargs == "?":
            kwargs["const"] = spec.const
    elif action in ("store_const", "append_const"):
        kwargs["const"] = spec.const
    elif action == "boolean_optional":
        options = [o for o in options if not o.startswith("--no-")]
    parser.add_argument(*options, **kwargs)


@functools.lru_cache(maxsize=None)
def build_parser(version: str) -> _Parser:
    """An argparse parser equivalent to SGLang's for `version` (cached: ~500 options each)."""
    parser = _Parser(prog=f"sglang-{version}", add_help=False, allow_abbrev=True)
    for spec in load_catalog(version).options:
        _add_option(parser, spec)
    return parser


@functools.lru_cache(maxsize=None)
def runtime_fields() -> dict[str, str]:
    text = resources.files(__package__).joinpath("runtime_defaults.yaml").read_text(encoding="utf-8")
    return dict((yaml.safe_load(text) or {}).get("fields", {}))


def _option_words(argv: list[str], start: int) -> int:
    """Index after an unknown option's value words (everything up to the next `-x`)."""
    i = start + 1
    if "=" in argv[start]:
        return i
    while i < len(argv) and not (argv[i].startswith("-") and len(argv[i]) > 1 and not _is_number(argv[i])):
        i += 1
    return i


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _releases_accepting(option: str) -> list[str]:
    accepted = []
    for version in available_versions():
        kind, _ = load_catalog(version).resolve(option)
        if kind in ("exact", "prefix"):
            accepted.append(version)
    return accepted


def _unknown_issue(option: str, catalog: Catalog) -> Issue:
    name = option.split("=", 1)[0]
    releases = _releases_accepting(name)
    if not releases:
        return Issue("unknown-flag", f"{name} is not an SGLang flag in any shipped release "
                     f"({', '.join(available_versions())}); SGLang {catalog.version} would refuse to start",
                     flag=name, severity="error")
    newer = [r for r in releases if version_key(r) > version_key(catalog.version)]
    older = [r for r in releases if version_key(r) < version_key(catalog.version)]
    if older and not newer:
        kind, verb = "removed-flag", f"was removed after {older[-1]}"
    elif newer and not older:
        kind, verb = "unknown-flag", f"first appears in {newer[0]}"
    else:
        kind, verb = "unknown-flag", "is not accepted by this release"
    return Issue(kind, f"{name} {verb}; SGLang {catalog.version} would refuse to start "
                 f"(accepted by {', '.join(releases)})", flag=name, releases=releases, severity="error")


def _parse_once(argv: list[str], catalog: Catalog) -> tuple[dict[str, Any], dict[str, str], list[Issue]]:
    """Explicit values by dest, spellings by dest, and problems, for one catalog."""
    issues: list[Issue] = []
    words: list[str] = []
    i = 0
    # Ambiguous prefixes would make argparse stop: report them and drop them with their values.
    while i < len(argv):
        word = argv[i]
        if word.startswith("--") and len(word) > 2:
            kind, matches = catalog.resolve(word)
            if kind == "ambiguous":
                name = word.split("=", 1)[0]
                issues.append(Issue("ambiguous-flag", f"{name} is ambiguous in SGLang {catalog.version}: could match "
                                    f"{', '.join(matches[:6])}{' …' if len(matches) > 6 else ''}; SGLang would refuse "
                                    f"to start", flag=name, releases=_releases_accepting(name), severity="error"))
                i = _option_words(argv, i)
                continue
        words.append(word)
        i += 1
    parser = build_parser(catalog.version)
    namespace = argparse.Namespace()
    extras: list[str] = []
    for _attempt in range(50):
        namespace = argparse.Namespace()
        try:
            namespace, extras = parser.parse_known_args(words, namespace)
            break
        except _ParseFailure as exc:
            message = str(exc)
            bad = _offending_word(message, words, catalog)
            issues.append(Issue("bad-value", f"SGLang {catalog.version} rejects the command line: {message}",
                                flag=words[bad] if bad is not None else None, severity="error"))
            if bad is None:
                return {}, {}, issues
            del words[bad]
    values = {k: v for k, v in vars(namespace).items() if not k.startswith("_dw_")}
    spellings = dict(vars(namespace).get("_dw_spelling", {}))
    # argparse reports the full option string; keep what the user typed (`--tp`, not `--tp-size`).
    for word in words:
        if word.startswith("--") and len(word) > 2:
            kind, matches = catalog.resolve(word)
            spec = catalog.by_option.get(matches[0]) if kind in ("exact", "prefix") else None
            if spec is not None and spec.dest in spellings:
                spellings[spec.dest] = word.split("=", 1)[0]
    j = 0
    while j < len(extras):
        word = extras[j]
        if word.startswith("-") and not _is_number(word):
            issues.append(_unknown_issue(word, catalog))
            j = _option_words(extras, j)
        else:
            issues.append(Issue("unknown-flag", f"stray argument {word!r} (SGLang takes no positional "
                                "arguments)", flag=word, severity="error"))
            j += 1
    return values, spellings, issues


def _offending_word(message: str, words: list[str], catalog: Catalog) -> int | None:
    """Index of the last word naming the option argparse complained about."""
    if message.startswith("argument "):
        names = message[len("argument "):].split(":", 1)[0].split("/")
        for idx in range(len(words) - 1, -1, -1):
            name = words[idx].split("=", 1)[0]
            if name in names or (name.startswith("--") and any(n.startswith(name) for n in names)):
                return idx
    return None


def count_problems(argv: list[str], version: str) -> int:
    """How many flags `version` cannot read (unknown, removed, ambiguous, rejected)."""
    return _count_problems(tuple(argv), version)


@functools.lru_cache(maxsize=256)
def _count_problems(argv: tuple[str, ...], version: str) -> int:
    _, _, issues = _parse_once(list(argv), load_catalog(version))
    return len(issues)


def choose_version(argvs: list[list[str]]) -> tuple[str, str]:
    """The newest shipped release under which every given argv parses, and why it was chosen."""
    versions = available_versions()
    if not versions:
        from ...errors import CatalogError
        raise CatalogError("no SGLang catalogs are installed")
    scores = {v: sum(count_problems(a, v) for a in argvs) for v in versions}
    clean = [v for v in versions if scores[v] == 0]
    which = "every flag" if len(argvs) == 1 else "both units' flags"
    if clean:
        return clean[-1], f"newest shipped catalog under which {which} parse{'s' if len(argvs) == 1 else ''}"
    best = min(reversed(versions), key=lambda v: scores[v])  # min keeps the first: newest wins ties
    return best, (f"no shipped release accepts {which}; {best} accepts the most "
                  f"({scores[best]} flag problem{'s' if scores[best] != 1 else ''})")


def read_engine_config(engine_argv: list[str], engine_version: str | None = None,
                       recorded_version: str | None = None, choose_from: list[list[str]] | None = None,
                       ) -> EngineConfig:
    """Type the engine argv. Release: --engine-version, else recorded with the unit, else inferred."""
    if engine_version:
        version, why = nearest_version(engine_version)
        reason = f"--engine-version {engine_version}" + ("" if why == "exact catalog" else f" ({why})")
    elif recorded_version:
        version, why = nearest_version(recorded_version)
        reason = f"SGLang {recorded_version} recorded with the unit" + ("" if why == "exact catalog" else f" ({why})")
    else:
        version, reason = choose_version(choose_from or [engine_argv])
        reason = f"inferred: {reason}"
    catalog = load_catalog(version)
    values, spellings, issues = _parse_once(engine_argv, catalog)
    flags: dict[str, FlagValue] = {}
    runtime = runtime_fields()
    for spec in catalog.options:
        if spec.dest in values:
            value = values[spec.dest]
            flags[spec.field] = FlagValue(value=_plain(value), source=EXPLICIT,
                                          flag=spellings.get(spec.dest) or spec.primary)
            if isinstance(value, BadValue):
                issues.append(Issue("bad-value", f"{spec.primary} {value!s}: not a valid {spec.type} for SGLang "
                                    f"{version}", key=spec.field, flag=spec.primary, severity="error"))
            elif spec.choices and not _in_choices(value, spec.choices):
                issues.append(Issue("bad-value", f"{spec.primary} {value!r} is not one of "
                                    f"{', '.join(map(str, spec.choices))} in SGLang {version}",
                                    key=spec.field, flag=spec.primary, severity="error"))
            if spec.deprecated:
                issues.append(Issue("deprecated-flag", f"{spec.primary} is deprecated in SGLang {version}: "
                                    f"{spec.deprecated}", key=spec.field, flag=spec.primary, severity="warning"))
        elif spec.field not in flags:
            default = spec.default if spec.default_repr is None else spec.default_repr
            source = RUNTIME if spec.field in runtime and spec.default in (None, "auto") else DEFAULT
            flags[spec.field] = FlagValue(value=None if source == RUNTIME else default, source=source,
                                          flag=spec.primary, note=runtime.get(spec.field) if source == RUNTIME else None)
    config = EngineConfig(engine="sglang", version=version, version_reason=reason, flags=flags, issues=issues)
    from .rewrites import apply_rewrites  # local: rewrites need the typed flags only
    apply_rewrites(config)
    return config


def _plain(value: Any) -> Any:
    if isinstance(value, BadValue):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _in_choices(value: Any, choices: list) -> bool:
    if isinstance(value, list):
        return all(_in_choices(v, choices) for v in value)
    return value in choices or str(value) in [str(c) for c in choices]
