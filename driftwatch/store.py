"""The snapshot store: every snapshot driftwatch saved, per host and unit, in time order.

Layout (``--store``, default ``~/.local/state/driftwatch``)::

    STORE/HOST/UNIT/20261128T030000Z-00.yaml   one file per run (schema driftwatch.snapshot/v1)
    STORE/HOST/UNIT/20261128T030000Z-01.yaml   a second snapshot in the same second
    STORE/HOST/UNIT/latest.yaml                a copy of the last one saved

File names are the UTC second the unit was read (`timestamps.file_stamp`) and a two-digit
sequence number, so within a folder name order is time order. Files written by older releases
(``STAMP.yaml``, ``STAMP-1.yaml``, ``20261128T030000+0000.yaml``) are still read: records are
ordered by the instant parsed from the name (from the content when the name holds none), then the
sequence number, never by the raw name. Every file is written atomically and never overwritten
(`fileio.write_new`); `prune` only deletes whole files, never the newest snapshot of a host/unit
(so ``latest.yaml`` always stays a copy of a snapshot that exists) and never a protected one.

A file that cannot be dated or read (foreign, corrupt, a newer schema) is skipped, and a problem
naming it is reported (`SnapshotStore.problems`, or the ``on_problem`` callback): it never breaks a
listing or a history, and is never deleted.

History: `SnapshotStore.timeline` gives consecutive (older, newer) snapshots of one host/unit;
`first_seen` / `since` give the first snapshot in which something held (ever, or in the current
unbroken run).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

from .errors import DriftwatchError, InputError
from .fileio import dump_yaml, read_yaml, write_atomic, write_new
from .snapshot import Snapshot, snapshot_from_dict, snapshot_to_dict
from .timestamps import UTC, file_stamp, format_utc, parse_file_stamp, parse_utc

DEFAULT_STORE = "~/.local/state/driftwatch"
LATEST = "latest.yaml"
MAX_PER_SECOND = 100  # sequence numbers 00..99 keep the names fixed-width

_NAME = re.compile(r"^(?P<stamp>\d{8}T\d{6}(?:Z|[+-]\d{4}))(?:-(?P<seq>\d{1,6}))?\.yaml$")
# Filled in on every read of a snapshot (re-typed from the argv under a catalog): not part of
# what was collected, so not part of its content hash.
_DERIVED_FIELDS = ("engine", "issues")


def safe_component(text: str | None, default: str = "local") -> str:
    """A host or unit name as one directory name (no '/', no '..' tricks)."""
    cleaned = re.sub(r"[^A-Za-z0-9@._:-]", "_", text or default) or default
    return "_" * len(cleaned) if set(cleaned) == {"."} else cleaned


def snapshot_hash(snapshot: Snapshot | dict) -> str:
    """``sha256:…`` of what was collected (the saved form, minus the fields re-derived on read).

    A snapshot and a baseline made from it (``baseline save --from``) have the same hash, so a
    baseline's `snapshot_hash(baseline.snapshot)` protects its source file from `prune`.
    """
    data = snapshot_to_dict(snapshot) if isinstance(snapshot, Snapshot) else dict(snapshot)
    for name in _DERIVED_FIELDS:
        data.pop(name, None)
    canon = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


def read_snapshot_file(path: str | os.PathLike, engine_version: str | None = None) -> Snapshot:
    """One saved snapshot, from the store or anywhere else (``--snapshot FILE``)."""
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
        return read_snapshot_file(self.path, engine_version)

    def content_hash(self) -> str:
        """`snapshot_hash` of the file's content (InputError when it holds no snapshot)."""
        data = read_yaml(self.path, "snapshot")
        if not isinstance(data, dict):
            raise InputError(f"{self.path}: not a driftwatch snapshot")
        return snapshot_hash(data)


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


