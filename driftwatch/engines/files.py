"""Engine configuration files (vLLM's `vllm serve --config FILE`): one immutable value, passed down.

An engine may read options from a file its command line names. The file lives on the server, so
driftwatch gets its text from whoever has it, and hands it down as an `EngineFiles` argument
(`find_launcher`, `Engine.detect`, `build_snapshot`, the use cases), never as module state:

- the user gives it, for units read offline: `driftwatch --engine-config FILE …` (FILE serves every
  `--config` path) or `--engine-config /etc/vllm/qwen.yaml=FILE` (that path only), repeatable; then
  the same items, separated by `:`, in $DRIFTWATCH_ENGINE_CONFIG. The CLI reads them once
  (`given_files`);
- a collector fetches it from the unit's host (`RawUnit.engine_files`, path as the unit writes it ->
  text); `build_snapshot` reads that one unit with `files.with_fetched(…)`, so the units of a fleet
  never see each other's files.

`text(path)` is the text for `--config path`: the exact path the user gave, else the file fetched
from the unit's host, else a file the user gave under the same file name, else the one given for
every path.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import InputError
from ..fileio import read_text_file

ANY_PATH = "*"  # a file given without PATH= serves every --config
MAX_CONFIG_BYTES = 64 << 10  # as collectors read a host's --config FILE (collect/local.py, commands.py)
ENV_VAR = "DRIFTWATCH_ENGINE_CONFIG"


@dataclass(frozen=True)
class EngineFiles:
    """Engine configuration files by the path a unit names them with (or ANY_PATH)."""

    given: Mapping[str, str] = field(default_factory=dict)  # by the user, in the order given
    fetched: Mapping[str, str] = field(default_factory=dict)  # from the host of the unit being read

    def __post_init__(self) -> None:  # read-only copies: a value handed to many units stays as it was
        object.__setattr__(self, "given", MappingProxyType(dict(self.given)))
        object.__setattr__(self, "fetched", MappingProxyType(dict(self.fetched)))

    def with_fetched(self, files: Mapping[str, str] | None) -> EngineFiles:
        """These files plus the ones fetched from one unit's host."""
        return EngineFiles(self.given, files or {})

    def text(self, path: str) -> str | None:
        """The text for `--config path` (None: nobody has it)."""
        if path in self.given:
            return self.given[path]
        if path in self.fetched:
            return self.fetched[path]
        base = os.path.basename(path)
        for known, text in self.given.items():
            if known != ANY_PATH and os.path.basename(known) == base:
                return text
        return self.given.get(ANY_PATH)


NO_FILES = EngineFiles()


def given_files(options: Iterable[str], environment_value: str = "") -> EngineFiles:
    """The files of `--engine-config [PATH=]FILE` options, then of $DRIFTWATCH_ENGINE_CONFIG's value
    (a later item for the same PATH wins). A FILE that cannot be read is bad input, named as given."""
    given: dict[str, str] = {}
    for value in options:
        try:
            given.update([_read_item(value)])
        except OSError as exc:
            raise InputError(f"--engine-config {value}: {exc.strerror or exc}") from None
    for item in filter(None, environment_value.split(os.pathsep)):
        try:
            given.update([_read_item(item)])
        except OSError as exc:
            raise InputError(f"{ENV_VAR}: {item}: {exc.strerror or exc}") from None
    return EngineFiles(given) if given else NO_FILES


def _read_item(value: str) -> tuple[str, str]:
    """One `[PATH=]FILE` -> (PATH or ANY_PATH, FILE's text). Raises OSError for an unreadable FILE."""
    path, sep, local = value.partition("=")
    if not sep:
        path, local = ANY_PATH, value
    try:  # bounded before it is read: --engine-config /dev/zero is one line
        text = read_text_file(local, "engine config file", allow_empty=True, limit=MAX_CONFIG_BYTES)
    except InputError as exc:  # the callers name the option or variable it came from, and the FILE
        message = str(exc)
        raise OSError(message[len(local) + 2:] if message.startswith(local + ": ") else message) from None
    return path or ANY_PATH, text
