"""YAML files the user keeps (snapshots, baselines): read with safe_load, written atomically.

Nothing a user saved is ever half-written: we write a temp file in the same directory, fsync it,
then rename it over the target.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError

MAX_YAML_BYTES = 20_000_000


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings as literal blocks (unit text stays reviewable in git)."""


def _str_representer(dumper: yaml.SafeDumper, data: str):
    style = "|" if "\n" in data and not any(c in data for c in "\r\t") else None
    if style and any(line != line.rstrip() for line in data.split("\n")):
        style = None  # trailing spaces cannot round-trip through a literal block
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def write_atomic(path: str | os.PathLike, text: str, mode: int = 0o644) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_new(path: str | os.PathLike, text: str, force: bool = False) -> None:
    """Atomic write that refuses to replace an existing file unless force (no race: link, not rename)."""
    target = Path(path)
    if force:
        write_atomic(target, text)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, target)  # fails if target exists: never overwrites
        except FileExistsError:
            raise InputError(f"{target}: already exists (use --force to replace it)") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def read_yaml(path: str | os.PathLike, what: str) -> Any:
    """safe_load a YAML file; errors name the file and the line."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{p}: is a directory, not a {what}")
        size = p.stat().st_size
        if size > MAX_YAML_BYTES:
            raise InputError(f"{p}: {size} bytes is too large for a {what}")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such {what}") from None
    except PermissionError:
        raise InputError(f"{p}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory, not a {what}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 text (byte {exc.start}); not a {what}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{p}:{where}: broken YAML in {what}: {problem}") from None
