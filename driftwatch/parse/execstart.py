"""ExecStart= -> commands and argv, with systemd 252's rules.

Ported from systemd 252 src/core/load-fragment.c (config_parse_exec), src/basic/env-util.c
(replace_env / replace_env_argv), src/core/service.c (service_verify) and checked with `systemd --test`:

- words split on whitespace; quotes removed also mid-word (yay'foo'bar -> yayfoobar); C escapes decoded;
  unknown escapes kept verbatim ("Ignoring unknown escape sequences"), also '\\ ' does not split;
- a lone unquoted ';' separates commands, '\\;' is a literal ';' word, 'a;b' is one word; a first word
  that unquotes to ';' (e.g. '";"') is a separator too;
- prefixes '-', '@', ':', '+', '!', '!!' (each once; a repeated prefix character ends the prefix and
  becomes part of the path, which then fails the path checks);
- with '@' the second word is argv[0]: Command.argv is what the process receives (systemd's
  "Command Line"), Command.path the executable;
- specifiers are applied at load time to every word, also inside quotes;
- errors in the first word, and any error with the '-' prefix, make systemd ignore the rest of that
  ExecStart= line (non-fatal warning); other errors make the unit fail to load (ExecStartError).
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from driftwatch.parse.environment import env_name_is_valid, parse_environment_file, parse_environment_values
from driftwatch.parse.loadcheck import EMERGENCY_ACTIONS, ExecStartError, enum_setting, load_errors
from driftwatch.parse.said import Said, prefixed, public
from driftwatch.parse.specifiers import DEPRECATED_SPECIFIERS, SpecifierFailure, apply_specifiers, unit_specifiers
from driftwatch.parse.unitfile import Assignment, UnitFile
from driftwatch.redact import shown
from driftwatch.unitwords import WHITESPACE, LexInvalid, extract_word, split_words_relaxed

PATH_MAX = 4096
LONG_LINE_MAX = 1024 * 1024
SERVICE_TYPES = ("simple", "exec", "forking", "oneshot", "dbus", "notify", "idle")
RESTART_VALUES = ("no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always")

__all__ = [
    "Command",
    "ExecStartError",
    "ExecStartResult",
    "expand_argv",
    "resolve_exec_start",
    "split_command_line",
    "unit_specifiers",
]


@dataclass
class Command:
    prefixes: str
    argv: list[str]
    raw: str
    path: str | None = None  # executable (specifiers applied, path simplified); argv[0] unless '@'

    @property
    def ignore_failure(self) -> bool:
        return "-" in self.prefixes

    @property
    def no_env_expand(self) -> bool:
        return ":" in self.prefixes

    def expand(self, env: dict[str, str]) -> list[str]:
        """argv after exec-time $VAR/${VAR} substitution (none with the ':' prefix)."""
        if self.no_env_expand:
            return list(self.argv)
        return expand_argv(self.argv, env)


class _Ignored(Exception):
    """Internal: systemd logs a warning and ignores the rest of the line."""


def _string_is_safe(s: str) -> bool:
    return not any(ord(c) < 32 or ord(c) == 127 or c in "\"'\\" for c in s)


def _filename_is_valid(s: str) -> bool:
    return bool(s) and s not in (".", "..") and "/" not in s and len(s.encode("utf-8", "surrogateescape")) <= 255


def _path_simplify(p: str) -> str:
    if not p.startswith("/"):
        return p
    parts = [x for x in p.split("/") if x not in ("", ".")]
    return "/" + "/".join(parts)


def _column(value: str, pos: int) -> str:
    """Where a word starts, never the word: messages must not echo a value (it may be a secret)."""
    return f"the word at column {pos + 1} of {len(value)} (value not shown)"


_PROGRAM = re.compile(r"[A-Za-z0-9@._+/-]{1,255}")


def _program(path: str) -> str:
    """An executable name for a message: itself when it looks like a program name, else its length."""
    return path if _PROGRAM.fullmatch(path) else shown(path)


def _split(value: str, specifiers: dict | None, warnings: list[str]) -> list[Command]:
    """config_parse_exec for one non-empty value. Raises ExecStartError for fatal errors."""
    rvalue = value.split("\0", 1)[0]
    s = rvalue
    n = len(s)
    commands: list[Command] = []
    p = 0

    def extract(pos: int) -> tuple[str | None, int]:
        try:
            return extract_word(s, pos)
        except LexInvalid:
            pass
        try:
            word, newpos = extract_word(s, pos, relax_escape=True)
        except LexInvalid:
            raise _Ignored(Said(f'Unbalanced quoting, ignoring: "{rvalue}"',
                                f"Unbalanced quoting, ignoring: {_column(rvalue, pos)}")) from None
        warnings.append(Said(f'Ignoring unknown escape sequences: "{word}"',
                             f"Ignoring unknown escape sequences: {_column(rvalue, pos)}"))
        return word, newpos

    def fail(ignore: bool, msg: str) -> list[Command]:
        if ignore:
            warnings.append(msg)
            return commands
        raise ExecStartError(msg)

    semicolon = True
    while semicolon:
        semicolon = False
        try:
            firstword, p = extract(p)
        except _Ignored as exc:
            warnings.append(exc.args[0])
            return commands
        if firstword is None:
            return commands
        if firstword == ";":
            semicolon = True
            continue

        k = 0
        prefixes = ""
        ignore_failure = separate_argv0 = no_env = False
        priv = ""  # "", "+", "!", "!!"
        while k < len(firstword):
            ch = firstword[k]
            if ch == "-" and not ignore_failure:
                ignore_failure = True
            elif ch == "@" and not separate_argv0:
                separate_argv0 = True
            elif ch == ":" and not no_env:
                no_env = True
            elif ch == "+" and not priv:
                priv = "+"
            elif ch == "!" and not priv:
                priv = "!"
            elif ch == "!" and priv == "!":
                priv = "!!"
            else:
                break
            prefixes += ch
            k += 1
        f = firstword[k:]
        ignore = ignore_failure
        sfx = ", ignoring" if ignore else ""

        try:
            _warn_deprecated(f, warnings)
            path = apply_specifiers(f, specifiers, PATH_MAX - 1)
        except SpecifierFailure as exc:
            return fail(ignore, Said(f"Failed to resolve unit specifiers in '{f}'{sfx}: {exc}",
                                     f"Failed to resolve unit specifiers in {shown(f)}{sfx}: {exc}"))
        if path == "":
            return fail(ignore, Said(f"Empty path in command line{sfx}: '{rvalue}'",
                                     f"Empty path in command line{sfx}: {shown(rvalue)}"))
        if not _string_is_safe(path):
            return fail(ignore, Said(f"Executable name contains special characters{sfx}: {path}",
                                     f"Executable name contains special characters{sfx}: {shown(path)}"))
        if path.endswith("/"):
            return fail(ignore, Said(f"Executable path specifies a directory{sfx}: {path}",
                                     f"Executable path specifies a directory{sfx}: {shown(path)}"))
        if not path.startswith("/") and not _filename_is_valid(path):
            return fail(ignore, Said(f"Neither a valid executable name nor an absolute path{sfx}: {path}",
                                     f"Neither a valid executable name nor an absolute path{sfx}: {_program(path)}"))

        argv: list[str] = [] if separate_argv0 else [path]
        exe = _path_simplify(path)

        while p < n:
            if s[p] == ";" and (p + 1 == n or s[p + 1] in WHITESPACE):
                p += 1
                while p < n and s[p] in WHITESPACE:
                    p += 1
                semicolon = True
                break
            if s[p] == "\\" and p + 1 < n and s[p + 1] == ";" and (p + 2 == n or s[p + 2] in WHITESPACE):
                p += 2
                while p < n and s[p] in WHITESPACE:
                    p += 1
                argv.append(";")
                continue
            try:
                word, p = extract(p)
            except _Ignored as exc:
                return fail(ignore, exc.args[0])
            if word is None:
                break
            try:
                _warn_deprecated(word, warnings)
                resolved = apply_specifiers(word, specifiers, LONG_LINE_MAX)
            except SpecifierFailure as exc:
                return fail(ignore, Said(f"Failed to resolve unit specifiers in {word}{sfx}: {exc}",
                                         f"Failed to resolve unit specifiers in {shown(word)}{sfx}: {exc}"))
            argv.append(resolved)

        if not argv:
            return fail(ignore, Said(f"Empty executable name or zeroeth argument{sfx}: {rvalue}",
                                     f"Empty executable name or zeroeth argument{sfx}: {shown(rvalue)}"))
        commands.append(Command(prefixes=prefixes, argv=argv, raw=value, path=exe))
    return commands


def _warn_deprecated(word: str, warnings: list[str]) -> None:
    if "%" not in word:
        return
    i = 0
    while True:
        i = word.find("%", i)
        if i < 0 or i + 1 >= len(word):
            return
        if word[i + 1] in DEPRECATED_SPECIFIERS:
            warnings.append(f"Specifier '%{word[i + 1]}' used in unit configuration, which is deprecated.")
        i += 2


def split_command_line(value: str, specifiers: dict | None = None,
                       warnings: list[str] | None = None) -> list[Command]:
    """One ExecStart= value -> commands (systemd 252 rules, see module docstring).

    ``specifiers``: a table from unit_specifiers(); None applies none (every '%' kept as written).
    Non-fatal problems (systemd: "..., ignoring") are appended to ``warnings`` when given.
    Raises ExecStartError where systemd would refuse the unit.
    """
    if not isinstance(value, str):
        raise ExecStartError("ExecStart= value must be a string")
    w: list[str] = [] if warnings is None else warnings
    if value.strip(WHITESPACE) == "":
        return []
    return _split(value, specifiers, w)


# ---------------------------------------------------------------- exec-time expansion

def _env_get(env: dict[str, str], name: str) -> str | None:
    return env.get(name) if name else None


def replace_env(word: str, env: dict[str, str]) -> str:
    """replace_env() of systemd 252 with flags 0: ${NAME} -> value (unset -> ''), $$ -> $, rest literal."""
    if "$" not in word:  # nearly every word, however long: no scan character by character
        return word
    out: list[str] = []
    state = "WORD"
    start = 0  # index of the not yet copied text
    i = 0
    n = len(word)
    while i < n:
        c = word[i]
        if state == "WORD":
            if c == "$":
                state = "CURLY"
        elif state == "CURLY":
            if c == "{":
                out.append(word[start:i - 1])
                start = i - 1
                state = "VARIABLE"
            elif c == "$":
                out.append(word[start:i])
                start = i + 1
                state = "WORD"
            else:
                state = "WORD"
        elif state == "VARIABLE":
            if c == "}":
                val = _env_get(env, word[start + 2:i])
                if val is not None:
                    out.append(val)
                start = i + 1
                state = "WORD"
            elif c == ":":
                state = "WORD"  # ${A:-b} etc. are not supported for ExecStart=: left as written
        i += 1
    out.append(word[start:])
    return "".join(out)


def expand_argv(argv: list[str], env: dict[str, str]) -> list[str]:
    """replace_env_argv() of systemd 252: whole-word $NAME -> value split on whitespace (quotes honoured and
    removed, 0..n words; unset -> no word); ${NAME} anywhere -> value inside that word; $$ -> $."""
    out: list[str] = []
    for arg in argv:
        if arg.startswith("$") and arg[1:2] not in ("{", "$"):
            val = _env_get(env, arg[1:])
            if val is not None:
                out.extend(split_words_relaxed(val))
            continue
        out.append(replace_env(arg, env))
    return out


# ---------------------------------------------------------------- whole service

@dataclass
class ExecStartResult:
    commands: list[Command]
    environment: dict[str, str]
    environment_files: list[str]
    service_type: str = "simple"
    working_directory: str | None = None
    user: str | None = None
    warnings: list[str] = field(default_factory=list)
    load_errors: list[str] = field(default_factory=list)  # why systemd 252 refuses to load the unit (loadcheck)
    unreadable_files: list[str] = field(default_factory=list)  # required EnvironmentFile= paths not read
    # With a file not read: the names whose value is still certain (set by a file read after the last
    # unread one, or removed by UnsetEnvironment=); any other name may be set or overridden by that file.
    certain: frozenset[str] = frozenset()

    @property
    def command(self) -> Command:
        """The main command: the only one (or, for Type=oneshot with several, the last)."""
        if not self.commands:
            raise ExecStartError("Service has no ExecStart= setting. Refusing.")
        return self.commands[-1]

    @property
    def argv(self) -> list[str]:
        return list(self.command.argv)

    def _view(self) -> dict[str, str]:
        if not self.unreadable_files:
            return self.environment
        return _UnknownEnvironment(self.environment, self.certain)

    @property
    def expanded_argv(self) -> list[str]:
        """argv after $VAR expansion; with an EnvironmentFile= not read, a variable set nowhere else
        keeps its reference (`${NAME}`): its value is unknown, not empty."""
        return self.command.expand(self._view())

    @property
    def unknown_variables(self) -> list[str]:
        """Variables the command uses whose value an unread EnvironmentFile= may set (sorted)."""
        view = self._view()
        if not isinstance(view, _UnknownEnvironment):
            return []
        self.command.expand(view)
        return sorted(view.asked)


class _UnknownEnvironment(dict):
    """The environment when a required EnvironmentFile= was not read: a name it may set (or override:
    files come after Environment=) answers its reference as written (`${NAME}`), and is recorded."""

    def __init__(self, environment: dict[str, str], certain: frozenset[str]):
        super().__init__(environment)
        self.certain = certain
        self.asked: set[str] = set()

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        if name in self.certain or not env_name_is_valid(name):
            return super().get(name, default)
        self.asked.add(name)
        return "${" + name + "}"


def _check_working_directory(unit: UnitFile, specifiers: dict, warnings: list[str]) -> list[str]:
    """systemd's config_parse_working_directory: `~`, or an absolute, normalised path after specifiers;
    anything else fails the unit's load ("bad-setting") unless the value starts with `-`, which makes
    it a warning (the setting is then ignored). Every assignment counts, even one a later line
    overrides: systemd refuses the file while reading it. Returns the reasons it refuses the unit."""
    refused: list[str] = []
    for a in unit.assignments:
        if a.section != "Service" or a.key != "WorkingDirectory" or a.value == "":
            continue
        value = a.value
        missing_ok = value.startswith("-")
        if missing_ok:
            value = value[1:]
        if value == "~":
            continue
        where = _where(unit, "WorkingDirectory", a)
        try:
            path = apply_specifiers(value, specifiers, PATH_MAX - 1)
        except SpecifierFailure as exc:
            message = f"Failed to resolve unit specifiers in working directory path {shown(value)}: {exc}"
            if not missing_ok:
                refused.append(where + message)
                continue
            warnings.append(where + message + ", ignoring")
            continue
        problem = None
        if not path.startswith("/"):
            problem = "is not absolute"
        elif len(path) >= PATH_MAX:
            problem = f"has invalid length ({len(path)} bytes)"
        elif ".." in path.split("/"):
            problem = "is not normalized"
        if problem is None:
            continue
        said = Said(f"WorkingDirectory= path {problem}{'' if not missing_ok else ', ignoring'}: {path}",
                    f"WorkingDirectory= path {problem}{'' if not missing_ok else ', ignoring'}: {shown(path)}")
        if not missing_ok:
            refused.append(prefixed(where, said))
            continue
        warnings.append(prefixed(where, said))
    return refused


_LOCATION = re.compile(r"^(.*?):(\d+): ")


def _in_file_order(unit: UnitFile, messages: list[str]) -> list[str]:
    """Reasons located `FILE:LINE: …` in the order systemd reads them (fragment, then drop-ins); the
    unit-wide ones (service_verify's) after them, in their own order."""
    order = {path: i for i, path in enumerate(unit.paths)}

    def key(message: str) -> tuple[int, int]:
        m = _LOCATION.match(str(message))
        return (order.get(m.group(1), 0), int(m.group(2))) if m else (len(order) + 1, 0)
    return sorted(messages, key=key)


def _where(unit: UnitFile, key: str, a: Assignment | None) -> str:
    if a is None:
        return ""
    return f"{a.path or unit.name or '<unit>'}:{a.line}: "


def resolve_exec_start(unit: UnitFile, environment_files: Mapping[str, str | None] | None = None, *,
                       specifiers: dict | None = None) -> ExecStartResult:
    """Everything needed to know what the service runs.

    ``environment_files`` maps EnvironmentFile= paths (as written, with or without '-', or after
    specifiers) to their contents, or to None for a file that is there but could not be read; a
    required file not supplied, and any file mapped to None, is in ``unreadable_files`` (its
    variables are unknown, not empty); an optional ('-') one not supplied is skipped as systemd
    skips a missing one.
    ``specifiers`` defaults to unit_specifiers(unit.name, fragment_path=first path).
    Raises ExecStartError where systemd would refuse the unit and there is no command to read (masked,
    no ExecStart=, a fatal ExecStart= error); every other reason systemd refuses to load it is in
    ``load_errors``, the command still read, so that each reason can be reported.
    """
    name = unit.name or "<unit>"
    if unit.masked:
        raise ExecStartError(f"Unit {name} is masked.")
    if specifiers is None:
        specifiers = unit_specifiers(unit.name, fragment_path=unit.paths[0] if unit.paths else None)
    warnings: list[str] = []

    service_type = None
    for a in unit.assignments:
        if a.section == "Service" and a.key == "Type":
            if a.value in SERVICE_TYPES:  # an empty Type= is no reset in 252: ignored like a bad value
                service_type = a.value
            else:
                warnings.append(prefixed(_where(unit, 'Type', a), Said(
                    f"Failed to parse service type, ignoring: {a.value}",
                    f"Failed to parse service type, ignoring: {shown(a.value)}")))

    commands: list[Command] = []
    for a in unit.assignments:
        if a.section != "Service" or a.key != "ExecStart":
            continue
        if a.value == "":
            commands = []
            continue
        w: list[str] = []
        try:
            commands.extend(_split(a.value, specifiers, w))
        except ExecStartError as exc:
            raise ExecStartError(prefixed(_where(unit, 'ExecStart', a), exc.args[0] if exc.args else exc)) \
                from None
        warnings.extend(prefixed(_where(unit, 'ExecStart', a), m) for m in w)

    if service_type is None:  # systemd: Type= unset means simple, or oneshot when there is no ExecStart=
        service_type = "simple" if commands else "oneshot"
    if not commands:
        has_stop = bool(unit.values("Service", "ExecStop"))
        has_success = enum_setting(unit, "Unit", "SuccessAction", EMERGENCY_ACTIONS, "none") != "none"
        remain = (unit.get("Service", "RemainAfterExit") or "no").lower() in ("1", "yes", "y", "true", "t", "on")
        why = ""
        ignored = [m for m in warnings if "ignoring" in m]
        if ignored:
            why = Said(" (ExecStart= lines ignored by systemd: " + "; ".join(ignored) + ")",
                       " (ExecStart= lines ignored by systemd: " + "; ".join(public(m) for m in ignored) + ")")
        if not has_stop and not has_success:
            raise ExecStartError(f"{name}: Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing." + why)
        if service_type != "oneshot":
            raise ExecStartError(
                f"{name}: Service has no ExecStart= setting, which is only allowed for Type=oneshot services. "
                "Refusing." + why
            )
        if not remain and not has_success:
            raise ExecStartError(
                f"{name}: Service has no ExecStart= and no SuccessAction= settings and does not have "
                "RemainAfterExit=yes set. Refusing." + why
            )
    # What follows refuses the unit but leaves its command readable: each reason is kept in
    # `load_errors` (the caller reports them all) instead of stopping at the first.
    refused: list[str] = []
    if len(commands) > 1 and service_type != "oneshot":
        refused.append(Said(
            f"{name}: Service has more than one ExecStart= setting, which is only allowed for Type=oneshot "
            "services. Refusing."
        ))
    restart = enum_setting(unit, "Service", "Restart", RESTART_VALUES, "no")
    if service_type == "oneshot" and restart in ("always", "on-success"):
        refused.append(Said(
            f"{name}: Service has Restart= set to either always or on-success, which isn't allowed for "
            "Type=oneshot services. Refusing."
        ))
    refused = _in_file_order(unit, _check_working_directory(unit, specifiers, warnings) + load_errors(
        unit, specifiers, service_type, _split, warnings)) + refused

    env_warnings: list[str] = []
    environment = parse_environment_values(unit.values("Service", "Environment"), specifiers, env_warnings)
    warnings.extend(env_warnings)

    files_written: list[str] = []
    unreadable: list[str] = []
    certain = set(environment)
    for value in unit.values("Service", "EnvironmentFile"):
        try:
            expanded = apply_specifiers(value, specifiers, PATH_MAX - 1)
        except SpecifierFailure as exc:
            warnings.append(Said(f"Failed to resolve unit specifiers in '{value}', ignoring: {exc}",
                                 f"Failed to resolve unit specifiers in {shown(value)}, ignoring: {exc}"))
            continue
        optional = expanded.startswith("-")
        fpath = expanded[1:] if optional else expanded
        if not fpath.startswith("/"):
            warnings.append(Said(f"Path '{expanded}' is not absolute, ignoring.",
                                 f"Path {shown(expanded)} is not absolute, ignoring."))
            continue
        files_written.append(value)
        content, there_unread = None, False
        for candidate in (value, expanded, fpath, posixpath.normpath(fpath)):
            if environment_files is not None and candidate in environment_files:
                content = environment_files[candidate]
                there_unread = content is None
                break
        if content is None:
            if not optional or there_unread:  # systemd reads it on the host; here its variables are unknown
                unreadable.append(fpath)
                certain.clear()
            continue
        if not isinstance(content, str):
            raise ExecStartError(f"EnvironmentFile={value}: contents must be text")
        for k, v in parse_environment_file(content, warnings).items():
            environment[k] = v
            certain.add(k)

    # UnsetEnvironment= is applied last (NAME, or NAME=VALUE only where it matches exactly), before
    # ExecStart='s $VAR expansion: what is unset is not in the command's environment either.
    for value in unit.values("Service", "UnsetEnvironment"):
        for word in value.split():
            name, eq, wanted = word.partition("=")
            if not eq:
                certain.add(name)
            if name in environment and (not eq or environment[name] == wanted):
                del environment[name]

    return ExecStartResult(
        commands=commands,
        environment=environment,
        environment_files=files_written,
        service_type=service_type,
        working_directory=unit.get("Service", "WorkingDirectory"),
        user=unit.get("Service", "User"),
        warnings=warnings,
        load_errors=refused,
        unreadable_files=unreadable,
        certain=frozenset(certain),
    )
