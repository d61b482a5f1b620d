"""Where a use case's messages go: the use cases print nothing themselves.

The CLI hands each use case a `Voice`: `out` writes a result line to stdout, `say` and `aside` a
message to stderr, prefixed "driftwatch: ". What --quiet silences goes `aside`; what must be heard
whatever the options (errors, and warnings about the run itself) is `say`. A message names its own
kind ("warning: …", "note: …"). A Python caller or a test may collect the lines or leave them unheard.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def unheard(line: str) -> None:
    """A line nobody asked for."""


@dataclass(frozen=True)
class Voice:
    out: Callable[[str], None] = unheard  # a result line (the CLI's stdout)
    say: Callable[[str], None] = unheard  # a message that must be heard (stderr)
    aside: Callable[[str], None] = unheard  # a message a quiet run drops (stderr)

    def warn(self, message: str) -> None:
        """A warning that must be heard (about the run itself, e.g. an unreadable store entry)."""
        self.say(f"warning: {message}")