@dataclass
class SnapshotStore:
    """The snapshots under `root` (default ``~/.local/state/driftwatch``)."""

    root: str | os.PathLike | None = None
    on_problem: Callable[[str], None] | None = None
    problems: list[str] = field(default_factory=list, init=False)  # files skipped or kept, one line each

    def __post_init__(self):
        self.root = Path(os.path.expanduser(os.fspath(self.root if self.root is not None else DEFAULT_STORE)))

    # ------------------------------------------------------------------ saving

    def folder(self, host: str | None, unit: str | None) -> Path:
        return self.root / safe_component(host, "local") / safe_component(unit, "unit")

    def save(self, snapshot: Snapshot) -> Path:
        """Save `snapshot` as a new file (never overwriting one) and refresh latest.yaml; both atomic.

        `collected_at` is stored in the one timestamp format; it names the file.
        """
        try:
            moment = parse_utc(snapshot.collected_at)
        except ValueError as exc:
            raise InputError(f"snapshot of {snapshot.host or 'local'}:{snapshot.unit}: {exc}") from None
        if snapshot.collected_at != format_utc(moment):
            snapshot = replace(snapshot, collected_at=format_utc(moment))
        folder = self.folder(snapshot.host, snapshot.unit)
        text = dump_yaml(snapshot_to_dict(snapshot))
        stamp = file_stamp(moment)
        taken = [r.seq for r in self._scan(folder, stamp[:15]) if r.collected_at == moment]
        for seq in range(max(taken) + 1 if taken else 0, MAX_PER_SECOND):
            path = folder / f"{stamp}-{seq:02d}.yaml"
            try:
                write_new(path, text)
            except InputError:
                if os.path.lexists(path):
                    continue  # saved by someone else in the same second: take the next number
                raise
            break
        else:
            raise InputError(f"{folder}: already {MAX_PER_SECOND} snapshots collected at {format_utc(moment)}")
        write_atomic(folder / LATEST, text)
        return path

    # ------------------------------------------------------------------ listing and reading

    def _problem(self, message: str) -> None:
        if message in self.problems:
            return
        self.problems.append(message)
        if self.on_problem is not None:
            self.on_problem(message)

    @staticmethod
    def _dirs(folder: Path) -> list[Path]:
        try:
            return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise InputError(f"{folder}: cannot read the snapshot store: {exc.strerror or exc}") from None

    def _scan(self, folder: Path, prefix: str = "") -> list[SnapshotRecord]:
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise InputError(f"{folder}: cannot read the snapshot store: {exc.strerror or exc}") from None
        records = []
        for name in names:
            if not name.endswith(".yaml") or name == LATEST or name.startswith(".") or not name.startswith(prefix):
                continue
            record = self._record(folder / name)
            if record is not None:
                records.append(record)
        return records

    def _record(self, path: Path) -> SnapshotRecord | None:
        host, unit = path.parent.parent.name, path.parent.name
        m = _NAME.match(path.name)
        if m:
            try:
                return SnapshotRecord(path, host, unit, parse_file_stamp(m.group("stamp")), int(m.group("seq") or 0))
            except ValueError:
                pass  # digits that are no date (month 13): date it by its content
        try:
            data = read_yaml(path, "snapshot")
            moment = parse_utc(data.get("collected_at") if isinstance(data, dict) else None)
        except (DriftwatchError, ValueError) as exc:
            self._problem(f"{path}: skipped, not a dated driftwatch snapshot ({exc})")
            return None
        return SnapshotRecord(path, host, unit, moment)

    def groups(self) -> list[tuple[str, str]]:
        """(host, unit) folder names that hold snapshots."""
        return [(h.name, u.name) for h in self._dirs(self.root) for u in self._dirs(h)]

    def records(self, host: str | None = None, unit: str | None = None) -> list[SnapshotRecord]:
        """Snapshot files, oldest first (by `collected_at`, then sequence); filter by host and/or unit
        (names as recorded in snapshots; None = all)."""
        hosts = [self.root / safe_component(host)] if host is not None else self._dirs(self.root)
        records = []
        for h in hosts:
            units = [h / safe_component(unit, "unit")] if unit is not None else self._dirs(h)
            for u in units:
                records.extend(self._scan(u))
        return sorted(records, key=lambda r: (r.host, r.unit) + r.sort_key)

    def _group(self, host: str | None, unit: str | None) -> list[SnapshotRecord]:
        """The records of one host/unit; None names them as `save` does ("local", "unit")."""
        return self.records(safe_component(host, "local"), safe_component(unit, "unit"))

    def latest(self, host: str | None, unit: str | None) -> SnapshotRecord | None:
        """The newest snapshot of a host/unit (by `collected_at`), or None."""
        found = self._group(host, unit)
        return found[-1] if found else None

    def read(self, record: SnapshotRecord | str | os.PathLike, engine_version: str | None = None) -> Snapshot:
        return read_snapshot_file(record.path if isinstance(record, SnapshotRecord) else record, engine_version)

    def load(self, host: str | None, unit: str | None, since: _dt.datetime | None = None,
             engine_version: str | None = None) -> list[StoredSnapshot]:
        """The readable snapshots of one host/unit, oldest first (collected at or after `since`).
        Unreadable files are skipped with a problem naming them."""
        out = []
        for record in self._group(host, unit):
            if since is not None and record.collected_at < since:
                continue
            try:
                out.append(StoredSnapshot(record, record.read(engine_version)))
            except DriftwatchError as exc:
                self._problem(f"{record.path}: skipped: {exc}")
        return out

    # ------------------------------------------------------------------ history

    def timeline(self, host: str | None, unit: str | None, since: _dt.datetime | None = None,
                 engine_version: str | None = None) -> list[tuple[StoredSnapshot, StoredSnapshot]]:
        """Consecutive (older, newer) pairs of readable snapshots, oldest pair first. With `since`,
        only pairs whose newer snapshot was collected at or after it (the older one may be earlier:
        a change seen since then is between the two)."""
        loaded = self.load(host, unit, engine_version=engine_version)
        pairs = list(zip(loaded, loaded[1:]))
        if since is not None:
            pairs = [(old, new) for old, new in pairs if new.collected_at >= since]
        return pairs

    def first_seen(self, host: str | None, unit: str | None, predicate: Callable[[Snapshot], bool],
                   engine_version: str | None = None) -> StoredSnapshot | None:
        """The oldest snapshot for which `predicate` holds, or None."""
        for stored in self.load(host, unit, engine_version=engine_version):
            if predicate(stored.snapshot):
                return stored
        return None

    def since(self, host: str | None, unit: str | None, predicate: Callable[[Snapshot], bool],
              engine_version: str | None = None) -> StoredSnapshot | None:
        """The first snapshot of the unbroken run, ending with the newest snapshot, in which
        `predicate` holds; None when it does not hold for the newest."""
        start = None
        for stored in reversed(self.load(host, unit, engine_version=engine_version)):
            if not predicate(stored.snapshot):
                break
            start = stored
        return start

    # ------------------------------------------------------------------ retention

    def prune(self, keep: int | None = None, older_than: _dt.timedelta | None = None,
              protected: Iterable[str | os.PathLike] = (), *, host: str | None = None, unit: str | None = None,
              now: _dt.datetime | None = None, dry_run: bool = False) -> list[SnapshotRecord]:
        """Delete old snapshots; return the records deleted (or that would be, with `dry_run`).

        Per host/unit, a snapshot goes when it is outside the newest `keep` AND collected before
        ``now - older_than`` (each criterion given; at least one is required). Never deleted: the
        newest snapshot of each host/unit, files that cannot be dated, and `protected` ones —
        paths, or ``sha256:`` content hashes (`snapshot_hash`, e.g. of the baselines' snapshots).
        Only whole files are deleted; latest.yaml is never touched.
        """
        if keep is None and older_than is None:
            raise InputError("prune: say what to delete (keep N newest and/or older than a duration)")
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
            raise InputError(f"prune: keep must be a whole number of at least 1 (the newest is always kept), "
                             f"not {keep!r}")
        if older_than is not None and older_than < _dt.timedelta(0):
            raise InputError(f"prune: older_than must not be negative, not {older_than}")
        cutoff = None if older_than is None else (now or _dt.datetime.now(UTC)) - older_than
        hashes, paths = set(), set()
        for item in protected:
            text = os.fspath(item)
            if isinstance(text, str) and text.startswith("sha256:"):
                hashes.add(text)
            else:
                paths.add(os.path.realpath(text))
        groups = {}
        for record in self.records(host, unit):
            groups.setdefault((record.host, record.unit), []).append(record)
        doomed = []
        for records in groups.values():
            records.sort(key=lambda r: r.sort_key)
            for age, record in enumerate(reversed(records[:-1]), start=1):  # age 0 is the newest
                if keep is not None and age < keep:
                    continue
                if cutoff is not None and record.collected_at >= cutoff:
                    continue
                if os.path.realpath(record.path) in paths:
                    continue
                if hashes:
                    digest = self._hash(record)
                    if digest is None or digest in hashes:
                        continue
                doomed.append(record)
        doomed.sort(key=lambda r: (r.host, r.unit) + r.sort_key)
        if dry_run:
            return doomed
        for record in doomed:
            try:
                os.unlink(record.path)
            except FileNotFoundError:
                pass  # pruned by a concurrent run
            except OSError as exc:
                raise InputError(f"{record.path}: cannot delete: {exc.strerror or exc}") from None
        return doomed

    def _hash(self, record: SnapshotRecord) -> str | None:
        try:
            return record.content_hash()
        except DriftwatchError as exc:
            self._problem(f"{record.path}: kept, cannot tell whether a baseline was made from it ({exc})")
            return None


def save_snapshot(snapshot: Snapshot, store: str | os.PathLike | None) -> Path:
    """Save one snapshot in the store at `store` (None: the default); the path written."""
    return SnapshotStore(store or None).save(snapshot)


__all__ = ["DEFAULT_STORE", "LATEST", "SnapshotRecord", "SnapshotStore", "StoredSnapshot", "read_snapshot_file",
           "safe_component", "save_snapshot", "snapshot_hash"]
