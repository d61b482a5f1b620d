"""SGLang's figures lines in the journal, and its markers for the collectors (`engines/markers.py`).

SGLang's decode log line (`Decode batch. …, accept len: 3.20, …, gen throughput (token/s): 70.1`)
gives the speculative accept length and the decode throughput the server measured.
"""
from __future__ import annotations

import re

from ..markers import EngineMarkers

_ACCEPT = re.compile(r"accept len:\s*([0-9]+(?:\.[0-9]+)?)")
_THROUGHPUT = re.compile(r"gen throughput \(token/s\):\s*([0-9]+(?:\.[0-9]+)?)")


def journal_line(line: str) -> dict[str, float]:
    """The accept length and decode throughput one SGLang log line states."""
    measured: dict[str, float] = {}
    m = _ACCEPT.search(line)
    if m:
        measured["accept_length"] = float(m.group(1))
    m = _THROUGHPUT.search(line)
    if m:
        measured["throughput"] = float(m.group(1))
    return measured


MARKERS = EngineMarkers(
    process_words=("sglang",),
    modules=("sglang.launch_server",),
    commands=("sglang serve",),
    dists=("sglang",),
    model_flags=("--model-path", "--model"),
    journal_markers=("accept len", "gen throughput"),
    journal_line=journal_line,
)
