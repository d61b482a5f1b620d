"""Flag-catalog generator: a generic argparse dump plus one module per engine.

* ``argparse_dump``: engine-neutral; an ArgumentParser -> catalog records,
  the ``driftwatch.catalog/v1`` document and its exact text.
* ``oracle``: scratch venvs (CPU torch, ``--no-deps`` wheels, stubs) and
  running a dump inside one.
* ``sglang`` (one module per engine): what to install, how to get the
  engine's parser, and what only that engine knows.
* ``cli`` / ``__main__``: ``python -m tools.catalog ENGINE --version X``.

An engine module provides (see docs/engines.md, "Adding an engine's dump")::

    NAME, DISTRIBUTION, GENERATED_BY, DEFAULT_OUT, STRIP_ENV_PREFIXES
    install_plan(version) -> list[list[str]]   # pip argument lists
    stubs_for(version) -> list[str]
    dump(stubs) -> dict                        # inside the oracle venv

Everything in this package must import with the standard library alone: it
runs inside the oracle venv too.
"""

from __future__ import annotations

import importlib

# engine name -> module. Adding an engine: one module and one line here.
ENGINES = {
    "sglang": "tools.catalog.sglang",
    "vllm": "tools.catalog.vllm",
}


def load_engine(name: str):
    """The engine module registered under ``name``."""
    try:
        return importlib.import_module(ENGINES[name])
    except KeyError:
        raise SystemExit(
            f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})"
        ) from None
