"""The engine plug-in interface: what driftwatch needs to know about one inference engine.

An engine (SGLang, vLLM, …) lives in `engines/<name>/` and is listed once in `engines/registry.py`.
The engine-neutral wrapper layer (`parse/wrappers.py`) peels `env`, `bash -c`, `docker run` … and
asks each engine whether the words it reached are that engine's entry point; the engine then types
its argv into an `EngineConfig`, applies its own start-up rewrites and known start-up crashes, and
maps its native fields to concepts (`driftwatch/concepts.py`), which is all later stages read.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

from ..concepts import Binding
from .config import EngineConfig
from .files import EngineFiles
from .markers import NO_MARKERS, EngineMarkers
from .startup import StartupValues


@dataclass
class EngineEntry:
    """An engine entry point found at the head of an (unwrapped) argv."""

    entry: str  # how it is started: "python -m sglang.launch_server", "sglang serve"
    interpreter: str | None  # the Python that runs it, when the argv names one
    engine_argv: list[str]  # the engine's own arguments, after the entry point


class Engine(ABC):
    """One inference engine. Implementations are stateless singletons (see registry.py)."""

    name: str  # registry key and `engine:` in snapshots: "sglang"
    label: str  # how people write it: "SGLang"

    @abstractmethod
    def detect(self, words: list[str], files: EngineFiles) -> EngineEntry | None:
        """The entry point when `words` (a command, wrappers already peeled) starts this engine.
        `files` hold the configuration files its arguments may name (vLLM's `--config FILE`)."""

    @abstractmethod
    def releases(self) -> tuple[str, ...]:
        """Releases with a shipped flag catalog, oldest first."""

    @abstractmethod
    def read_config(self, engine_argv: list[str], engine_version: str | None = None,
                    recorded_version: str | None = None,
                    choose_from: list[list[str]] | None = None, recorded_from: str | None = None,
                    environment: Mapping[str, str] | None = None) -> EngineConfig:
        """Type the argv under one release: `engine_version` (the user's word), else the release
        recorded with the unit (`recorded_from` says how, e.g. "named by the image tag …"), else the
        newest release under which every argv of `choose_from` (default: this one) parses. Problems
        are Issues, never exceptions. Applies start-up rewrites, which may read the unit's
        `environment` (an engine variable that changes what start-up does)."""

    @abstractmethod
    def choose_release(self, argvs: list[list[str]]) -> tuple[str, str]:
        """The newest release under which every argv parses, and a sentence saying why."""

    def detect_image(self, image: str, args: list[str], files: EngineFiles) -> EngineEntry | None:
        """The entry point when a container image's own entrypoint starts this engine
        (`docker run … vllm/vllm-openai:v0.15.0 ARGS`); `args` are the words after the image."""
        return None

    def carried_files(self, engine_argv: list[str]) -> dict[str, str]:
        """The configuration files a snapshot's engine argv carries inside it ({path: text}), so the
        running process's command line, which names the same paths, is read with the same settings."""
        return {}

    def concept_bindings(self) -> dict[str, Binding]:
        """Native field -> concept. Fields without a concept are compared by key only."""
        return {}

    def release_from_image(self, image: str | None) -> str | None:
        """The release a container image names by its tag (`lmsysorg/sglang:v0.5.5-cu126` -> 0.5.5)."""
        return None

    def primary_flag(self, key: str, version: str) -> str | None:
        """The canonical option string of a native field (`--speculative-num-steps`), for labels."""
        return None

    # How collecting finds the engine on a host: its processes, package and journal figures (markers.py)
    markers: EngineMarkers = NO_MARKERS
    # What the server says about itself (engines/startup.py). Engines without readers report nothing.
    startup_markers: tuple[str, ...] = ()  # fixed strings selecting its start-up lines in the journal
    # loopback HTTP paths `--probe` asks, in order; a tuple is alternatives: the first that answers
    probe_paths: tuple[str | tuple[str, ...], ...] = ()

    def parse_startup_log(self, lines: list[str], config: EngineConfig | None = None) -> StartupValues:
        """The values the server printed at start-up; lines that do not parse are ignored. `config`
        is the unit's typed argv, for what a reader needs of it when a line is missing."""
        return StartupValues()

    def parse_probe(self, responses: dict[str, bytes]) -> StartupValues:
        """The values and figures in the bodies of `probe_paths` (path -> body; failed paths absent)."""
        return StartupValues()
