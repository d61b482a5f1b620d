"""The toy server as a driftwatch engine: everything but detection is ArgparseEngine's.

Entry points: the `toyserve` script and `python -m toy.server`. Registered by the tests with one
line, `registry.register(ToyEngine())`.
"""
from __future__ import annotations

import os

from driftwatch.engines.argparse_engine import ArgparseEngine
from driftwatch.engines.files import EngineFiles
from driftwatch.engines.interface import EngineEntry
from driftwatch.parse.wrappers import python_module


class ToyEngine(ArgparseEngine):
    name = "toy"
    label = "Toy"
    package = __package__  # "toy": catalogs/toy-1.0.json, concepts.yaml, runtime_defaults.yaml

    def detect(self, words: list[str], files: EngineFiles) -> EngineEntry | None:
        found = python_module(words)
        if found is not None:
            interpreter, module, rest = found
            return EngineEntry("python -m toy.server", interpreter, rest) if module == "toy.server" else None
        if words and os.path.basename(words[0].rstrip("/")) == "toyserve":
            return EngineEntry("toyserve", None, words[1:])
        return None
