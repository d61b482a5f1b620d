"""What every snapshot store shares (the file store, SQLite and PostgreSQL): the hashes that
identify a snapshot's content, state and source, the records listings return, what a save and a
run log report, prune's protections and request check, and the history walks built on `load`.
Kept apart from the facade (`store.SnapshotStore`) so the backends import it and not each other."""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ..errors import DriftwatchError, InputError
from ..fileio import read_yaml
from ..timestamps import format_utc, parse_utc

if TYPE_CHECKING:  # the snapshot module (and the engines under it) only when a snapshot is typed
    from .snapshot import Snapshot

DEFAULT_STORE = "~/.local/state/driftwatch"
LATEST = "latest.yaml"
RUNS = "runs.log"
MAX_PER_SECOND = 100  # sequence numbers 00..99 keep the names fixed-width

# Filled in on every read of a snapshot (re-typed from the argv under a catalog): not part of
# what was collected, so not part of its content hash.
_DERIVED_FIELDS = ("engine", "issues")


_PLAIN_NAME = re.compile(r"[A-Za-z0-9@._:-]+\Z")
_HASHED = re.compile(r"[A-Za-z0-9@._:%-]{100}-[0-9a-f]{16}\Z")


def safe_component(text: str | None, default: str = "local") -> str:
    """A host or unit name as one directory name and store key, distinct for distinct names.

    A name of ``[A-Za-z0-9@._:-]`` only is kept as it is (the names stores have always used); any
    other character is escaped as ``%XX`` per UTF-8 byte (``gpu/01`` is ``gpu%2F01``, never
    ``gpu_01``, so two hosts never share one history); a name of dots only is all ``%2E``. A name
    of over 128 characters keeps its start and a hash of the whole. `component_name` reverses it."""
    name = text or default
    if _HASHED.match(name):  # already a long name's form: the same again (groups() lists it as it is)
        return name
    if _PLAIN_NAME.match(name) and set(name) != {"."}:
        cleaned = name
    elif set(name) == {"."}:
        cleaned = "%2E" * len(name)
    else:
        cleaned = "".join(c if _PLAIN_NAME.match(c)
                          else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
                          for c in name)
    if len(cleaned) > 128:
        import hashlib  # only for such names and for hashing: a question that reads rows needs neither
        cleaned = cleaned[:100] + "-" + hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return cleaned


def component_name(component: str) -> str:
    """The host or unit name a `safe_component` stands for (a long name's hashed form stays as it is)."""
    if "%" not in component or _HASHED.match(component):
        return component
    from urllib.parse import unquote
    return unquote(component, errors="surrogateescape")


def snapshot_hash(snapshot: Snapshot | dict) -> str:
    """``sha256:…`` of what was collected (the saved form, minus the fields re-derived on read).

    A snapshot and a baseline made from it (``baseline save --from``) have the same hash, so a
    baseline's `snapshot_hash(baseline.snapshot)` protects its source file from `prune`.
    """
    data = dict(snapshot) if isinstance(snapshot, dict) else snapshot_dict(snapshot)
    for name in _DERIVED_FIELDS:
        data.pop(name, None)
    canon = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    import hashlib
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


def state_hash(snapshot: Snapshot | dict) -> str:
    """``sha256:…`` of the state a snapshot records: `snapshot_hash` without `collected_at` and
    without the figures measured in the journal or by the probe (``runtime.measured``,
    ``runtime.effective.figures``, which move on every run).
    Two consecutive snapshots with the same state hash are one snapshot and two runs in the store."""
    data = dict(snapshot) if isinstance(snapshot, dict) else snapshot_dict(snapshot)
    for name in _DERIVED_FIELDS + ("collected_at",):
        data.pop(name, None)
    if isinstance(data.get("runtime"), dict):
        runtime = {k: v for k, v in data["runtime"].items() if k != "measured"}
        if isinstance(runtime.get("effective"), dict):  # the probe's live figures move like the journal's
            runtime["effective"] = {k: v for k, v in runtime["effective"].items() if k != "figures"}
        data["runtime"] = runtime
    canon = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    import hashlib
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


