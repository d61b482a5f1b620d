"""A directory tree laid out like a host's root, read the way the SSH collector's on-disk fallback
reads a host (systemd's search order, masking, `# /path` text from driftwatch.collect.local): the
oracle the fallback's text is compared with, file for file."""
from __future__ import annotations

import os
import stat

from driftwatch.collect.local import MAX_UNIT_FILE_BYTES, render_unit_text, select_unit_files
from driftwatch.collect.unitname import validate_unit_name
from driftwatch.errors import InputError


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


