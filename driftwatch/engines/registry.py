"""The engines driftwatch knows, by name. Adding an engine is one line here.

`find_launcher` joins the engine-neutral wrapper layer with every engine's entry-point detection;
`engine_for` gives the plug-in that reads a launcher's argv (the `none` engine when there is none).
"""
from __future__ import annotations

from ..errors import DriftwatchError
from ..parse.launcher import Launcher
from ..parse.wrappers import NO_ENGINE, peel_wrappers
from .files import NO_FILES, EngineFiles
from .interface import Engine, EngineEntry
from .markers import EngineMarkers
from .none import NONE_ENGINE
from .sglang.engine import ENGINE as SGLANG
from .vllm.engine import ENGINE as VLLM

# Detection, markers and start-up markers try engines in this order.
ENGINES: dict[str, Engine] = {
    SGLANG.name: SGLANG,
    VLLM.name: VLLM,
}


def get_engine(name: str | None) -> Engine:
    if not name or name == NO_ENGINE:
        return NONE_ENGINE
    try:
        return ENGINES[name]
    except KeyError:
        raise DriftwatchError(f"unknown engine {name!r} (known: {', '.join(ENGINES) or 'none'})") from None


_MARKER_CHARS = frozenset(map(chr, range(0x20, 0x7f))) - set("'\"\\$`")


def startup_markers() -> tuple[str, ...]:
    """Every engine's start-up markers, for the collector's one journal pass (any engine's line
    may be read; each engine's parser keeps only its own). Markers go into a shell command: plain
    printable ASCII without quotes, `$` or backslashes, else the engine is refused here."""
    markers: dict[str, None] = {}
    for engine in ENGINES.values():
        for marker in engine.startup_markers:
            if not marker or not set(marker) <= _MARKER_CHARS:
                raise DriftwatchError(f"engine {engine.name}: start-up marker {marker!r} is not plain ASCII text")
            markers[marker] = None
    return tuple(markers)


def engine_markers() -> tuple[EngineMarkers, ...]:
    """The markers of every registered engine, in registration order (the collectors' order: the
    journal's figures are read engine by engine, a later engine's figure in a line wins)."""
    return tuple(engine.markers for engine in ENGINES.values())


def carried_files(engine: str | None, engine_argv: list[str]) -> EngineFiles:
    """The configuration files a snapshot's engine argv carries, as EngineFiles: for reading the
    running process's command line (which names `--config FILE` but not what FILE held) the way the
    unit's was read. Assumes the file has not changed since the process started; a file that did
    change is seen only in the start-up lines."""
    try:
        return EngineFiles(fetched=get_engine(engine).carried_files(list(engine_argv)))
    except DriftwatchError:  # a snapshot of an engine not registered here: it carries nothing we read
        return NO_FILES


def find_launcher(argv: list[str], environment: dict[str, str] | None = None,
                  files: EngineFiles = NO_FILES) -> Launcher:
    """Peel wrappers off argv until a registered engine's entry point (engine "none" if none).
    `files` are the configuration files the engine's arguments may name (vLLM's `--config FILE`)."""

    def detect(words: list[str]) -> tuple[str, EngineEntry] | None:
        for engine in ENGINES.values():
            entry = engine.detect(words, files)
            if entry is not None:
                return engine.name, entry
        return None

    def detect_image(image: str, args: list[str]) -> tuple[str, EngineEntry] | None:
        for engine in ENGINES.values():
            entry = engine.detect_image(image, args, files)
            if entry is not None:
                return engine.name, entry
        return None

    return peel_wrappers(argv, detect, environment, detect_image)
