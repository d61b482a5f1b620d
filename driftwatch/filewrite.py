"""Writing files so that nothing a user keeps is ever half-written (the writing half of `fileio`,
which re-exports these names: callers import them from there).

- `write_atomic` / `write_new`: the text goes to a synced temp file in the target's directory (same
  filesystem), then is renamed over the target (`write_atomic`) or hard-linked to it, which fails if
  it exists (`write_new`: never overwrites, no race); the directory is synced after, so the new name
  survives a crash. Only a regular file is replaced: a character device or FIFO (`-o /dev/null`,
  `/dev/stdout`) is written in place and stays what it is; a symbolic link to anything else, a
  directory or a socket is refused (one line).
- `link_atomic`: a second name for a written file, in one rename; `sync_directories`: many entries
  written with ``sync_directory=False``, their directories synced once.

Apart from reading because it changes with what a filesystem guarantees, not with what a format allows.
Errors are `InputError`s whose message is one line naming the file.
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from pathlib import Path

from .errors import InputError


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words for a one-line refusal ("a FIFO", "a socket", ...)."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _sync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - a directory we just wrote in, but unreadable
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on a directory
        pass
    finally:
        os.close(fd)


def sync_directories(directories) -> None:
    """Sync each directory once (after writing many entries with ``sync_directory=False``): the new
    names survive a crash; deepest first, so a new folder's own entry is synced after its content."""
    for directory in sorted({Path(d) for d in directories}, key=lambda d: len(d.parts), reverse=True):
        _sync_directory(directory)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


STALE_TEMP_SECONDS = 5  # an unlocked temp file this old belongs to no save in progress
_TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{1,32}\.tmp$")  # `.NAME.XXXXXXXX.tmp`, as _temp_copy makes them


def _remove_stale_temps(target: Path) -> None:
    """Temp files a killed save left in the target's directory (any target's: a store writes a new
    name each time): removed by the next save. A save in progress holds an exclusive lock on its temp
    file while it writes, so only a file nobody holds, last written over STALE_TEMP_SECONDS ago, goes."""
    import fcntl
    import time
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        if not _TEMP_NAME.match(entry.name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or now - entry.stat().st_mtime <= STALE_TEMP_SECONDS:
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a save is writing it
            os.unlink(entry.path)
        except OSError:
            pass
        finally:
            os.close(fd)


def _temp_copy(target: Path, text: str, mode: int) -> str:
    """Write text to a synced temp file beside target (same filesystem, so rename is atomic)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temps(target)
        import tempfile  # only when saving: questions that only read skip its import (random, shutil)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"{target}: cannot write here: {exc.strerror or exc}") from None
    with _removed_on_failure(tmp, target):
        import fcntl
        fcntl.flock(fd, fcntl.LOCK_EX)  # ours while we write: the next save's clean-up leaves it alone
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    return tmp


@contextlib.contextmanager
def _removed_on_failure(tmp: str, target: Path):
    """Whatever stops the block (an OSError, Ctrl-C) removes the temp file; an OSError is one
    InputError line naming the target."""
    try:
        yield
    except BaseException as exc:
        _unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"{target}: cannot write: {exc.strerror or exc}") from None
        raise


MAX_LINK_HOPS = 40  # as the kernel's own limit on symbolic links followed in one path


def _open_descriptor(path: str) -> int | None:
    """The descriptor N when `path` names one of this process's open files (`/dev/stdout`, `/dev/fd/N`,
    `/proc/self/fd/N`, or a link leading to one), else None: such a name is a stream already open, and
    is written where it stands (after what was written to it), as the shell's `>` left it."""
    try:
        ours = os.path.realpath("/proc/self/fd")
    except OSError:  # pragma: no cover - no /proc
        return None
    current = path
    for _ in range(MAX_LINK_HOPS):
        head, tail = os.path.split(current)
        if tail.isdigit() and os.path.realpath(head or ".") == ours:
            return int(tail)
        try:
            if not stat.S_ISLNK(os.lstat(current).st_mode):
                return None
            current = os.path.join(head, os.readlink(current))
        except OSError:
            return None
    return None


def _write_stream(fd: int, text: str) -> None:
    """All of text's bytes to an open descriptor (a short write on a pipe is continued)."""
    data = memoryview(text.encode("utf-8"))
    while data:
        data = data[os.write(fd, data):]


