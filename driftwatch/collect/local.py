"""Read units on this machine: a single unit file, or a directory tree laid out like a host's root.

Nothing here imports SSH code. The search order and the ``# /path``-headed text are shared with the
SSH collector's on-disk fallback (``commands.py``), so both produce identical text for identical
files.

Search order (the four directories driftwatch reads when ``systemctl cat`` is unavailable):
``/etc/systemd/system``, ``/run/systemd/system``, ``/usr/lib/systemd/system``,
``/lib/systemd/system``. The fragment is the first ``NAME`` found (an instance ``foo@bar.service``
falls back to its template ``foo@.service``). Drop-ins are the ``*.conf`` files of every
``NAME.d/`` directory systemd reads for the unit (the name, its template, its dash prefixes such as
``sglang-.service.d``, then the top-level ``service.d``), merged by file name: a file in a
higher-priority directory masks a same-named file in a lower one, and the survivors are applied
sorted by file name whatever directory they live in.
"""
from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable, Iterable

from driftwatch.collect.interface import SOURCE_DISK, SOURCE_FILE, UNIT_NOT_FOUND, Collector
from driftwatch.collect.unitname import dropin_dir_names, fragment_names, validate_unit_name
from driftwatch.errors import InputError
from driftwatch.fileio import MAX_TEXT_BYTES
from driftwatch.collect.raw import RawUnit
from driftwatch.collect.reader import UnitReader
from driftwatch.timestamps import utc_now

SEARCH_PATH = (  # systemd's system unit path, minus generator/transient/control directories
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)
MAX_UNIT_FILE_BYTES = MAX_TEXT_BYTES  # one limit for a unit, read locally, over SSH or with --unit-file


def candidate_fragments(unit: str, search_path: Iterable[str] = SEARCH_PATH) -> list[str]:
    """Fragment paths in the order systemd tries them (the instance name everywhere, then the template)."""
    return [posixpath.join(d, n) for n in fragment_names(unit) for d in search_path]


def candidate_dropin_dirs(unit: str, search_path: Iterable[str] = SEARCH_PATH) -> list[str]:
    """Drop-in directories in systemd's priority order (highest first)."""
    search_path = list(search_path)
    names, utype = dropin_dir_names(unit)
    dirs = [posixpath.join(d, n + ".d") for d in search_path for n in names]
    dirs += [posixpath.join(d, utype + ".d") for d in search_path]
    return dirs


def select_unit_files(
    unit: str,
    is_file: Callable[[str], bool],
    list_dir: Callable[[str], Iterable[str]],
    search_path: Iterable[str] = SEARCH_PATH,
) -> list[str]:
    """Fragment then drop-ins, as systemd would apply them, from a view of a filesystem.

    ``is_file(path)`` says whether a fragment/drop-in exists there (a symlink to /dev/null counts:
    it masks); ``list_dir(dir)`` gives the entry names of a directory (empty when missing). Returns
    [] when there is no fragment and no drop-in.
    """
    search_path = list(search_path)
    fragment = next((p for p in candidate_fragments(unit, search_path) if is_file(p)), None)
    chosen: dict[str, str] = {}
    for d in candidate_dropin_dirs(unit, search_path):
        for name in list_dir(d):
            if not name.endswith(".conf") or name in chosen:
                continue
            path = posixpath.join(d, name)
            if is_file(path):
                chosen[name] = path
    dropins = [chosen[n] for n in sorted(chosen)]
    return ([fragment] if fragment else []) + dropins


def render_unit_text(files: Iterable[tuple[str, str]]) -> str:
    """``systemctl cat`` layout: each file after a ``# /path`` header, a blank line between files.

    Like systemd's cat_file(), every line is printed with a newline, so a file without a final
    newline still ends with one.
    """
    parts = []
    for i, (path, content) in enumerate(files):
        header = ("\n" if i else "") + f"# {path}\n"
        lines = content.splitlines()
        parts.append(header + "".join(line + "\n" for line in lines))
    return "".join(parts)


def decode_unit_bytes(data: bytes, where: str) -> str:
    if b"\0" in data:
        raise InputError(f"{where}: binary file, not a systemd unit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte {exc.start})") from None


def read_unit_tree(root: str, unit: str) -> tuple[str | None, list[str]]:
    """(text, paths) of ``unit`` under ``root`` (a host's ``/``), paths as seen on that host.

    ``text`` is None when neither a fragment nor a drop-in exists.
    """
    unit = validate_unit_name(unit)

    def real(path: str) -> str:
        return os.path.join(root, path.lstrip("/"))

    def is_file(path: str) -> bool:
        p = real(path)
        return os.path.isfile(p) or _is_char_device(p)

    def list_dir(path: str) -> list[str]:
        try:
            return os.listdir(real(path))
        except OSError:
            return []

    paths = select_unit_files(unit, is_file, list_dir)
    if not paths:
        return None, []
    files = []
    for p in paths:
        files.append((p, _read_small(real(p), p)))
    return render_unit_text(files), paths


