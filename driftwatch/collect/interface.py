"""The one interface every collector implements, the per-host statuses they report, and the
registry that chooses a collector by target kind.

Collectors return data (``RawUnit``), never parse it. A collector for many hosts never raises for
one host's failure: the failure is recorded in ``RawUnit.status`` / ``RawUnit.error``.

A target names its kind ("ssh", "unit-file", "snapshot"; see ``run/targets.Target``); ``collector_for``
gives the collector class of that kind. A run prepares each kind once (``prepare``: what every
target of the kind shares, checked before anything is read), opens one collector per target
(``open``: one host, one file) and asks it for the target's units. Adding a kind is a module here
with a ``Collector`` subclass and one line in ``COLLECTORS``.
"""
from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from driftwatch.collect.raw import RawUnit
from driftwatch.errors import CollectError, InputError

if TYPE_CHECKING:
    from driftwatch.collect.inventory import HostTarget
    from driftwatch.collect.reader import UnitReader
    from driftwatch.collect.sshoptions import SSHOptions

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
SOURCE_SNAPSHOT = "snapshot"  # a stored snapshot: the store (snapshots/) reads it, collect/ only names it


class HostError(CollectError):
    """A whole host failed (connect, host key, auth, timeout). ``status`` is a RawUnit status."""

    status = ERROR

    def __init__(self, message: str, status: str | None = None):
        super().__init__(message)
        if status is not None:
            self.status = status


class CollectTarget(Protocol):
    """What a collector needs of a target (``run/targets.Target`` has it; so has ``Where``)."""

    @property
    def kind(self) -> str: ...  # "ssh" | "unit-file" | "snapshot"
    @property
    def host(self) -> str | None: ...  # the host's recorded name
    @property
    def path(self) -> str | None: ...  # the unit file or snapshot (kinds unit-file, snapshot)
    @property
    def address(self) -> HostTarget | None: ...  # how to reach the host (kind ssh)


@dataclass(frozen=True)
class Where:
    """A target as collect/ sees it, for callers without a ``run/targets.Target`` (collect_fleet)."""

    kind: str
    host: str | None = None
    path: str | None = None
    address: HostTarget | None = None

    @property
    def name(self) -> str:
        return target_name(self)


def target_name(target: CollectTarget) -> str:
    """The name a target's units are recorded under when they cannot be read."""
    return target.host or (target.address.name if target.address is not None else None) or target.path or ""


@dataclass(frozen=True)
class CollectOptions:
    """How to collect, for every kind: how to reach hosts, and who reads command lines."""

    ssh: SSHOptions
    reader: UnitReader


class Collector(ABC):
    """Brings back units of one target (one host, one file) as RawUnits."""

    kind: ClassVar[str] = ""  # the target kind it reads (its key in COLLECTORS)
    remote: ClassVar[bool] = False  # reads another machine: in parallel, under a watchdog, never raising

    @classmethod
    def prepare(cls, options: CollectOptions) -> Any:
        """What every target of this kind shares in one run (an SSH config, known_hosts), made once.
        Raises InputError for bad input, before any target is read."""
        return None

    @classmethod
    @abstractmethod
    def open(cls, target: CollectTarget, options: CollectOptions, prepared: Any) -> Collector:
        """The collector for one target (nothing is read yet). Raises InputError when the target
        cannot be read at all (an unusable ssh config entry); the run records it for its units."""

    @classmethod
    def group_key(cls, target: CollectTarget) -> tuple:
        """Targets with one key share one collector (a host's units share one SSH connection)."""
        return (target.kind, target.host, target.path)

    @abstractmethod
    def collect(self, unit: str) -> RawUnit:
        """Collect ``unit`` (validated against systemd's unit-name grammar first)."""

    def budget(self, units: int) -> float | None:
        """Seconds after which the run closes this collector to unblock it (None: no watchdog)."""
        return None

    def close(self) -> None:
        """Release what it holds (a connection); also called from another thread to abort it."""
        return None


# kind -> (module, class): imported when asked, so a run reading only files never loads the SSH code
COLLECTORS: dict[str, tuple[str, str]] = {
    "unit-file": ("driftwatch.collect.local", "UnitFileCollector"),
    "snapshot": ("driftwatch.collect.snapshot", "SnapshotCollector"),
    "ssh": ("driftwatch.collect.ssh", "SSHCollector"),
}


def collector_for(kind: str) -> type[Collector]:
    """The collector class of a target kind; InputError for a kind no collector reads."""
    try:
        module, name = COLLECTORS[kind]
    except KeyError:
        raise InputError(f"no collector reads targets of kind {kind!r} (known: {', '.join(COLLECTORS)})") from None
    collector = getattr(importlib.import_module(module), name)
    if collector.kind != kind:  # a registry line naming the wrong class: a bug, said plainly
        raise CollectError(f"the collector registered for {kind!r} reads {collector.kind!r}")
    return collector
