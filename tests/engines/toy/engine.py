"""The toy server as a driftwatch engine: everything but detection is ArgparseEngine's.

Entry points: the `toyserve` script and `python -m toy.server`. Registered by the tests with one
line, its entry in `registry.ENGINES`.
"""
from __future__ import annotations

import os

from driftwatch.engines.argparse_engine import ArgparseEngine
from driftwatch.engines.files import EngineFiles
from driftwatch.engines.interface import EngineEntry
from driftwatch.engines.markers import EngineMarkers
from driftwatch.parse.wrappers import python_module


def _speed(line: str) -> dict[str, float]:
    """`toy decode speed: 42.5 tok/s` -> its throughput."""
    _, found, rest = line.partition("toy decode speed:")
    try:
        return {"throughput": float(rest.split()[0])} if found else {}
    except (IndexError, ValueError):
        return {}


class ToyEngine(ArgparseEngine):
    name = "toy"
    label = "Toy"
    package = __package__  # "toy": catalogs/toy-1.0.json, concepts.yaml, runtime_defaults.yaml
    # how collecting finds it on a host: its process, its package's version, its figures lines
    markers = EngineMarkers(process_words=("toyserve",), modules=("toy.server",), commands=("toyserve",),
                            dists=("toy",), model_flags=("--model",), journal_markers=("toy decode speed:",),
                            journal_line=_speed)

    def detect(self, words: list[str], files: EngineFiles) -> EngineEntry | None:
        found = python_module(words)
        if found is not None:
            interpreter, module, rest = found
            return EngineEntry("python -m toy.server", interpreter, rest) if module == "toy.server" else None
        if words and os.path.basename(words[0].rstrip("/")) == "toyserve":
            return EngineEntry("toyserve", None, words[1:])
        return None
