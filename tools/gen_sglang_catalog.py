#!/usr/bin/env python3
"""Thin wrapper, kept for old commands and callers: the generator lives in
``tools/catalog/`` (``python -m tools.catalog sglang ...``; see
docs/engines.md).

    python tools/gen_sglang_catalog.py --version 0.5.23
    python tools/gen_sglang_catalog.py --python /work/oracles/sglang-0.5.23/bin/python --out /tmp/x

Importable by path or with ``tools/`` on ``sys.path`` (the tests do both,
also inside an oracle venv): it re-exports the helpers they use.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if "tools.catalog" not in sys.modules:
    sys.path.insert(0, _ROOT)
    try:
        import tools.catalog  # noqa: F401  (the package; submodules come by its __path__)
    finally:
        sys.path.remove(_ROOT)

from tools.catalog import cli as _cli, sglang as _sglang  # noqa: E402
from tools.catalog.argparse_dump import (  # noqa: E402,F401
    SCHEMA,
    choices_list as _choices,
    deprecation as _deprecation,
    first_sentence,
    jsonable as _jsonable,
    render,
)
from tools.catalog.oracle import install_stubs as _install_stubs  # noqa: E402,F401
from tools.catalog.sglang import (  # noqa: E402,F401
    CONVERTERS as KNOWN_CONVERTERS,
    EXTRA_DEPS,
    GENERATED_BY,
    LIGHT_DEPS,
    STUBS,
    extra_deps_for,
    install_plan,
)

_type_info = _sglang.type_info

# What callers use (tests/engines/test_catalogs.py, test_config.py's oracle script).
__all__ = [
    "SCHEMA", "GENERATED_BY", "KNOWN_CONVERTERS", "LIGHT_DEPS", "EXTRA_DEPS", "STUBS",
    "extra_deps_for", "install_plan", "generate", "render", "main", "first_sentence",
    "_choices", "_deprecation", "_install_stubs", "_jsonable", "_type_info",
]


def generate(python: str, version: str | None = None,
             generated_at: str | None = None) -> dict:
    """The SGLang catalog dumped under ``python`` (see cli.generate)."""
    return _cli.generate("sglang", python, version, generated_at)


def main(argv: list[str] | None = None) -> int:
    return _cli.main(argv, engine="sglang")


if __name__ == "__main__":
    sys.exit(main())
