"""The one timestamp format: RFC 3339, UTC, ``Z``, whole seconds (``2026-11-28T03:00:00Z``).

Every collector stamps what it reads with `utc_now()`. `parse_utc()` also reads what older
driftwatch releases stored (``2026-11-28T03:00:00+00:00`` from the SSH collector, fractions of a
second, any other offset) and returns an aware UTC datetime. Snapshot file names use the compact
form of the same instant (`file_stamp`, ``20261128T030000Z``): fixed width, so names sort in time
order. What the user types for a time (`--since 7d`, `--older-than 30d`) is read here too
(`parse_when`, `parse_duration`).
"""
from __future__ import annotations

import datetime as _dt
import re

from .errors import InputError

UTC = _dt.timezone.utc
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^(?:(\d+)\s*([smhdw])\s*)+$", re.I)
_PART = re.compile(r"(\d+)\s*([smhdw])", re.I)
_FILE_STAMP = re.compile(r"^(\d{8})T(\d{6})(Z|[+-]\d{4})$")


def format_utc(moment: _dt.datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` for an aware datetime (converted to UTC, fraction dropped)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime: say which time zone it is in")
    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


_EPOCH_STAMPS: dict[int, str] = {}


def epoch_stamp(seconds: int) -> str:
    """`format_utc` of whole epoch seconds (as a store keeps them), remembered: a history names each
    row two or three times ("at", "previous", "first"/"latest")."""
    text = _EPOCH_STAMPS.get(seconds)
    if text is None:
        if len(_EPOCH_STAMPS) > 100_000:
            _EPOCH_STAMPS.clear()
        text = _EPOCH_STAMPS[seconds] = format_utc(_dt.datetime.fromtimestamp(seconds, UTC))
    return text


def utc_now() -> str:
    """Now, in the one format every collector writes."""
    return format_utc(_dt.datetime.now(UTC))


def parse_utc(text: object) -> _dt.datetime:
    """An aware UTC datetime from an RFC 3339 time with ``Z`` or a numeric offset.

    Raises ValueError for anything else (a value that is no string too: a YAML field read as it is),
    including a time without an offset (its zone is unknown).
    """
    if not isinstance(text, str):
        raise ValueError(f"not a timestamp: {text!r}")
    value = text.strip()
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    try:
        moment = _dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}") from None
    if moment.tzinfo is None:
        raise ValueError(f"timestamp without a UTC offset: {text!r}")
    return moment.astimezone(UTC)


def file_stamp(moment: _dt.datetime) -> str:
    """``YYYYMMDDTHHMMSSZ``: the instant in a file name (no ``:``, fixed width)."""
    return format_utc(moment).replace("-", "").replace(":", "")


def parse_file_stamp(text: str) -> _dt.datetime:
    """Inverse of `file_stamp`; also reads the ``20261128T030000+0000`` names older releases wrote."""
    m = _FILE_STAMP.match(text)
    if not m:
        raise ValueError(f"not a file time stamp: {text!r}")
    date, time, zone = m.groups()
    zone = "+00:00" if zone == "Z" else f"{zone[:3]}:{zone[3:]}"
    return parse_utc(f"{date[:4]}-{date[4:6]}-{date[6:]}T{time[:2]}:{time[2:4]}:{time[4:]}{zone}")



# --------------------------------------------------------------------------- what the user types


def parse_duration(text: str, option: str = "--older-than") -> _dt.timedelta:
    """``90s``, ``30m``, ``12h``, ``7d``, ``2w`` or a sum like ``1d12h``."""
    value = str(text or "").strip()
    if not _DURATION.match(value):
        raise InputError(f"{option} {text!r}: not a duration (say e.g. 30m, 12h, 7d, 2w or 1d12h)")
    seconds = sum(int(n) * _UNITS[u.lower()] for n, u in _PART.findall(value))
    try:
        return _dt.timedelta(seconds=seconds)
    except OverflowError:
        raise InputError(f"{option} {text!r}: too long") from None


def parse_when(text: str, now: _dt.datetime | None = None, option: str = "--since") -> _dt.datetime:
    """An instant: RFC 3339 with a zone (``2026-11-28T03:00:00Z``), or a duration back from now (``7d``)."""
    value = str(text or "").strip()
    if _DURATION.match(value):
        try:
            return (now or _dt.datetime.now(UTC)) - parse_duration(value, option)
        except OverflowError:
            raise InputError(f"{option} {text!r}: too long ago") from None
    try:
        return parse_utc(value)
    except ValueError as exc:
        raise InputError(f"{option} {text!r}: give an RFC 3339 time with its zone (2026-11-28T03:00:00Z) "
                         f"or a duration back from now (7d, 12h) ({exc})") from None


__all__ = ["format_utc", "utc_now", "parse_utc", "file_stamp", "parse_file_stamp", "parse_duration", "parse_when"]
