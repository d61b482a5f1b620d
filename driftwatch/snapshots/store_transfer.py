"""Moving snapshots between the YAML-file format and a database store.

- `import_files(directory, store)`: every snapshot file of a store in the YAML-file layout
  (``HOST/UNIT/STAMP-SS.yaml`` and ``runs.log``, `store.FileStore`) into a database store: each
  file's document as it is (its content and source hashes unchanged, so baselines made from it
  still protect it), its name, and the unchanged runs ``runs.log`` credits it with. A snapshot
  already in the store (same host, unit, time and sequence number) is left alone, so an import
  interrupted or run twice imports each snapshot once. One transaction per host/unit. Each file is
  checked by the store's own loader and redacted on the way in; a symlink out of the directory and
  a file that is not a snapshot are refused, one warning each.
- `export_files(store, directory)`: the inverse, for review or for git: the same layout, one YAML
  file per snapshot and a ``runs.log`` per host/unit; `import_files` reads it back.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DriftwatchError, InputError
from ..fileio import dump_yaml, read_yaml, sync_directories, write_atomic, write_new
from ..timestamps import file_stamp
from .store_files import FileStore, is_file_store
from .store_records import RUNS, StoreBase, snapshot_dict, snapshot_hash
from .store_sql import DatabaseStore, _epoch


@dataclass
class Transfer:
    snapshots: int = 0  # written
    runs: int = 0  # unchanged runs written with them
    present: int = 0  # already there, left alone
    skipped: int = 0  # unreadable, named through on_problem


def _inside(path: Path, root: str) -> bool:
    """True when `path`, its symlinks followed, stays under `root` (a real path)."""
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _clean_document(data: Any, origin: str) -> tuple[dict, str | None]:
    """(the document to store, why it differs from the file's or None): checked by the loader every
    read of the store uses (`snapshot_from_dict`: schema, types, sizes, a refusal as an InputError)
    and redacted as `snapshot` redacts. A file that is already what this release saves is stored as it
    is (its hashes unchanged, so baselines made from it still protect it); otherwise the saved form of
    what it holds (secret values redacted, keys the schema does not know dropped)."""
    from .snapshot import snapshot_from_dict  # lazy: only `store import` checks documents; export needs no engines
    clean = snapshot_dict(snapshot_from_dict(data, origin))
    if snapshot_hash(clean) == snapshot_hash(data):
        return data, None
    dropped = sorted(str(k) for k in data if k not in clean)
    changed = sorted(str(k) for k in clean if k in data and clean[k] != data[k] and k not in ("engine", "issues"))
    parts = ([f"keys the snapshot schema does not know dropped ({', '.join(dropped)})"] if dropped else []) + \
        ([f"redacted or normalised: {', '.join(changed)}"] if changed else [])
    return clean, "; ".join(parts) or "normalised"


def import_files(directory: str | os.PathLike, store: StoreBase,
                 on_problem: Callable[[str], None] | None = None) -> Transfer:
    """Import the YAML-file store in `directory` into the database `store`.

    Each file is read with the store's own loader and redacted on the way in (`_clean_document`);
    a file or folder that is a symlink leading out of `directory`, or a file that is not a snapshot,
    is not imported: one warning (through `on_problem`) with the reason, counted in `skipped`."""
    folder = Path(os.path.expanduser(os.fspath(directory)))
    if not isinstance(store, DatabaseStore):
        raise InputError("store import: the target must be a database store (a directory or postgresql://…)")
    if not folder.is_dir():
        raise InputError(f"{folder}: no such directory (give the old store's directory)")
    if not is_file_store(folder):
        raise InputError(f"{folder}: holds no snapshots in the YAML-file layout (HOST/UNIT/*.yaml)")
    root = os.path.realpath(folder)
    files = FileStore(folder, on_problem=on_problem)
    done = Transfer()
    for host, unit in files.groups():
        place = files.folder(host, unit)
        outside = next((p for p in (place.parent, place) if not _inside(p, root)), None)
        if outside is not None:
            files._problem(f"{outside}: not imported: a symlink out of {folder} (to {os.path.realpath(outside)})")
            done.skipped += 1
            continue
        records = sorted(files.records(host, unit), key=lambda r: r.sort_key)
        if not records:
            continue
        if (place / RUNS).exists() and not _inside(place / RUNS, root):
            files._problem(f"{place / RUNS}: not read: a symlink out of {folder} (its unchanged runs not imported)")
            owned = {}
        else:
            owned = files._attribute(records)
        batch = []
        for record in records:
            try:
                if not _inside(record.path, root):
                    raise InputError(f"{record.path}: a symlink out of {folder} (to {os.path.realpath(record.path)})")
                data, why = _clean_document(read_yaml(record.path, "snapshot"), str(record.path))
            except DriftwatchError as exc:
                reason = str(exc)
                reason = reason[len(f"{record.path}: "):] if reason.startswith(f"{record.path}: ") else reason
                files._problem(f"{record.path}: not imported: {reason}")
                done.skipped += 1
                continue
            if why:
                files._problem(f"{record.path}: imported as this release saves it: {why}")
            batch.append((record, data, owned.get(record.path, [])))
        wrote = store.import_group(host, unit, batch)
        done.snapshots += wrote[0]
        done.runs += wrote[1]
        done.present += len(batch) - wrote[0]
    return done


def export_files(store: StoreBase, directory: str | os.PathLike, host: str | None = None,
                 unit: str | None = None) -> Transfer:
    """Write the database `store`'s snapshots as YAML files under `directory` (never overwriting one);
    each file's data is synced as it is written, each folder once at the end."""
    if not isinstance(store, DatabaseStore):
        raise InputError("store export: the store is already YAML files")
    folder = Path(os.path.expanduser(os.fspath(directory)))
    done = Transfer()
    logs: dict[Path, list[str]] = {}
    for record, data, runs in store.documents(host, unit):
        target = folder / record.host / record.unit / record.name
        write_new(target, dump_yaml(data), sync_directory=False)
        done.snapshots += 1
        lines = logs.setdefault(target.parent, [])
        if runs:
            lines.append(f"= {record.name}")
            lines += [file_stamp(t) for t in runs]
            done.runs += len(runs)
    unsynced = set()
    for parent, lines in logs.items():
        if lines:
            write_atomic(parent / RUNS, "".join(line + "\n" for line in lines))  # syncs its folder
        else:
            unsynced.add(parent)
    # every folder written in, once (each snapshot file was written without a directory sync): the
    # unit folders without a runs.log, each host folder and the output folder
    sync_directories(unsynced | {p.parent for p in logs} | ({folder} if logs else set()))
    return done


__all__ = ["Transfer", "export_files", "import_files", "_epoch"]
