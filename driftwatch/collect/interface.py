"""The one interface every collector implements, and the per-host statuses they report.

Collectors return data (``RawUnit``), never parse it. A collector for many hosts never raises for
one host's failure: the failure is recorded in ``RawUnit.status`` / ``RawUnit.error``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from driftwatch.errors import CollectError
from driftwatch.collect.raw import RawUnit

# RawUnit.status values
OK = "ok"
FALLBACK = "fallback"  # systemctl cat failed; the unit was read from disk in systemd's order
UNREACHABLE = "unreachable"
AUTH_FAILED = "auth failed"
HOST_KEY_REFUSED = "host key refused"
TIMEOUT = "timeout"
UNIT_NOT_FOUND = "unit not found"
UNIT_MASKED = "unit masked"  # the fragment is a symlink to /dev/null: the unit cannot start
ERROR = "error"

STATUSES = (OK, FALLBACK, UNREACHABLE, AUTH_FAILED, HOST_KEY_REFUSED, TIMEOUT, UNIT_NOT_FOUND, ERROR)
READ_STATUSES = (OK, FALLBACK)  # the unit text was read; anything else means "could not be read"

# RawUnit.source values
SOURCE_SYSTEMCTL = "systemctl cat"
SOURCE_DISK = "disk"
SOURCE_FILE = "file"


class HostError(CollectError):
    """A whole host failed (connect, host key, auth, timeout). ``status`` is a RawUnit status."""

    status = ERROR

    def __init__(self, message: str, status: str | None = None):
        super().__init__(message)
        if status is not None:
            self.status = status


class Collector(ABC):
    """Brings back one unit of one host as a RawUnit."""

    @abstractmethod
    def collect(self, unit: str) -> RawUnit:
        """Collect ``unit`` (validated against systemd's unit-name grammar first)."""
