"""Environment= values and EnvironmentFile= contents, as systemd 252 reads them.

Environment= (src/core/load-fragment.c config_parse_environ): each value is split into words with
quotes and C escapes (extract_first_word UNQUOTE|CUNESCAPE), specifiers applied, invalid assignments
skipped; a syntax error (unbalanced quote, unknown escape) drops the rest of that value, the words
before it are kept [checked with systemd --test 252]. An empty value resets (done by UnitFile.values).

EnvironmentFile= (src/basic/env-file.c parse_env_file_internal, 252): KEY=VALUE lines, '#'/';' comments
(in 252 a comment ending in a backslash also swallows the next line), single quotes literal, double
quotes with backslash escapes only for " \\ ` $ (others keep the backslash), unquoted backslash escapes
the next character, backslash-newline joins lines, trailing whitespace of unquoted values is dropped.
'export FOO=1' is not special: the name 'export FOO' is invalid and the line is dropped at exec time,
as are other invalid names/values (strv_env_clean). Later assignments win.
"""
from __future__ import annotations

from driftwatch.parse.said import Said
from driftwatch.parse.specifiers import SpecifierFailure, apply_specifiers
from driftwatch.redact import shown
from driftwatch.unitwords import LexInvalid, extract_word

WHITESPACE = " \t\n\r"
NEWLINE = "\n\r"
COMMENTS = "#;"
SHELL_NEED_ESCAPE = '"\\`$'
_NAME_CHARS = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def _assignment(word: str) -> str:
    """`NAME=…` for a message: the name when it is one, never the value (it may be a secret)."""
    name, eq, _ = word.partition("=")
    if eq and env_name_is_valid(name):
        return f"{name}= (value not shown)"
    return f"a word of {len(word)} characters without a valid NAME= (not shown)"


def env_name_is_valid(name: str) -> bool:
    return bool(name) and not ("0" <= name[0] <= "9") and all(c in _NAME_CHARS for c in name)


def env_value_is_valid(value: str) -> bool:
    # systemd 252 only requires valid UTF-8 here (control characters are accepted) [checked with --test]
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)


def env_assignment_is_valid(assignment: str) -> bool:
    name, eq, value = assignment.partition("=")
    return bool(eq) and env_name_is_valid(name) and env_value_is_valid(value)


def parse_environment_values(values: list[str], specifiers: dict | None = None,
                             warnings: list[str] | None = None) -> dict[str, str]:
    """Environment= values (already reset-processed) -> {name: value}; last wins, order of first setting kept."""
    env: dict[str, str] = {}
    for value in values:
        value = value.split("\0", 1)[0]
        i = 0
        while True:
            try:
                word, i = extract_word(value, i)
            except LexInvalid:
                if warnings is not None:
                    warnings.append(Said(f"Invalid syntax, ignoring: {value}",
                                         "Invalid syntax, ignoring: the rest of the value from column "
                                         f"{i + 1} (not shown)"))
                break
            if word is None:
                break
            try:
                word = apply_specifiers(word, specifiers)
            except SpecifierFailure as exc:
                if warnings is not None:
                    warnings.append(Said(f"Failed to resolve specifiers in {word}, ignoring: {exc}",
                                         f"Failed to resolve specifiers in {shown(word)}, ignoring: {exc}"))
                continue
            if not env_assignment_is_valid(word):
                if warnings is not None:
                    warnings.append(Said(f"Invalid environment assignment, ignoring: {word}",
                                         f"Invalid environment assignment, ignoring: {_assignment(word)}"))
                continue
            name, _, val = word.partition("=")
            env[name] = val
    return env