def _write_in_place(target: Path, text: str) -> bool:
    """True when `target` is a stream written in place: a character device or FIFO (`/dev/null`, a
    named pipe a reader waits on), or a symbolic link to one (`/dev/stdout`). Refused with one line: a
    directory, a socket, a block device, and a symbolic link to anything else (a link is never
    replaced, and never written through into a file). False: a regular file or nothing, replaced or
    created atomically by the caller."""
    name = os.fspath(target)
    try:
        mode = os.lstat(name).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputError(f"{name}: cannot write: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return False
    if stat.S_ISDIR(mode):
        raise InputError(f"{name}: is a directory, not a file to write")
    link = stat.S_ISLNK(mode)
    if link:
        descriptor = _open_descriptor(name)
        if descriptor is not None:
            _flush_standard_streams(descriptor)
            try:
                _write_stream(descriptor, text)
            except OSError as exc:
                raise InputError(f"{name}: cannot write: {exc.strerror or exc}") from None
            return True
        try:
            mode = os.stat(name).st_mode
        except OSError:
            mode = 0
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            raise InputError(f"{name}: is a symbolic link (to {_link_text(name)}); driftwatch does not replace "
                             "a link or write through it into a file: give the file itself")
    elif not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        raise InputError(f"{name}: is {file_kind(mode)}, not a file driftwatch can write")
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | (0 if link else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(name, flags)  # a FIFO: waits for its reader, as the shell's `>` does
    except OSError as exc:
        raise InputError(f"{name}: cannot write: {exc.strerror or exc}") from None
    try:
        opened = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(opened) or stat.S_ISFIFO(opened)):  # swapped for a file since it was looked at
            raise InputError(f"{name}: changed while being opened ({file_kind(opened)}); not written")
        _write_stream(fd, text)
    except OSError as exc:
        raise InputError(f"{name}: cannot write: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return True


def _link_text(name: str) -> str:
    try:
        return os.readlink(name)
    except OSError:  # pragma: no cover - removed since lstat
        return "?"


def _flush_standard_streams(descriptor: int) -> None:
    """What Python buffered for stdout or stderr goes out before bytes written to the same descriptor."""
    import sys
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.fileno() == descriptor:
                stream.flush()
        except (AttributeError, OSError, ValueError):
            continue


def write_atomic(path: str | os.PathLike, text: str, mode: int = 0o644) -> None:
    """Replace path with text in one rename: readers see the old file or the new one, never half.
    Only a regular file (or a new name) is replaced: a character device or FIFO (`-o /dev/null`,
    `-o /dev/stdout`) is written in place and stays what it is; a directory, a symbolic link to a file
    and a socket are refused with one line (`_write_in_place`)."""
    target = Path(path)
    if _write_in_place(target, text):
        return
    tmp = _temp_copy(target, text, mode)
    with _removed_on_failure(tmp, target):
        os.replace(tmp, target)
    _sync_directory(target.parent)


def write_new(path: str | os.PathLike, text: str, force: bool = False, mode: int = 0o644,
              sync_directory: bool = True) -> None:
    """Atomic write that refuses to replace an existing file unless force (no race: link, not rename).
    `sync_directory=False`: the caller syncs the directory itself, once for several entries."""
    target = Path(path)
    if force:
        write_atomic(target, text, mode)
        return
    tmp = _temp_copy(target, text, mode)
    try:
        os.link(tmp, target)  # fails if target exists: never overwrites
    except FileExistsError:
        raise InputError(f"{target}: already exists (use --force to replace it)") from None
    except OSError as exc:
        raise InputError(f"{target}: cannot write: {exc.strerror or exc}") from None
    finally:
        _unlink(tmp)
    if sync_directory:
        _sync_directory(target.parent)


def link_atomic(source: str | os.PathLike, path: str | os.PathLike) -> None:
    """Make `path` another name of the file `source` (a hard link), replacing what `path` was in one
    rename; its content is already synced, so only the directory needs to be, once."""
    source, target = Path(source), Path(path)
    tmp = str(target.parent / f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    _unlink(tmp)
    with _removed_on_failure(tmp, target):
        os.link(source, tmp)
        os.replace(tmp, target)
    _sync_directory(target.parent)
