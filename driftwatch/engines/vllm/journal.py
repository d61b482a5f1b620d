"""vLLM's figures lines in the journal, and its markers for the collectors (`engines/markers.py`).

vllm/v1/metrics/loggers.py and vllm/v1/spec_decode/metrics.py (0.10 - 0.33; V0's vllm/engine/metrics.py
in 0.8.x): the periodic stats line, and the speculative-decoding line whose mean acceptance length
counts the bonus token, as SGLang's accept len does. 0.8.x's V0 line gives the system efficiency
(emitted / (k + 1) per step) and k instead.
"""
from __future__ import annotations

import re

from ..markers import EngineMarkers

_THROUGHPUT = re.compile(r"Avg generation throughput:\s*([0-9]+(?:\.[0-9]+)?) tokens/s"
                         r"(?:.*?Running:\s*([0-9]+) reqs)?")
_ACCEPT = re.compile(r"Mean acceptance length:\s*([0-9]+(?:\.[0-9]+)?)")
_V0_SPEC = re.compile(r"Speculative metrics:.*?System efficiency:\s*([0-9.]+).*?"
                      r"Number of speculative tokens:\s*([0-9]+)")


def journal_line(line: str) -> dict[str, float]:
    """The decode throughput and accept length one vLLM log line states. An interval with no running
    request (idle) says nothing about speed and gives no throughput."""
    measured: dict[str, float] = {}
    m = _THROUGHPUT.search(line)
    if m and float(m.group(1)) > 0 and (m.group(2) is None or int(m.group(2)) > 0):
        measured["throughput"] = float(m.group(1))
    m = _ACCEPT.search(line)
    if m:
        measured["accept_length"] = float(m.group(1))
    m = _V0_SPEC.search(line)
    if m:
        efficiency, k = float(m.group(1)), int(m.group(2))
        if efficiency == efficiency and k > 0:  # not nan
            measured["accept_length"] = round(efficiency * (k + 1), 3)
    return measured


MARKERS = EngineMarkers(
    process_words=("vllm",),
    modules=("vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main"),
    commands=("vllm serve",),
    dists=("vllm",),
    config_flags=("--config",),
    model_flags=("--model",),
    model_after=("serve",),
    journal_markers=("Avg generation throughput", "Mean acceptance length", "Speculative metrics:"),
    journal_line=journal_line,
)
