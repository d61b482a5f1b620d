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


def _temp_copy(target: Path, text: str, mode: int) -> str:
    """Write text to a synced temp file beside target (same filesystem, so rename is atomic)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"{target}: cannot write here: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException as exc:
        _unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"{target}: cannot write: {exc.strerror or exc}") from None
        raise
    return tmp


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_atomic(path: str | os.PathLike, text: str, mode: int = 0o644) -> None:
    """Replace path with text in one rename: readers see the old file or the new one, never half."""
    target = Path(path)
    tmp = _temp_copy(target, text, mode)
    try:
        os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise


def write_new(path: str | os.PathLike, text: str, force: bool = False) -> None:
    """Atomic write that refuses to replace an existing file unless force (no race: link, not rename)."""
    target = Path(path)
    if force:
        write_atomic(target, text)
        return
    tmp = _temp_copy(target, text, 0o644)
    try:
        os.link(tmp, target)  # fails if target exists: never overwrites
    except FileExistsError:
        raise InputError(f"{target}: already exists (use --force to replace it)") from None
    finally:
        _unlink(tmp)


def yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """(1-based line or None, one-line reason) of a YAML error, for messages that name the line."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc).splitlines()[0]
    return (mark.line + 1 if mark is not None else None), " ".join(str(problem).split())


def read_yaml(path: str | os.PathLike, what: str) -> Any:
    """safe_load a YAML file; errors name the file and the line."""
    from .parse.readfile import read_text_file
    p = Path(path)
    text = read_text_file(p, what, allow_empty=True, limit=MAX_YAML_BYTES)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        where = f" line {line}" if line else ""
        raise InputError(f"{p}:{where}: broken YAML in {what}: {problem}") from None
