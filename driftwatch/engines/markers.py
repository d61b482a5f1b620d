"""What collecting needs to know of an engine without parsing a unit: its markers.

The collect stage names no engine (it may not import engines/, see docs/architecture.md). Each engine
declares here how its processes, its installed package and its journal's figures lines look; the
registry lists them (`registry.engine_markers`) and the caller hands them to the collectors through
its `UnitReader` (`snapshots/reader.EngineReader`), which is how the remote script greps for an
engine's processes and reads its version, and how the journal's lines are turned into figures.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import DriftwatchError

# One journal line -> the figures it states ({"throughput": 70.1, "accept_length": 3.2}); {} if none.
JournalParser = Callable[[str], dict[str, float]]

# Words that reach a remote shell: plain names only (no quoting, globbing or regex meaning).
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_WORD = re.compile(r"^[A-Za-z0-9_-]+$")  # a process word becomes a grep pattern `wor[d]`: no regex characters
_FLAG = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")
_FIXED = frozenset(map(chr, range(0x20, 0x7f))) - set("'\"\\$`")  # as the start-up markers (registry.py)


def _no_journal(line: str) -> dict[str, float]:
    return {}


@dataclass(frozen=True)
class EngineMarkers:
    """An engine's markers. Every field is optional: an engine without them is still parsed, it is
    only not found by process, version or journal figures on a host."""

    process_words: tuple[str, ...] = ()  # a word its process's command line holds ("sglang"): the host's grep
    modules: tuple[str, ...] = ()  # `python -m MODULE` entry points ("sglang.launch_server")
    commands: tuple[str, ...] = ()  # console-script command lines, words apart ("sglang serve"); the
    #                                 first word's script names the interpreter in its `#!` line
    dists: tuple[str, ...] = ()  # distributions whose `NAME-*.dist-info/METADATA` Version: is the engine's
    config_flags: tuple[str, ...] = ()  # options naming a config file it reads ("--config"): fetched, bounded
    model_flags: tuple[str, ...] = ()  # options naming the model ("--model-path"): its config.json is read
    model_after: tuple[str, ...] = ()  # words a positional model follows ("serve": `vllm serve MODEL`)
    journal_markers: tuple[str, ...] = ()  # fixed strings selecting its figures lines (`grep -F`)
    journal_line: JournalParser = _no_journal  # one such line -> its figures

    def __post_init__(self) -> None:
        for word in self.process_words:
            if not _WORD.match(word):
                raise DriftwatchError(f"process word {word!r}: letters, digits, '-' and '_' only")
        for name in (*self.modules, *self.dists, *(w for c in self.commands for w in c.split())):
            if not _NAME.match(name):
                raise DriftwatchError(f"engine marker {name!r} is not a plain name")
        for flag in (*self.config_flags, *self.model_flags):
            if not _FLAG.match(flag):
                raise DriftwatchError(f"engine option {flag!r} is not a plain option name")
        for name in self.model_after:
            if not _NAME.match(name):
                raise DriftwatchError(f"engine marker {name!r} is not a plain name")
        if any(not c.split() for c in self.commands):
            raise DriftwatchError("an engine command needs at least one word")
        for marker in self.journal_markers:
            if not marker or not set(marker) <= _FIXED:
                raise DriftwatchError(f"journal marker {marker!r} is not plain ASCII text")

    @property
    def scripts(self) -> tuple[str, ...]:
        """The console scripts that start the engine (the first word of each command)."""
        return tuple(dict.fromkeys(c.split()[0] for c in self.commands))


NO_MARKERS = EngineMarkers()
