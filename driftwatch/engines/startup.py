"""What a server says about itself: the settings it computed at start-up (journal) or reports on its
HTTP endpoint (probe), as one engine-neutral record.

Each engine keeps its own readers next to it (`engines/<name>/startup_log.py`, `engines/<name>/probe.py`)
because the line formats and payloads are the engine's; they return a `StartupValues`. A line or a
payload that does not parse is ignored, never guessed: an absent value means "not reported".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StartupValues:
    """Values one server reported. Field names are the engine's native ones (as in its catalog)."""

    fields: dict[str, Any] = field(default_factory=dict)  # native field -> value the server runs with
    concepts: dict[str, Any] = field(default_factory=dict)  # concept -> value with no native field
    figures: dict[str, float] = field(default_factory=dict)  # measured numbers: throughput, accept_length …

    def __bool__(self) -> bool:
        return bool(self.fields or self.concepts or self.figures)

    def merge(self, other: StartupValues) -> StartupValues:
        """`other` wins where both report a value (the later or more direct reading)."""
        return StartupValues({**self.fields, **other.fields}, {**self.concepts, **other.concepts},
                             {**self.figures, **other.figures})


class NotPlain(ValueError):
    """A parsed value a snapshot cannot hold (a set, bytes, a non-finite float, non-string keys)."""


def plain(value: Any) -> Any:
    """`value` as JSON can hold it (tuples become lists); NotPlain for anything else. The engines'
    readers pass every literal they parse through this before it reaches a snapshot."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise NotPlain
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: plain(v) for k, v in value.items()}
    raise NotPlain
