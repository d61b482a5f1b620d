"""driftwatch's `UnitReader`: the collectors' questions about a command line, answered by the unit
parser and the engine registry.

The collectors may import neither parse/ nor engines/ (collect/reader.py says what they ask); this
reader sits above both, beside `build_snapshot`, which reads a unit the same way. A run builds it
once with the engine configuration files the user gave (`EngineFiles`), so a unit's `--config` is
read alike when the collector matches its process, plans its probe, and builds its snapshot.
"""
from __future__ import annotations

import dataclasses
import os

from ..collect.interface import READ_STATUSES, SOURCE_FILE, SOURCE_SNAPSHOT
from ..collect.local import STDIN
from ..collect.raw import RawUnit
from ..collect.reader import Command, Server
from ..engines.config import EngineConfig
from ..engines.files import NO_FILES, EngineFiles
from ..engines.markers import EngineMarkers
from ..engines.registry import engine_markers, find_launcher, get_engine, startup_markers
from ..errors import DriftwatchError
from ..parse.execstart import resolve_exec_start
from ..parse.unitfile import parse_unit_text
from .snapshot import Snapshot, build_snapshot


class EngineReader:
    """Reads command lines with the parser and the registered engines (see collect.reader.UnitReader)."""

    def __init__(self, files: EngineFiles = NO_FILES):
        self.files = files

    @property
    def startup_markers(self) -> tuple[str, ...]:
        return startup_markers()  # the engines registered now (the tests register a toy one)

    @property
    def engine_markers(self) -> tuple[EngineMarkers, ...]:
        return engine_markers()  # how collecting finds each engine's processes, version and figures

    def command(self, text: str, unit: str, environment_files: dict[str, str] | None = None) -> Command | None:
        try:
            result = resolve_exec_start(parse_unit_text(text, name=unit), environment_files or None)
            argv = list(result.expanded_argv)
            launcher = find_launcher(argv, dict(result.environment), self.files)
        except Exception:  # noqa: BLE001 - a unit we cannot read gives no evidence; build_snapshot says why
            return None
        return Command(argv=argv, engine=launcher.engine, engine_argv=launcher.engine_argv)

    def process(self, argv: list[str]) -> Command | None:
        try:
            launcher = find_launcher(list(argv), files=self.files)
        except Exception:  # noqa: BLE001
            return None
        return Command(argv=list(argv), engine=launcher.engine, engine_argv=launcher.engine_argv)

    def server(self, raw: RawUnit) -> Server | str:
        """The typed `server.port` / `server.host` and the API key of the unit's engine (typed only
        for an engine with probe paths, outside a container)."""
        try:
            unit = parse_unit_text(raw.text or "", name=raw.unit)
            result = resolve_exec_start(unit, raw.environment_inputs())
            launcher = find_launcher(list(result.expanded_argv), dict(result.environment), self.files)
            engine = get_engine(launcher.engine)
            paths = tuple(engine.probe_paths)
            container = bool(launcher.image) and not _host_network(launcher.wrapper_args)
            if not paths or container:
                return Server(paths=paths, container=container)
            config = engine.read_config(launcher.engine_argv, recorded_version=raw.engine_version)
        except Exception as exc:  # noqa: BLE001 - an unreadable unit is reported by the parser, not here
            return f"the unit could not be read ({type(exc).__name__})"
        values, _ = config.concept_values()
        return Server(paths=paths, container=False, port=values.get("server.port"),
                      host=values.get("server.host"), api_key=_api_key(config))


def snapshot_from_raw(raw: RawUnit, engine_version: str | None = None, files: EngineFiles = NO_FILES,
                      origin: str | None = None) -> Snapshot:
    """The Snapshot of what any collector brought back. A stored snapshot (source "snapshot") is
    read by the store, from its file or a database store's listing; a unit file (source "file") is
    named as `--unit-file` names it: its `# /path` headers, else the file's name, its `--unit` kept
    apart from the parse; anything else is built from the host's unit text. A unit that could not
    be read raises DriftwatchError with its status and error."""
    if raw.source == SOURCE_SNAPSHOT:
        from .store import read_snapshot_file
        return read_snapshot_file(raw.paths[0], engine_version)
    if raw.status not in READ_STATUSES:
        raise DriftwatchError(f"{raw.host}: {raw.unit}: {raw.status}" + (f": {raw.error}" if raw.error else ""))
    if raw.source != SOURCE_FILE or not raw.paths:
        return build_snapshot(raw, engine_version=engine_version, origin=origin or f"{raw.host}:{raw.unit}",
                              files=files)
    path = raw.paths[0]
    stdin = path == STDIN
    snap = build_snapshot(dataclasses.replace(raw, unit="", paths=[]), engine_version=engine_version,
                          origin=origin or ("standard input" if stdin else path), files=files)
    if not snap.paths and not stdin:
        snap.paths = [os.path.abspath(path)]
    snap.unit = raw.unit or snap.unit or ("stdin" if stdin else os.path.basename(path))
    snap.host = raw.host or None
    return snap


def _host_network(wrapper_args: list[str]) -> bool:
    words = [w.strip() for w in wrapper_args]
    pairs = zip(words, words[1:] + [""], strict=True)
    return any(w in ("--network=host", "--net=host") or (w in ("--network", "--net") and nxt == "host")
               for w, nxt in pairs)


def _api_key(config: EngineConfig) -> str | None:
    """The key the unit gives its server (vLLM 0.15+ types it as a list: the first); None when there
    is none, or it could not travel in a header (line breaks, not Latin-1)."""
    value = config.flags.get("api_key")
    key = value.value if value is not None else None
    if isinstance(key, list):
        key = next((k for k in key if isinstance(k, str) and k), None)
    if not isinstance(key, str) or not key or "\r" in key or "\n" in key:
        return None
    try:
        key.encode("latin-1")
    except UnicodeEncodeError:
        return None
    return key
