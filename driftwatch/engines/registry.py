"""The engines driftwatch knows, by name. Adding an engine is one line here.

`find_launcher` joins the engine-neutral wrapper layer with every engine's entry-point detection;
`engine_for` gives the plug-in that reads a launcher's argv (the `none` engine when there is none).
"""
from __future__ import annotations

from ..errors import DriftwatchError
from ..parse.launcher import Launcher
from ..parse.wrappers import NO_ENGINE, peel_wrappers
from .interface import Engine
from .none import NONE_ENGINE
from .sglang.engine import ENGINE as SGLANG
from .vllm.engine import ENGINE as VLLM

ENGINES: dict[str, Engine] = {
    SGLANG.name: SGLANG,
    VLLM.name: VLLM,
}


def register(engine: Engine) -> None:
    """Add an engine (tests and plug-ins); detection tries engines in registration order."""
    ENGINES[engine.name] = engine


def unregister(name: str) -> None:
    ENGINES.pop(name, None)


def get_engine(name: str | None) -> Engine:
    if not name or name == NO_ENGINE:
        return NONE_ENGINE
    try:
        return ENGINES[name]
    except KeyError:
        raise DriftwatchError(f"unknown engine {name!r} (known: {', '.join(ENGINES) or 'none'})") from None


def _detect(words: list[str]):
    for engine in ENGINES.values():
        entry = engine.detect(words)
        if entry is not None:
            return engine.name, entry
    return None


def _detect_image(image: str, args: list[str]):
    for engine in ENGINES.values():
        entry = engine.detect_image(image, args)
        if entry is not None:
            return engine.name, entry
    return None


def find_launcher(argv: list[str], environment: dict[str, str] | None = None) -> Launcher:
    """Peel wrappers off argv until a registered engine's entry point (engine "none" if none)."""
    return peel_wrappers(argv, _detect, environment, _detect_image)
