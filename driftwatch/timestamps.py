"""The one timestamp format: RFC 3339, UTC, ``Z``, whole seconds (``2026-11-28T03:00:00Z``).

Every collector stamps what it reads with `utc_now()`. `parse_utc()` also reads what older
driftwatch releases stored (``2026-11-28T03:00:00+00:00`` from the SSH collector, fractions of a
second, any other offset) and returns an aware UTC datetime. Snapshot file names use the compact
form of the same instant (`file_stamp`, ``20261128T030000Z``): fixed width, so names sort in time
order.
"""
from __future__ import annotations

import datetime as _dt
import re

UTC = _dt.timezone.utc
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


def parse_utc(text: str) -> _dt.datetime:
    """An aware UTC datetime from an RFC 3339 time with ``Z`` or a numeric offset.

    Raises ValueError for anything else, including a time without an offset (its zone is unknown).
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


__all__ = ["format_utc", "utc_now", "parse_utc", "file_stamp", "parse_file_stamp"]
