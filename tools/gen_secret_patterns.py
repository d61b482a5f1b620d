"""detect-secrets' token-format plugins -> driftwatch/data/secret_patterns.json.

    python -m tools.gen_secret_patterns            # write the file from the installed detect-secrets
    python -m tools.gen_secret_patterns --check    # fail when the committed file is stale

The secrets policy (driftwatch/redact.py) runs these plugins' own regular expressions on free text.
Importing detect-secrets costs ~130 ms (its plugin package pulls in its settings and logging), paid
by every command that reads a unit; the patterns themselves are data, so they are taken from the
maintained release here, once, and read from a JSON file at run time. A test keeps the file equal to
what the installed detect-secrets says.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

OUT = os.path.join(os.path.dirname(__file__), "..", "driftwatch", "data", "secret_patterns.json")
SKIPPED = {"IPPublicDetector"}  # an address is not a secret here


def patterns() -> dict:
    from importlib.metadata import version

    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    found = []
    for cls in sorted(get_mapping_from_secret_type_to_class().values(), key=lambda c: c.__name__):
        if issubclass(cls, RegexBasedDetector) and cls.__name__ not in SKIPPED:
            found += [{"plugin": cls.__name__, "pattern": r.pattern, "flags": r.flags} for r in cls.denylist]
    return {"derived_from": f"detect-secrets {version('detect-secrets')} (tools/gen_secret_patterns.py)",
            "patterns": found}


def render() -> str:
    return json.dumps(patterns(), indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gen_secret_patterns", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the committed file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        with open(OUT, encoding="utf-8") as fh:
            if fh.read() != text:
                print(f"{OUT} is stale: run python -m tools.gen_secret_patterns", file=sys.stderr)
                return 1
        return 0
    with open(OUT, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
