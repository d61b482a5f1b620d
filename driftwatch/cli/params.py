"""Parameter types that refuse what would fail later: numbers that are not finite or out of their
documented range (``--connect-timeout nan``, ``inf``, ``1e308``, ``0``, ``-5``), and paths too long
or not text (a component over 255 bytes, over 4096 bytes in all, a NUL, bytes that are not UTF-8).

Each refusal is click's one-line "Invalid value for '--OPTION': …" (exit 2), on the command line
and for the same key in the config file (config.py converts a key's value with its option's type).
The range is shown in --help (``[0<x<=3600]``), as click shows its own ranges.
"""
from __future__ import annotations

import errno
import math
import os

import click

NAME_MAX = 255  # bytes in one path component (Linux, most file systems)
PATH_MAX = 4096  # bytes in a whole path


class FiniteFloat(click.FloatRange):
    """A float in a range, and finite: click's FloatRange lets ``nan`` through (every comparison with
    it is false), and ``1e308`` or ``inf`` through when the range has no upper end."""

    name = "float"  # the metavar FLOAT, as click's own float types show it

    def convert(self, value, param, ctx):
        if isinstance(value, bool):
            self.fail(f"{value!r} is not a number.", param, ctx)
        if isinstance(value, str) and not value.strip():
            self.fail("an empty value is not a number.", param, ctx)
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def seconds(high: float) -> FiniteFloat:
    """Seconds: more than 0, at most `high` (a timeout of 0 or less times out at once; a huge one
    overflows the clock it is added to)."""
    return FiniteFloat(0, high, min_open=True)


CONNECT_TIMEOUT = seconds(3600)  # --connect-timeout: an hour at most
COMMAND_TIMEOUT = seconds(86400)  # --command-timeout: a day at most
SHARE = FiniteFloat(0, 1)  # a fraction (--workload-prefix-share)
PORT = click.IntRange(1, 65535)  # a TCP port (--smtp-port)
COUNT = click.IntRange(1, 10**9)  # a count of things kept (--keep): a huge one overflows the database's integers


def path_problem(text: str) -> str | None:
    """Why `text` cannot be a path on this system, or None: a NUL, bytes that are not UTF-8 (a
    name that could be neither printed nor saved), a component over NAME_MAX or a whole over
    PATH_MAX bytes (the system's "File name too long")."""
    if "\x00" in text:
        return "a path cannot hold a NUL character"
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid UTF-8"
    if len(raw) > PATH_MAX:
        return f"a path of {len(raw)} bytes (at most {PATH_MAX})"
    longest = max((len(part) for part in raw.split(b"/")), default=0)
    if longest > NAME_MAX:
        return f"a file name of {longest} bytes in the path (at most {NAME_MAX} per name)"
    return None


def short_path(text: str, limit: int = 60) -> str:
    """A path as an error line shows it: a long one cut, with its length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text.encode('utf-8', 'surrogateescape'))} bytes)"


class CheckedPath(click.Path):
    """click.Path that refuses a path the system cannot take (`path_problem`) in one line, before any
    file is opened: never "internal error: OSError: File name too long"."""

    def convert(self, value, param, ctx):
        text = os.fsdecode(value) if isinstance(value, bytes) else value
        if isinstance(text, str):
            why = path_problem(text)
            if why:
                self.fail(f"{short_path(text)!r}: {why}.", param, ctx)
        return super().convert(value, param, ctx)


def argv_problem(words: list[str]) -> str | None:
    """The one line for a command-line word that is not valid UTF-8 (the shell passed bytes that
    no path, host or unit name this tool writes can hold), or None."""
    for word in words:
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            shown = word.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
            return f"{short_path(shown)}: an argument that is not valid UTF-8"
    return None


def path_error_line(exc: BaseException) -> str | None:
    """The one line for an error a path the system refuses causes (too long, a NUL, bytes that are
    not UTF-8), for the CLI's error boundary (a path option of type str reaches open() unchecked);
    None for any other error, which stays an internal error."""
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        name = exc.filename if isinstance(exc.filename, str) else os.fsdecode(exc.filename or b"")
        return f"{short_path(name)}: file name too long (at most {NAME_MAX} bytes per name, {PATH_MAX} in all)"
    if isinstance(exc, ValueError) and "embedded null" in str(exc):
        return "a path cannot hold a NUL character"
    if isinstance(exc, UnicodeEncodeError) and "surrogates not allowed" in str(exc.reason):
        return "a path or name that is not valid UTF-8"
    return None


__all__ = ["COMMAND_TIMEOUT", "CONNECT_TIMEOUT", "COUNT", "PORT", "SHARE", "CheckedPath", "FiniteFloat", "NAME_MAX",
           "PATH_MAX", "argv_problem", "path_error_line", "path_problem", "seconds", "short_path"]