def _is_char_device(path: str) -> bool:
    """A symlink to /dev/null (or another character device): systemd's way to mask a file."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def _read_small(path: str, shown: str) -> str:
    if _is_char_device(path):
        return ""  # masked: read as empty, never stream a device
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_UNIT_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_UNIT_FILE_BYTES:
        raise InputError(f"{shown}: larger than {MAX_UNIT_FILE_BYTES} bytes, not a systemd unit")
    return decode_unit_bytes(data, shown)


MAX_ENGINE_FILE_BYTES = 64 << 10  # a vLLM --config file: the limit of an EnvironmentFile= (commands.py)
MAX_ENGINE_FILES = 4


def engine_config_paths(text: str, unit: str, reader: UnitReader) -> list[str]:
    """The vLLM `--config FILE` / `--config=FILE` paths of the unit's ExecStart= (at most 4), as
    `reader` reads the command line; none when it cannot (build_snapshot says why)."""
    command = reader.command(text, unit)
    if command is None:
        return []
    argv = list(command.argv)
    paths: list[str] = []
    for word, after in zip(argv, argv[1:] + [""]):
        path = after if word == "--config" else word[len("--config="):] if word.startswith("--config=") else ""
        if path and path not in paths:
            paths.append(path)
    return paths[:MAX_ENGINE_FILES]


def read_engine_files(root: str, paths: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """({path: text}, {path: why not read}) for `--config` files under `root`: regular files of at
    most MAX_ENGINE_FILE_BYTES only, never truncated, never a device or FIFO."""
    files, problems = {}, {}
    for path in paths:
        if not path.startswith("/"):
            problems[path] = "a relative path: not read"
            continue
        local = os.path.join(root, path.lstrip("/"))
        try:
            st = os.stat(local)
        except FileNotFoundError:
            problems[path] = "no such file on the host"
            continue
        except OSError as exc:
            problems[path] = f"cannot read: {exc.strerror or exc}"
            continue
        if not stat.S_ISREG(st.st_mode):
            problems[path] = "not a regular file: not read"
            continue
        try:
            with open(local, "rb") as fh:
                data = fh.read(MAX_ENGINE_FILE_BYTES + 1)
        except OSError as exc:
            problems[path] = f"cannot read: {exc.strerror or exc}"
            continue
        if len(data) > MAX_ENGINE_FILE_BYTES:
            problems[path] = f"larger than {MAX_ENGINE_FILE_BYTES} bytes: not read"
            continue
        files[path] = data.decode("utf-8", "replace")
    return files, problems


def _unit_name_from_text(text: str) -> str | None:
    """The unit name of ``systemctl cat`` output: the base name of its first ``# /path`` header."""
    for line in text.splitlines():
        if line.startswith("# /"):
            name = posixpath.basename(line[2:].strip())
            try:
                return validate_unit_name(name) if "." in name else None
            except InputError:
                return None
        if line.strip():
            return None
    return None


class LocalCollector(Collector):
    """Units of a directory tree laid out like a host's root (``/`` for this machine). ``reader``
    reads the unit's command line, for the ``--config`` files it names."""

    def __init__(self, root: str = "/", host: str | None = None, *, reader: UnitReader):
        self.root = root
        self.host = host or "localhost"
        self.reader = reader

    def collect(self, unit: str) -> RawUnit:
        unit = validate_unit_name(unit)
        text, paths = read_unit_tree(self.root, unit)
        if text is None:
            return RawUnit(host=self.host, unit=unit, source=SOURCE_DISK, status=UNIT_NOT_FOUND,
                           error=f"{unit}: no unit file under {self.root} in {', '.join(SEARCH_PATH)}",
                           collected_at=utc_now())
        files, problems = read_engine_files(self.root, engine_config_paths(text, unit, self.reader))
        return RawUnit(host=self.host, unit=unit, text=text, source=SOURCE_DISK, paths=paths,
                       engine_files=files, engine_file_problems=problems, collected_at=utc_now())

    @classmethod
    def from_unit_file(cls, path: str, host: str | None = None, unit: str | None = None) -> RawUnit:
        """A unit file (or saved ``systemctl cat`` output) as a RawUnit with source "file".

        The unit name is ``unit`` when given, else the name in the first ``# /path`` header of
        ``systemctl cat`` output, else the file's base name (``.service`` added when it has no
        unit suffix). Raises InputError for a missing, unreadable, binary or oversized file.
        """
        path = os.fspath(path)
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file")
        if os.path.isdir(path):
            raise InputError(f"{path}: is a directory, not a unit file")
        text = _read_small(path, path)
        if unit is None:
            unit = _unit_name_from_text(text)
        if unit is None:
            base = os.path.basename(path)
            try:
                unit = validate_unit_name(base)
            except InputError:
                unit = base
        else:
            unit = validate_unit_name(unit)
        return RawUnit(host=host or "localhost", unit=unit, text=text, source=SOURCE_FILE, paths=[path],
                       collected_at=utc_now())
