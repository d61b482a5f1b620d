"""How live units are read: a value of its own, so what reads targets (run/reading.py) and what reads
containers and manifests (run/manifest.py, run/live_containers.py) share it without importing each other."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..engines.files import NO_FILES, EngineFiles

if TYPE_CHECKING:
    from ..collect.sshoptions import SSHOptions


@dataclass(frozen=True)
class CollectOptions:
    """How live units are read and parsed: SSH settings, the engine configuration files the user
    gave (--engine-config) and the engine release to read them with."""

    ssh: SSHOptions
    files: EngineFiles = NO_FILES
    engine_version: str | None = None
    warn: Callable[[str], None] | None = field(default=None, compare=False)
