"""Read a small text file (unit file, drop-in, environment file) with one clear error per failure."""
from __future__ import annotations

import os
import stat

from driftwatch.errors import InputError

MAX_UNIT_BYTES = 1_000_000


def read_text_file(path: str | os.PathLike, what: str = "unit file", *, allow_empty: bool = False,
                   limit: int = MAX_UNIT_BYTES) -> str:
    """Return the UTF-8 text of ``path``.

    Raises InputError (one line, naming the file) when the file is missing, a directory, not readable,
    larger than ``limit`` bytes (checked before reading; at most ``limit`` + 1 bytes are ever read),
    binary (NUL bytes), not UTF-8 (byte offset given) or empty / whitespace only (unless ``allow_empty``).
    FIFOs such as ``<(systemctl cat x)`` are accepted.
    """
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file ({what} not found)") from None
    except PermissionError:
        raise InputError(f"{name}: permission denied, cannot read {what}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{name}: cannot read {what}: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{name}: is a directory, not a {what}")
    if stat.S_ISREG(st.st_mode) and st.st_size > limit:
        raise InputError(f"{name}: {what} is too large ({st.st_size} bytes; the limit is {limit} bytes)")
    try:
        with open(name, "rb") as fh:
            data = fh.read(limit + 1)
    except PermissionError:
        raise InputError(f"{name}: permission denied, cannot read {what}") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory, not a {what}") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(f"{name}: {what} is too large (more than {limit} bytes)")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(f"{name}: {what} is binary (NUL byte at offset {nul}), expected text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name}: {what} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    if not allow_empty and not text.strip():
        raise InputError(f"{name}: file is empty")
    return text
