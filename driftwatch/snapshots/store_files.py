"""The snapshot store: every snapshot driftwatch saved, per host and unit, in time order.

Layout (``--store``, default ``~/.local/state/driftwatch``)::

    STORE/HOST/UNIT/20261128T030000Z-00.yaml   one file per run (schema driftwatch.snapshot/v1)
    STORE/HOST/UNIT/20261128T030000Z-01.yaml   a second snapshot in the same second
    STORE/HOST/UNIT/latest.yaml                a copy of the last one saved
    STORE/HOST/UNIT/runs.log                   one line per run that found the unit unchanged

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

Identical consecutive snapshots are stored once. `save` compares the new snapshot with the newest
one of its host/unit by `state_hash` (everything collected except the time and the figures measured
in the journal, `runtime.measured`); when they are the same state it writes no file and appends the
run's time (``20261128T030500Z``, 17 bytes) to ``runs.log`` instead. A run line belongs to the
snapshot named by the marker line before it (``= 20261128T030000Z-00.yaml sha256:…``, written when
the log's last marker names another snapshot; the state hash it carries spares the next runs
parsing that snapshot), so a snapshot file stands for the first run that saw a state and ``runs.log``
for every later run that saw it again (`seen`: first, last and number of runs). The measured figures
of those later runs are not kept (they are in the journal). Lines are
appended under the store's lock (``STORE/.lock``, shared with `prune`); a line torn by a crash is
skipped with a problem naming the file. `prune` drops the lines of the snapshots it deletes (and,
with ``older_than``, lines older than the cut-off except the newest of each kept snapshot) by
rewriting ``runs.log`` atomically.

History: `load` gives one host/unit's readable snapshots oldest first (a file that cannot be read
is skipped and named once); `first_seen` / `since` give the first snapshot in which something held
(ever, or in the current unbroken run).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..errors import DriftwatchError, InputError
from ..fileio import dump_yaml_readable, link_atomic, read_yaml, write_atomic, write_new
from ..timestamps import UTC, file_stamp, format_utc, parse_file_stamp, parse_utc
from .store_records import (
    DEFAULT_STORE,
    LATEST,
    MAX_PER_SECOND,
    RUNS,
    BaselineSource,
    SaveResult,
    Seen,
    SnapshotKey,
    SnapshotRecord,
    StoreBase,
    StoredSnapshot,
    check_prune_request,
    component_name,
    safe_component,
    since_window,
    snapshot_dict,
    source_hash,
    stamped,
    state_hash,
)

if TYPE_CHECKING:
    from .snapshot import Snapshot

LOCK = ".lock"
_NAME = re.compile(r"^(?P<stamp>\d{8}T\d{6}(?:Z|[+-]\d{4}))(?:-(?P<seq>\d{1,6}))?\.yaml$")
_RUN_LINE = re.compile(r"^\d{8}T\d{6}Z$")
_MARKER = re.compile(r"^= (\S+\.yaml)(?: (sha256:[0-9a-f]{64}))?$")


def is_file_store(folder: Path) -> bool:
    """True when `folder` holds snapshots in the YAML-file layout (HOST/UNIT/ with a dated
    ``STAMP-SS.yaml``, ``latest.yaml`` or ``runs.log``)."""
    try:
        hosts = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        return False
    for host in hosts:
        try:
            for unit in host.iterdir():
                if unit.is_dir() and any(n in (RUNS, LATEST) or _NAME.match(n) for n in os.listdir(unit)):
                    return True
        except OSError:
            continue
    return False


class _Kept(NamedTuple):
    """What `prune` keeps for the baselines: real paths, and (host, unit, collected_at) keys."""

    paths: set[str]
    keys: set[tuple[str, str, _dt.datetime]]


@dataclass(init=False)
class FileStore(StoreBase):
    """The snapshots under `root` as YAML files (the layout in this module's docstring): today's
    format before the database, kept to import and export stores (``driftwatch store import``)."""

    root: Path  # given as any path (None: the default store), kept expanded
    on_problem: Callable[[str], None] | None
    problems: list[str]  # files skipped or kept, one line each

    def __init__(self, root: str | os.PathLike | None = None,
                 on_problem: Callable[[str], None] | None = None) -> None:
        self.root = Path(os.path.expanduser(os.fspath(root if root is not None else DEFAULT_STORE)))
        self.on_problem = on_problem
        self.problems = []

    # ------------------------------------------------------------------ saving

    def folder(self, host: str | None, unit: str | None) -> Path:
        return self.root / safe_component(host, "local") / safe_component(unit, "unit")

    @contextlib.contextmanager
    def _lock(self, create: bool = True) -> Iterator[None]:
        """The store's lock (``STORE/.lock``, flock): one writer at a time for `save` and `prune`."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            yield
            return
        if not create and not self.root.is_dir():
            yield
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            handle = open(self.root / LOCK, "a")
        except OSError as exc:
            raise InputError(f"{self.root}: cannot use the snapshot store: {exc.strerror or exc}") from None
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def save(self, snapshot: Snapshot, *, dedupe: bool = True) -> Path:
        """Save `snapshot`; the path of the snapshot that holds it (see `save_run`)."""
        return self.save_run(snapshot, dedupe=dedupe).path

    def save_run(self, snapshot: Snapshot, *, dedupe: bool = True) -> SaveResult:
        """Save `snapshot` as a new file (never overwriting one) and refresh latest.yaml; both atomic.

        With `dedupe` (the default), a snapshot in the same state (`state_hash`) as the newest one
        of its host/unit, and not collected before it, writes no file: its time is appended to
        ``runs.log`` and the newest snapshot's path is returned (``written`` False).
        `collected_at` is stored in the one timestamp format; it names the file.
        """
        snapshot, moment = stamped(snapshot)
        folder = self.folder(snapshot.host, snapshot.unit)
        data = snapshot_dict(snapshot)
        with self._lock():
            if dedupe:
                newest = self._newest(folder)
                if newest is not None and moment >= newest.collected_at:
                    name, cached = self._last_marker(folder)
                    # the newest file's state hash, from the log's marker (no YAML to parse) or its content
                    known = cached if name == newest.path.name and cached else self._state_of(newest)
                    if known == state_hash(data):
                        marked = bool(name == newest.path.name and cached)
                        self._append_run(folder, newest, known, moment, marked=marked)
                        return SaveResult(newest.path, False, moment)
            text = dump_yaml_readable(data, f"snapshot of {snapshot.host or 'local'}:{snapshot.unit}")
            path = self._write_new(folder, moment, text)
        return SaveResult(path, True, moment)

    def _write_new(self, folder: Path, moment: _dt.datetime, text: str) -> Path:
        stamp = file_stamp(moment)
        taken = [r.seq for r in self._scan(folder, stamp[:15]) if r.collected_at == moment]
        for seq in range(max(taken) + 1 if taken else 0, MAX_PER_SECOND):
            path = folder / f"{stamp}-{seq:02d}.yaml"
            try:
                write_new(path, text, sync_directory=False)  # synced once, with latest.yaml, below
            except InputError:
                if os.path.lexists(path):
                    continue  # saved by someone else in the same second: take the next number
                raise
            break
        else:
            raise InputError(f"{folder}: already {MAX_PER_SECOND} snapshots collected at {format_utc(moment)}")
        link_atomic(path, folder / LATEST)  # the same file under a second name: one data fsync a snapshot
        return path

    def _newest(self, folder: Path) -> SnapshotRecord | None:
        records = sorted(self._scan(folder), key=lambda r: r.sort_key)
        return records[-1] if records else None

    def _state_of(self, record: SnapshotRecord) -> str | None:
        try:
            return record.state_hash()
        except DriftwatchError:
            return None  # unreadable: the new snapshot gets a file of its own

    def _append_run(self, folder: Path, newest: SnapshotRecord, digest: str, moment: _dt.datetime,
                    marked: bool) -> None:
        """The run's time, after a marker naming the snapshot it saw again (with its state hash,
        so later runs need not parse it) when the log's last marker does not already say so."""
        if not marked:
            self._append_line(folder, f"= {newest.path.name} {digest}")
        self._append_line(folder, file_stamp(moment))

    @staticmethod
    def _last_marker(folder: Path) -> tuple[str | None, str | None]:
        """(snapshot name, state hash) of the last marker in the log's last 4 KiB; (None, None)."""
        try:
            with open(folder / RUNS, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 4096))
                tail = fh.read().decode("utf-8", "replace")
        except OSError:
            return None, None
        lines = tail.splitlines()
        for line in reversed(lines[1:] if len(tail) >= 4096 else lines):
            m = _MARKER.match(line.strip())
            if m:
                return m.group(1), m.group(2)
        return None, None

    def _append_line(self, folder: Path, line: str) -> None:
        """One line, one write, synced: a crash can tear at most this line (skipped when read)."""
        path = folder / RUNS
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise InputError(f"{path}: cannot record the run: {exc.strerror or exc}") from None

    # ------------------------------------------------------------------ runs

    def _read_log(self, folder: Path) -> list[str | _dt.datetime]:
        """``runs.log`` in order: a snapshot's NAME for the marker a new snapshot writes first, an
        instant for an unchanged run. Torn or foreign lines are skipped with a problem."""
        path = folder / RUNS
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            self._problem(f"{path}: skipped, cannot read it: {exc.strerror or exc}")
            return []
        out: list[str | _dt.datetime] = []
        bad = 0
        for line in raw.split(b"\n"):
            text = line.decode("utf-8", "replace").strip()
            if not text:
                continue
            marker = _MARKER.match(text)
            if marker and _NAME.match(marker.group(1)):
                out.append(marker.group(1))
                continue
            try:
                if not _RUN_LINE.match(text):
                    raise ValueError(text)
                out.append(parse_file_stamp(text))
            except ValueError:
                bad += 1
        if bad:
            self._problem(f"{path}: {bad} line{'s' if bad != 1 else ''} skipped, not a run time")
        return out

    def _read_runs(self, folder: Path) -> list[_dt.datetime]:
        return sorted(t for t in self._read_log(folder) if isinstance(t, _dt.datetime))

    def runs(self, host: str | None, unit: str | None) -> list[_dt.datetime]:
        """The times of the unchanged runs recorded for a host/unit (``runs.log``), oldest first."""
        return self._read_runs(self.folder(host, unit))

    def _attribute(self, records: list[SnapshotRecord]) -> dict[Path, list[_dt.datetime]]:
        """Each unchanged run -> the snapshot it saw again: the one whose marker precedes it in the
        log (the log's order is the order of saving, under the lock); for runs after a marker that
        names no existing file, or before any marker (older stores), the newest snapshot collected
        at or before the run."""
        ordered = sorted(records, key=lambda r: r.sort_key)
        out: dict[Path, list[_dt.datetime]] = {r.path: [] for r in ordered}
        if not ordered:
            return out
        by_name = {r.path.name: r for r in ordered}
        current: SnapshotRecord | None = None
        for value in self._read_log(ordered[0].path.parent):
            if isinstance(value, str):  # a marker: the runs after it saw this snapshot
                current = by_name.get(value)
                continue
            owner = current
            if owner is None:
                before = [r for r in ordered if r.collected_at <= value]
                owner = before[-1] if before else None
            if owner is not None:
                out[owner.path].append(value)
        for times in out.values():
            times.sort()
        return out

    def seen(self, host: str | None, unit: str | None) -> dict[Path, Seen]:
        """For each snapshot of a host/unit: the first and last run that saw its state, and how many."""
        records = self._group(host, unit)
        runs = self._attribute(records)
        return {r.path: Seen(r.collected_at, max([r.collected_at] + runs[r.path]), 1 + len(runs[r.path]))
                for r in records}

    # ------------------------------------------------------------------ listing and reading

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

    def groups(self, host: str | None = None) -> list[tuple[str, str]]:
        """(host, unit) names (`component_name` of the folders) that hold snapshots (of `host`, a folder
        name, when given): what `records`, `runs`, ... take back."""
        hosts = self._dirs(self.root) if host is None else [self.root / host]
        return [(component_name(h.name), component_name(u.name)) for h in hosts for u in self._dirs(h)]

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
        return self.records(host or "local", unit or "unit")  # records() makes them store names

    def latest(self, host: str | None, unit: str | None) -> SnapshotRecord | None:
        """The newest snapshot of a host/unit (by `collected_at`), or None."""
        found = self._group(host, unit)
        return found[-1] if found else None

    def load(self, host: str | None, unit: str | None, since: _dt.datetime | None = None,
             engine_version: str | None = None, previous: bool = False) -> list[StoredSnapshot]:
        """The readable snapshots of one host/unit, oldest first (collected at or after `since`;
        with `previous`, also the last one before it). Unreadable files are skipped with a problem."""
        out = []
        records = self._group(host, unit)
        if since is not None and previous:
            records = since_window(records, since)
            since = None
        for record in records:
            if since is not None and record.collected_at < since:
                continue
            try:
                out.append(StoredSnapshot(record, record.read(engine_version)))
            except DriftwatchError as exc:
                self._problem(f"{record.path}: skipped: {exc}")
        return out

    def newest_first(self, host: str | None, unit: str | None,
                     engine_version: str | None = None) -> Iterable[StoredSnapshot]:
        """The readable snapshots of one host/unit, newest first, read one at a time (walk back
        until what you look for stops holding); unreadable files are skipped with a problem."""
        for record in reversed(self._group(host, unit)):
            try:
                yield StoredSnapshot(record, record.read(engine_version))
            except DriftwatchError as exc:
                self._problem(f"{record.path}: skipped: {exc}")

    # ------------------------------------------------------------------ retention

    def prune(self, keep: int | None = None, older_than: _dt.timedelta | None = None,
              protected: Iterable[str | os.PathLike | SnapshotKey | BaselineSource] = (), *, host: str | None = None,
              unit: str | None = None, now: _dt.datetime | None = None,
              dry_run: bool = False) -> list[SnapshotRecord]:
        """Delete old snapshots; return the records deleted (or that would be, with `dry_run`).

        Per host/unit, a snapshot goes when it is outside the newest `keep` AND its state was last
        seen (collected, or seen again by an unchanged run) before ``now - older_than`` (each
        criterion given; at least one is required). Never deleted: the
        newest snapshot of each host/unit, files that cannot be dated, and `protected` ones —
        paths, ``sha256:`` content hashes (`snapshot_hash`), `SnapshotKey`s (host, unit,
        collected_at) or `BaselineSource`s (`baseline_protections`). Only whole files are
        deleted; latest.yaml is never touched; ``runs.log`` loses the lines of deleted snapshots
        (and, with `older_than`, lines before the cut-off but the newest of each kept snapshot),
        rewritten atomically. Holds the store's lock, so a concurrent `save` waits.
        """
        check_prune_request(keep, older_than)
        cutoff = None if older_than is None else (now or _dt.datetime.now(UTC)) - older_than
        hashes: set[str] = set()
        paths: set[str] = set()
        keys: set[tuple[str, str, _dt.datetime]] = set()
        sources: list[BaselineSource] = []
        for item in protected:
            if isinstance(item, BaselineSource):
                sources.append(item)
                continue
            if isinstance(item, SnapshotKey):
                keys.add((safe_component(item.host, "local"), safe_component(item.unit, "unit"),
                          item.collected_at.astimezone(UTC)))
                continue
            text = os.fspath(item)
            if isinstance(text, str) and text.startswith("sha256:"):
                hashes.add(text)
            else:
                paths.add(os.path.realpath(text))
        with self._lock(create=False):
            groups: dict[tuple[str, str], list[SnapshotRecord]] = {}
            for record in self.records(host, unit):
                groups.setdefault((record.host, record.unit), []).append(record)
            if sources:
                kept_by_source = self._baseline_sources(groups, sources)
                paths |= kept_by_source.paths
                keys |= kept_by_source.keys
            doomed: list[SnapshotRecord] = []
            for records in groups.values():
                records.sort(key=lambda r: r.sort_key)
                runs = self._attribute(records) if cutoff is not None else {}
                gone = []
                for age, record in enumerate(reversed(records[:-1]), start=1):  # age 0 is the newest
                    if keep is not None and age < keep:
                        continue
                    if cutoff is not None and max([record.collected_at] + runs.get(record.path, [])) >= cutoff:
                        continue  # its state was seen since the cut-off (by a later unchanged run)
                    if os.path.realpath(record.path) in paths:
                        continue
                    if (record.host, record.unit, record.collected_at) in keys:
                        continue
                    if hashes:
                        digest = self._hash(record)
                        if digest is None or digest in hashes:
                            continue
                    gone.append(record)
                doomed += gone
                if not dry_run:
                    self._delete(gone)
                    self._prune_runs(records, gone, cutoff)
        doomed.sort(key=lambda r: (r.host, r.unit) + r.sort_key)
        return doomed

    def _baseline_sources(self, groups: dict[tuple[str, str], list[SnapshotRecord]],
                          sources: list[BaselineSource]) -> _Kept:
        """The files the baselines were made from: by source hash; by key where no file has it.
        A file whose hash cannot be computed is kept (a problem names it)."""
        digests: dict[str, list[SnapshotRecord]] = {}
        unknown: set[str] = set()
        for records in groups.values():
            for record in records:
                try:
                    data = read_yaml(record.path, "snapshot")
                    if not isinstance(data, dict):
                        raise InputError(f"{record.path}: not a driftwatch snapshot")
                    digests.setdefault(source_hash(data), []).append(record)
                except DriftwatchError as exc:
                    self._problem(f"{record.path}: kept, cannot tell whether a baseline was made from it ({exc})")
                    unknown.add(os.path.realpath(record.path))
        paths = set(unknown)
        keys: set[tuple[str, str, _dt.datetime]] = set()
        for source in sources:
            found = digests.get(source.digest)
            if found:
                paths |= {os.path.realpath(r.path) for r in found}
            elif source.key is not None:
                keys.add((safe_component(source.key.host, "local"), safe_component(source.key.unit, "unit"),
                          source.key.collected_at.astimezone(UTC)))
        return _Kept(paths, keys)

    @staticmethod
    def _delete(records: list[SnapshotRecord]) -> None:
        for record in records:
            try:
                os.unlink(record.path)
            except FileNotFoundError:
                pass  # pruned by a concurrent run
            except OSError as exc:
                raise InputError(f"{record.path}: cannot delete: {exc.strerror or exc}") from None

    def _prune_runs(self, records: list[SnapshotRecord], gone: list[SnapshotRecord],
                    cutoff: _dt.datetime | None) -> None:
        """Rewrite one folder's runs.log without the runs of deleted snapshots (atomically): each
        kept snapshot's marker, then its runs (with a cut-off, the newest of them at least)."""
        if not records:
            return
        folder = records[0].path.parent
        if not (folder / RUNS).exists():
            return
        owned = self._attribute(records)
        dead = {r.path for r in gone}
        lines: list[str] = []
        for record in sorted(records, key=lambda r: r.sort_key):
            if record.path in dead:
                continue
            times = owned.get(record.path, [])
            if cutoff is not None:
                times = [t for t in times[:-1] if t >= cutoff] + times[-1:]  # the newest tells "last seen"
            if times:
                lines.append(f"= {record.path.name}")  # no hash: the next run computes it again
                lines += [file_stamp(t) for t in times]
        write_atomic(folder / RUNS, "".join(line + "\n" for line in lines))

    def _hash(self, record: SnapshotRecord) -> str | None:
        try:
            return record.content_hash()
        except DriftwatchError as exc:
            self._problem(f"{record.path}: kept, cannot tell whether a baseline was made from it ({exc})")
            return None



__all__ = ["LOCK", "FileStore", "is_file_store"]