# the hashes' canonical JSON (`json.dumps(…, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
# default=str)`), one encoder: json.dumps builds a new one per call when given options
_CANON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


class RowHashes(NamedTuple):
    state: str  # `state_hash`
    content: str  # `snapshot_hash`
    source: str  # `source_hash`


def row_hashes(data: dict) -> RowHashes:
    """`state_hash`, `snapshot_hash` and `source_hash` of one snapshot document, byte for byte, with
    the document serialised once (each top-level field once; the three canonical texts are joined
    from those pieces) instead of three times: a save is one pass for the hashes, one for the row."""
    if not all(isinstance(k, str) for k in data):
        return RowHashes(state_hash(data), snapshot_hash(data), source_hash(data))
    import hashlib
    canon = _CANON.encode
    pieces = {k: canon(v) for k, v in data.items() if k not in _DERIVED_FIELDS}
    state = dict(pieces)
    state.pop("collected_at", None)
    runtime = data.get("runtime")
    if isinstance(runtime, dict) and ("measured" in runtime or isinstance(runtime.get("effective"), dict)):
        kept = {k: v for k, v in runtime.items() if k != "measured"}
        if isinstance(kept.get("effective"), dict):
            kept["effective"] = {k: v for k, v in kept["effective"].items() if k != "figures"}
        state["runtime"] = canon(kept)
    source = {k: v for k, v in pieces.items() if k not in ("host", "unit")}

    names = {k: canon(k) + ":" for k in pieces}

    def digest(parts: dict[str, str]) -> str:
        text = "{" + ",".join(names[k] + parts[k] for k in sorted(parts)) + "}"
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return RowHashes(digest(state), digest(pieces), digest(source))


def source_hash(snapshot: Snapshot | dict) -> str:
    """``sha256:…`` of a snapshot as collected, whatever host and unit name it was later given
    (`snapshot_hash` without ``host`` and ``unit``: ``baseline save --from FILE --host-name ct129``
    renames the host of the copy it keeps). A baseline made from a stored snapshot has its file's
    source hash; two snapshots collected at different times never share one."""
    data = dict(snapshot) if isinstance(snapshot, dict) else snapshot_dict(snapshot)
    for name in ("host", "unit"):
        data.pop(name, None)
    return snapshot_hash(data)


class BaselineSource(NamedTuple):
    """What `prune` keeps for one baseline: the stored snapshots whose `source_hash` is `digest`;
    when none has it (a baseline edited by hand), those `key` names (host, unit, collected_at:
    every snapshot of that second, to be safe)."""

    name: str
    digest: str
    key: SnapshotKey | None


class SnapshotKey(NamedTuple):
    """A snapshot named by what a baseline records of it: host, unit and `collected_at` (aware UTC).
    `prune` never deletes a snapshot a key in `protected` names."""

    host: str | None
    unit: str | None
    collected_at: _dt.datetime


@dataclass(frozen=True)
class SaveResult:
    """What `SnapshotStore.save_run` did: wrote a new file, or recorded a run of the newest one."""

    path: Path  # the snapshot that holds this run's state
    written: bool  # False: the same state as the newest snapshot, only the run time was recorded
    collected_at: _dt.datetime


@dataclass(frozen=True)
class Seen:
    """The runs a snapshot stands for: its own, and the unchanged runs after it in ``runs.log``."""

    first: _dt.datetime
    last: _dt.datetime
    runs: int


def snapshot_dict(snapshot: Snapshot) -> dict:
    """The snapshot as the document every backend stores (typing it imports the engines: lazily)."""
    from .snapshot import snapshot_to_dict
    return snapshot_to_dict(snapshot)


def stamped(snapshot: Snapshot) -> tuple[Snapshot, _dt.datetime]:
    """(the snapshot with `collected_at` in the one timestamp format, that moment), as every backend
    saves it; an unreadable time is one InputError line naming the unit."""
    try:
        moment = parse_utc(snapshot.collected_at)
    except ValueError as exc:
        raise InputError(f"snapshot of {snapshot.host or 'local'}:{snapshot.unit}: {exc}") from None
    if snapshot.collected_at != format_utc(moment):
        from dataclasses import replace
        snapshot = replace(snapshot, collected_at=format_utc(moment))
    return snapshot, moment