def _parse_env_file_pairs(text: str) -> list[tuple[str, str]]:
    """Port of parse_env_file_internal (systemd 252) -> raw (key, value) pairs in order."""
    pairs: list[tuple[str, str]] = []
    state = "PRE_KEY"
    key: list[str] = []
    value: list[str] = []
    last_key_ws = None
    last_value_ws = None

    def push(strip_value: bool) -> None:
        k = "".join(key if last_key_ws is None else key[:last_key_ws])
        v = value if (not strip_value or last_value_ws is None) else value[:last_value_ws]
        pairs.append((k, "".join(v)))

    text = text.split("\0", 1)[0]
    for c in text:
        if state == "PRE_KEY":
            if c in COMMENTS:
                state = "COMMENT"
            elif c not in WHITESPACE:
                state = "KEY"
                last_key_ws = None
                key = [c]
        elif state == "KEY":
            if c in NEWLINE:
                state = "PRE_KEY"
                key = []
            elif c == "=":
                state = "PRE_VALUE"
                last_value_ws = None
                value = []
            else:
                if c not in WHITESPACE:
                    last_key_ws = None
                elif last_key_ws is None:
                    last_key_ws = len(key)
                key.append(c)
        elif state == "PRE_VALUE":
            if c in NEWLINE:
                state = "PRE_KEY"
                push(False)
                key, value = [], []
            elif c == "'":
                state = "SINGLE_QUOTE_VALUE"
            elif c == '"':
                state = "DOUBLE_QUOTE_VALUE"
            elif c == "\\":
                state = "VALUE_ESCAPE"
            elif c not in WHITESPACE:
                state = "VALUE"
                value.append(c)
        elif state == "VALUE":
            if c in NEWLINE:
                state = "PRE_KEY"
                push(True)
                key, value = [], []
            elif c == "\\":
                state = "VALUE_ESCAPE"
                last_value_ws = None
            else:
                if c not in WHITESPACE:
                    last_value_ws = None
                elif last_value_ws is None:
                    last_value_ws = len(value)
                value.append(c)
        elif state == "VALUE_ESCAPE":
            state = "VALUE"
            if c not in NEWLINE:
                value.append(c)
        elif state == "SINGLE_QUOTE_VALUE":
            if c == "'":
                state = "PRE_VALUE"
            else:
                value.append(c)
        elif state == "DOUBLE_QUOTE_VALUE":
            if c == '"':
                state = "PRE_VALUE"
            elif c == "\\":
                state = "DOUBLE_QUOTE_VALUE_ESCAPE"
            else:
                value.append(c)
        elif state == "DOUBLE_QUOTE_VALUE_ESCAPE":
            state = "DOUBLE_QUOTE_VALUE"
            if c in SHELL_NEED_ESCAPE:
                value.append(c)
            elif c != "\n":
                value.append("\\")
                value.append(c)
        elif state == "COMMENT":
            if c == "\\":
                state = "COMMENT_ESCAPE"
            elif c in NEWLINE:
                state = "PRE_KEY"
        elif state == "COMMENT_ESCAPE":
            state = "COMMENT"  # systemd < 254: an escaped newline continues the comment
    if state in ("PRE_VALUE", "VALUE", "VALUE_ESCAPE", "SINGLE_QUOTE_VALUE", "DOUBLE_QUOTE_VALUE",
                 "DOUBLE_QUOTE_VALUE_ESCAPE"):
        push(state == "VALUE")
    return pairs


def parse_environment_file(text: str, warnings: list[str] | None = None) -> dict[str, str]:
    """EnvironmentFile= content -> {name: value} as the service would see it (invalid entries dropped)."""
    raw: dict[str, str] = {}
    for key, value in _parse_env_file_pairs(text):
        raw[key] = value  # strv_env_replace_consume: later wins, first position kept
    env: dict[str, str] = {}
    for key, value in raw.items():  # strv_env_clean at exec time drops invalid entries
        if not env_assignment_is_valid(f"{key}={value}"):
            if warnings is not None:
                warnings.append(Said(f"Ignoring invalid environment assignment '{key}={value}'",
                                     f"Ignoring invalid environment assignment {_assignment(key + '=' + value)}"))
            continue
        env[key] = value
    return env
