"""The engine of a unit that runs no engine driftwatch knows (nginx, a script, `docker rm -f x`).

Its argv has no typed flags: the unit is still read, and compare diffs its unit keys, environment,
launcher and argv (`exec.argv`).
"""
from __future__ import annotations

from .config import EngineConfig
from .files import EngineFiles
from .interface import Engine, EngineEntry


class NoEngine(Engine):
    name = "none"
    label = ""

    def detect(self, words: list[str], files: EngineFiles) -> EngineEntry | None:
        return None

    def releases(self) -> tuple[str, ...]:
        return ()

    def choose_release(self, argvs):
        return "", "no engine detected"

    def read_config(self, engine_argv, engine_version=None, recorded_version=None, choose_from=None,
                    recorded_from=None, environment=None) -> EngineConfig:
        return EngineConfig(engine=self.name, version="", version_reason="no engine detected", flags={})


NONE_ENGINE = NoEngine()