def read_yaml_snapshot(path: str | os.PathLike, engine_version: str | None = None) -> Snapshot:
    """One snapshot saved as a YAML file."""
    from .snapshot import snapshot_from_dict
    name = os.fspath(path)
    return snapshot_from_dict(read_yaml(name, "snapshot"), name, engine_version)


@dataclass(frozen=True)
class SnapshotRecord:
    """One snapshot file in the store, known from its name (nothing is parsed until `read`)."""

    path: Path
    host: str  # the store's folder names (`safe_component` of the snapshot's host and unit)
    unit: str
    collected_at: _dt.datetime  # aware, UTC
    seq: int = 0

    @property
    def stamp(self) -> str:
        """`collected_at` in the one timestamp format (``2026-11-28T03:00:00Z``)."""
        return format_utc(self.collected_at)

    @property
    def sort_key(self) -> tuple:
        return (self.collected_at, self.seq, self.path.name)

    def read(self, engine_version: str | None = None) -> Snapshot:
        return read_yaml_snapshot(self.path, engine_version)

    def content_hash(self) -> str:
        """`snapshot_hash` of the file's content (InputError when it holds no snapshot)."""
        data = read_yaml(self.path, "snapshot")
        if not isinstance(data, dict):
            raise InputError(f"{self.path}: not a driftwatch snapshot")
        return snapshot_hash(data)

    def state_hash(self) -> str:
        """`state_hash` of the file's content (InputError when it holds no snapshot)."""
        data = read_yaml(self.path, "snapshot")
        if not isinstance(data, dict):
            raise InputError(f"{self.path}: not a driftwatch snapshot")
        return state_hash(data)

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class StoredSnapshot:
    """A record and the snapshot read from it."""

    record: SnapshotRecord
    snapshot: Snapshot

    @property
    def path(self) -> Path:
        return self.record.path

    @property
    def collected_at(self) -> _dt.datetime:
        return self.record.collected_at


class StoreBase:
    """What every backend shares: problems named once, reading a record, and the history walks
    (`first_seen`, `since`) built on the backend's `load`."""

    indexed = False  # True: rows in a database (load(previous=True) reads from the cut only)
    problems: list[str]
    on_problem: Callable[[str], None] | None

    def _problem(self, message: str) -> None:
        if message in self.problems:
            return
        self.problems.append(message)
        if self.on_problem is not None:
            self.on_problem(message)

    def read(self, record: SnapshotRecord | str | os.PathLike, engine_version: str | None = None) -> Snapshot:
        if isinstance(record, SnapshotRecord):
            return record.read(engine_version)
        return read_yaml_snapshot(record, engine_version)


def since_window(records: list, since: _dt.datetime) -> list:
    """The records (oldest first) a change since `since` is read from: from the last one before the cut
    on, by position (two records of one second are two), or all of them when none is before it."""
    before = [i for i, r in enumerate(records) if r.collected_at < since]
    return records[before[-1]:] if before else records


def check_prune_request(keep: int | None, older_than: _dt.timedelta | None) -> None:
    """What every store's `prune` accepts: a whole `keep` ≥ 1 and/or a non-negative `older_than`."""
    if keep is None and older_than is None:
        raise InputError("prune: say what to delete (keep N newest and/or older than a duration)")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise InputError(f"prune: keep must be a whole number of at least 1 (the newest is always kept), "
                         f"not {keep!r}")
    if older_than is not None and older_than < _dt.timedelta(0):
        raise InputError(f"prune: older_than must not be negative, not {older_than}")


