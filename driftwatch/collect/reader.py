"""What a collector asks about a unit's command line, of the stage that reads one.

Collectors return data: they never parse a unit or type an engine's flags (collect/ imports neither
parse/ nor engines/). Three of their steps still depend on the command line: which engine process
on a host without systemd is the unit's (`commands.match_process`), where `--probe` asks
(`probe.probe_target`), which `--config` files to read (`local.engine_config_paths`). And collect
names no engine: which processes to look for, whose package version to read, which journal lines
hold figures and what they say, and which start-up lines to keep all come from the engines' markers
(`EngineMarks`, declared by each engine in `engines/markers.py`). The caller hands the collectors a
`UnitReader`; driftwatch's own is `snapshots/reader.py`, built with the engine configuration files
the user gave.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from driftwatch.collect.raw import RawUnit


@dataclass(frozen=True)
class Command:
    """A command line as the reader understood it."""

    argv: list[str]  # the words systemd runs (a unit's ExecStart=, expanded) or a process's argv
    engine: str  # the name of the engine it starts, or "none"
    engine_argv: list[str]  # that engine's own arguments


@dataclass(frozen=True)
class Server:
    """What a unit's typed command line says about its server's HTTP endpoint (`--probe`)."""

    paths: tuple[str | tuple[str, ...], ...]  # the engine's probe paths (a tuple: alternatives; none: no endpoint)
    container: bool  # it runs in a container without `--network host`: its port is not the host's
    port: Any = None  # the typed `server.port` (anything: the probe checks it)
    host: Any = None  # the typed `server.host` it binds to (None: the engine's default)
    api_key: str | None = field(default=None, repr=False)  # sent to the server itself, never shown


class EngineMarks(Protocol):
    """What collecting knows of one engine (its `engines.markers.EngineMarkers`): every name here is
    a plain word, checked by the engine's declaration before it reaches a remote shell."""

    @property
    def process_words(self) -> tuple[str, ...]: ...  # a word its process's command line holds
    @property
    def modules(self) -> tuple[str, ...]: ...  # `python -m MODULE` entry points
    @property
    def commands(self) -> tuple[str, ...]: ...  # console-script command lines, words apart
    @property
    def scripts(self) -> tuple[str, ...]: ...  # their scripts (a `#!` line names the interpreter)
    @property
    def dists(self) -> tuple[str, ...]: ...  # distributions whose dist-info Version: is the engine's
    @property
    def config_flags(self) -> tuple[str, ...]: ...  # options naming a config file the engine reads
    @property
    def model_flags(self) -> tuple[str, ...]: ...  # options naming the model (path or ORG/NAME)
    @property
    def model_after(self) -> tuple[str, ...]: ...  # words a positional model follows
    @property
    def journal_markers(self) -> tuple[str, ...]: ...  # fixed strings selecting its figures lines
    @property
    def journal_line(self) -> Callable[[str], dict[str, float]]: ...  # one such line -> its figures


class UnitReader(Protocol):
    """Reads command lines for the collectors; problems are answers (None, a reason), never raised."""

    @property
    def startup_markers(self) -> tuple[str, ...]: ...  # fixed strings selecting every engine's start-up lines
    @property
    def engine_markers(self) -> tuple[EngineMarks, ...]: ...  # every engine's markers, in the registry's order

    def command(self, text: str, unit: str, environment_files: dict[str, str] | None = None) -> Command | None:
        """The unit's command line (`text` as `systemctl cat` prints it); None when it cannot be read."""

    def process(self, argv: list[str]) -> Command | None:
        """A running process's command line; None when it cannot be read."""

    def server(self, raw: RawUnit) -> Server | str:
        """Where the unit's server listens, from its typed command line, or why that is not known."""