def baseline_protections(directory: str | os.PathLike,
                         on_problem: Callable[[str], None] | None = None) -> list[BaselineSource]:
    """What `prune` must keep for the baselines in `directory` (``*.yaml``): for each, the stored
    snapshot it was made from — by `source_hash` (exact, whatever host name the baseline gave it),
    else by the host, unit and `collected_at` it records. A file that is no baseline is skipped
    (named through `on_problem`); a missing directory protects nothing."""
    folder = Path(os.path.expanduser(os.fspath(directory)))
    out: list[BaselineSource] = []
    try:
        names = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return out
    except OSError as exc:
        raise InputError(f"{folder}: cannot read the baselines: {exc.strerror or exc}") from None
    for path in names:
        try:
            data = read_yaml(path, "baseline")
        except DriftwatchError as exc:
            if on_problem:
                on_problem(f"{path}: not read, protects nothing ({exc})")
            continue
        snap = data.get("snapshot") if isinstance(data, dict) else None
        if isinstance(data, dict) and data.get("schema") == "driftwatch.snapshot/v1":
            snap = data  # a snapshot kept among the baselines
        if not isinstance(snap, dict):
            if on_problem:
                on_problem(f"{path}: not a driftwatch baseline, protects nothing")
            continue
        try:
            key = SnapshotKey(data.get("host") or snap.get("host"), data.get("unit") or snap.get("unit"),
                              parse_utc(snap.get("collected_at")))
        except ValueError:
            key = None
        out.append(BaselineSource(path.stem, source_hash(snap), key))
    return out


__all__ = ["DEFAULT_STORE", "LATEST", "MAX_PER_SECOND", "RUNS", "BaselineSource", "RowHashes", "row_hashes",
           "SaveResult", "Seen", "SnapshotKey", "SnapshotRecord", "StoreBase", "StoredSnapshot", "baseline_protections",
           "check_prune_request", "read_yaml_snapshot", "safe_component", "component_name", "snapshot_hash",
           "source_hash", "state_hash"]


class Store(Protocol):
    """What every backend answers (`DatabaseStore`, `FileStore`): the use cases in run/ and the
    transfer between stores ask a store for nothing else, so either backend serves them."""

    problems: list[str]  # files or rows skipped, one line each (also said through `on_problem`)

    @property
    def root(self) -> str | os.PathLike | None:
        """What listings print: the directory, or a database URL without its password."""

    def groups(self, host: str | None = None) -> list[tuple[str, str]]:
        """The (host, unit) pairs the store holds (of `host`), sorted."""

    def records(self, host: str | None = None, unit: str | None = None) -> list[SnapshotRecord]:
        """The snapshots (of `host`/`unit`), oldest first per host/unit, unread."""

    def latest(self, host: str | None, unit: str | None) -> SnapshotRecord | None:
        """The newest snapshot of one host/unit, unread."""

    def read(self, record: SnapshotRecord | str | os.PathLike, engine_version: str | None = None) -> Snapshot:
        """One snapshot a record (or a listed path) names."""

    def load(self, host: str | None, unit: str | None, since: _dt.datetime | None = None,
             engine_version: str | None = None, previous: bool = False) -> list[StoredSnapshot]:
        """The readable snapshots of one host/unit, oldest first (from `since`; with `previous`, and
        the last one before it)."""

    def newest_first(self, host: str | None, unit: str | None,
                     engine_version: str | None = None) -> Iterable[StoredSnapshot]:
        """The readable snapshots of one host/unit, newest first, read as they are asked for."""

    def runs(self, host: str | None, unit: str | None) -> list[_dt.datetime]:
        """When each run of one host/unit was, oldest first."""

    def seen(self, host: str | None, unit: str | None) -> dict[Path, Seen]:
        """Per snapshot of one host/unit: how often and when last its state was seen."""

    def save(self, snapshot: Snapshot, *, dedupe: bool = True) -> Path:
        """Save one snapshot; the path that names it."""

    def save_run(self, snapshot: Snapshot, *, dedupe: bool = True) -> SaveResult:
        """Save one snapshot, or record a run of the newest one when its state is unchanged."""

    def prune(self, keep: int | None = None, older_than: _dt.timedelta | None = None,
              protected: Iterable[str | os.PathLike | SnapshotKey | BaselineSource] = (), *,
              host: str | None = None, unit: str | None = None, now: _dt.datetime | None = None,
              dry_run: bool = False) -> list[SnapshotRecord]:
        """Delete old snapshots, never the newest of a host/unit nor a `protected` one; the records
        deleted (or that would be, with `dry_run`)."""

